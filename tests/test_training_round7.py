"""
`hir.compile(..., training=True)` in training loops as users write them, each against an eager
deep copy with the same optimizer on seeded random data (f32, CPU): results that are overlapping
windows of an activation (`unfold`, `as_strided`), `as_strided` views inside the step, and a
result saved for the backward that the caller updates in place (autograd's error).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
from test_training import assert_same_grads, randn

import hir


class Windows(torch.nn.Module):
    """A linear, then a view of its output: `view(h)` of the flattened activation."""

    def __init__(self, view: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 6)
        self.view = view

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.view(torch.tanh(self.fc(x)).reshape(-1))


VIEWS = {
    # Overlapping windows as the result: AOT autograd's runtime copied the result's gradient into
    # a tensor of the traced (overlapping) strides, which kept one of each shared element's values.
    "unfold": lambda h: h.unfold(0, 7, 5),
    "as_strided_windows": lambda h: h.as_strided((5, 7), (5, 1)),
    # A view that does not overlap: its backward is `as_strided_scatter` (no entry in the table),
    # and the forward's as_strided failed under AOT autograd's fake mode ("aten.equal.default").
    "as_strided_transposed": lambda h: h.as_strided((6, 5), (1, 6)) * 2,
}


@pytest.mark.parametrize("view", VIEWS)
def test_windows_of_an_activation_train_as_eager(view: str) -> None:
    torch.manual_seed(0)
    model = Windows(VIEWS[view])
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(5, 8),), training=True)
    ours, theirs = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(eager.parameters(), lr=0.1)
    for k in range(3):  # the first call runs AOT autograd's runtime, later ones the frontend's own
        x = randn(5, 8, seed=k)
        out, want = step(x), eager(x)
        torch.testing.assert_close(out, want)
        grad = randn(*want.shape, seed=10 + k)
        out.backward(grad)
        want.backward(grad)
        assert_same_grads(model, eager)
        ours.step()
        theirs.step()
        ours.zero_grad()
        theirs.zero_grad()


class TwoHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.fc(x)
        return h.exp(), torch.tanh(h)


def test_a_saved_result_updated_in_place_is_autograds_error_not_a_wrong_gradient() -> None:
    """
    Both results are saved for the one backward node; updating the unread one in place is
    autograd's error at `backward()` (docs/frontend.md, Limits), where eager, which checks only
    the nodes the loss reaches, runs. A copy (`b = b * 3`) trains as eager.
    """
    torch.manual_seed(0)
    model = TwoHeads()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(5, 8),), training=True)
    a, b = step(randn(5, 8))
    b.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        a.sum().backward()
    x = randn(5, 8, seed=1)
    (a, b), (c, d) = step(x), eager(x)
    b, d = b * 3, d * 3
    (a.sum() + b.sum()).backward()
    (c.sum() + d.sum()).backward()
    assert_same_grads(model, eager)
