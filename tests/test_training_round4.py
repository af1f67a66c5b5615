"""
`hir.compile(..., training=True)` with forwards that update their inputs and parameters in place,
as user code does (`x.mul_(self.scale)`, a weight clamped under `torch.no_grad()`): each against an
eager deep copy of the same model with the same optimizer, on seeded random data (f32, CPU).
"""

from __future__ import annotations

import copy

import pytest
import torch
from test_training import randn
from test_training_round2 import assert_same_grads

import hir
from hir.frontend import FrontendError


class ScaledInPlace(torch.nn.Module):
    """Scales its input in place (the caller's tensor), then two heads: one reads the update, one does not."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, 16))
        self.fc = torch.nn.Linear(16, 8)
        self.aux = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x.mul_(self.scale)
        return self.fc(torch.tanh(x)), self.aux(x.detach())


def _step(model: torch.nn.Module, a: torch.Tensor, loss_of: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The loop's step on a fresh leaf `a`: the model updates `x = 2 * a` in place; returns the loss and a's gradient."""
    a = a.clone().requires_grad_()
    x = a * 2
    y, z = model(x)
    if loss_of == "x":  # only the updated input: the heads get no gradient, the scale does
        loss = x.pow(2).sum()
    elif loss_of == "aux":  # the head that does not read the update, and the updated input
        loss = z.pow(2).mean() + x.pow(2).sum()
    else:
        loss = y.pow(2).mean() + x.sum()
    loss.backward()
    return loss.detach(), a.grad


@pytest.mark.parametrize("losses", [["all", "all", "all"], ["x", "aux", "all", "x"]])
def test_an_input_updated_in_place_gives_its_history_to_the_callers_tensor(losses: list[str]) -> None:
    """
    The caller's tensor updated in place by forward takes the update's history, as eager's
    in-place op gives it: a loss that reads it after the call differentiates through the update
    (the first call of a signature, and every call of a function whose results reach different
    inputs, passed a gated alias of it to AOT autograd, which wrote the update's history there:
    the caller's gradient skipped the scale, the scale's gradient was None). The old input saved
    for the scale's gradient is copied before the update overwrites it (the backward failed on its
    version), and the inputs the update reads get their gradient where the loss reads the updated
    input alone.
    """
    torch.manual_seed(0)
    model = ScaledInPlace()
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, (randn(8, 16).requires_grad_(),), training=True)
    sgd, eager_sgd = torch.optim.SGD(model.parameters(), lr=0.05), torch.optim.SGD(eager.parameters(), lr=0.05)
    for step, loss_of in enumerate(losses):
        a = randn(8, 16, seed=step)
        (loss, grad), (want, want_grad) = _step(compiled, a, loss_of), _step(eager, a, loss_of)
        torch.testing.assert_close(loss, want)
        torch.testing.assert_close(grad, want_grad, msg=lambda m, step=step: f"step {step}: the input's gradient: {m}")
        assert_same_grads(model, eager, f"step {step}, loss of {loss_of}")
        sgd.step()
        eager_sgd.step()
        sgd.zero_grad()
        eager_sgd.zero_grad()


def test_a_leaf_updated_in_place_is_refused_as_eager_refuses_it() -> None:
    """An input that is a leaf requiring grad, updated in forward: eager's error (it was updated silently)."""
    model = ScaledInPlace()
    compiled = hir.compile(model, (randn(8, 16),), training=True)
    for call in range(2):
        with pytest.raises(FrontendError, match=r"forward updates `x` in place, a leaf tensor that requires grad"):
            compiled(randn(8, 16, seed=call).requires_grad_())


class ClampedInForward(torch.nn.Module):
    """Clips its weight under `torch.no_grad()` at every call, as a WGAN critic's weight clipping does."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.fc.weight.clamp_(-0.1, 0.1)
        return self.out(torch.relu(self.fc(x)))


def test_a_parameter_clamped_under_no_grad_in_forward_trains_as_eager() -> None:
    """
    A parameter updated in place under `torch.no_grad()` in forward: the first call passed it to
    AOT autograd through the gate (no leaf), and AOT autograd's runtime wrote the update back into
    the leaf itself at the next call (`copy_` on a leaf that requires grad: a RuntimeError). Every
    call passes it as the first one did now; the clamped weight and the gradients are eager's.
    """
    torch.manual_seed(0)
    model = ClampedInForward()
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, (randn(8, 16),), training=True)
    adam, eager_adam = torch.optim.Adam(model.parameters(), lr=0.05), torch.optim.Adam(eager.parameters(), lr=0.05)
    for step in range(3):
        x = randn(8, 16, seed=step)
        out, want = compiled(x), eager(x)
        torch.testing.assert_close(out, want)
        out.pow(2).mean().backward()
        want.pow(2).mean().backward()
        assert_same_grads(model, eager, f"step {step}")
        adam.step()
        eager_adam.step()
        adam.zero_grad()
        eager_adam.zero_grad()
        torch.testing.assert_close(model.fc.weight, eager.fc.weight)
