"""
The decompositions hir.compile uses where an older torch has none (frontend/older_torch.py),
against torch's own kernels on random data.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.frontend.older_torch import adaptive_max_pool2d, max_pool2d_backward


@pytest.mark.parametrize("size", [(1, 1), (2, 3), (4, 6)])
def test_adaptive_max_pooling_and_its_indices(size: tuple[int, int]) -> None:
    x = torch.randn(2, 3, 8, 12)
    values, indices = adaptive_max_pool2d(x, size)
    want_values, want_indices = F.adaptive_max_pool2d(x, size, return_indices=True)
    torch.testing.assert_close(values, want_values)
    torch.testing.assert_close(indices, want_indices)


def test_adaptive_max_pooling_of_uneven_windows_gathers_each_window() -> None:
    x = torch.randn(2, 3, 7, 5)
    values, indices = adaptive_max_pool2d(x, (3, 2))
    want_values, want_indices = F.adaptive_max_pool2d(x, (3, 2), return_indices=True)
    torch.testing.assert_close(values, want_values)
    torch.testing.assert_close(indices, want_indices)


@pytest.mark.parametrize(("kernel", "stride", "padding"), [(2, 2, 0), (3, 2, 1), (3, 1, 1)])
def test_max_pooling_backward_adds_at_the_maxima(kernel: int, stride: int, padding: int) -> None:
    x = torch.randn(2, 3, 9, 9, requires_grad=True)
    out, indices = F.max_pool2d(x, kernel, stride, padding, return_indices=True)
    grad = torch.randn_like(out)
    (want,) = torch.autograd.grad(out, x, grad)  # overlapping windows add at a shared maximum
    got = max_pool2d_backward(grad, x.detach(), [kernel] * 2, [stride] * 2, [padding] * 2, [1, 1], False, indices)
    torch.testing.assert_close(got, want)


def test_a_decomposition_that_declines_falls_back_to_ours() -> None:
    from hir.frontend.older_torch import fallback_to

    def ours(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    x = torch.randn(3)
    torch.testing.assert_close(fallback_to(ours, lambda x: NotImplemented)(x), x + 1)
    torch.testing.assert_close(fallback_to(ours, lambda x: x * 2)(x), x * 2)
    assert fallback_to(ours, None) is ours


def _squeezes_axis_1(original: Any) -> Any:
    """torch 2.11's `one_layer_lstm`: a layer's final states squeezed on axis 1, not 0 (`[1, batch, hidden]`)."""

    def one_layer_lstm(inp: torch.Tensor, hidden: Any, *args: Any, **kwargs: Any) -> Any:
        out, (h, c) = original(inp, hidden, *args, **kwargs)
        return out, (h.unsqueeze(0).squeeze(1), c.unsqueeze(0).squeeze(1))

    return one_layer_lstm


class _Lstm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True, proj_size=4)

    def forward(self, x: torch.Tensor) -> Any:
        out, (h, c) = self.lstm(x)
        return out, h, c


@pytest.mark.parametrize("training", [False, True])
def test_lstm_final_states_keep_their_shape_where_torch_decomposes_them_wrongly(
    monkeypatch: pytest.MonkeyPatch, training: bool
) -> None:
    decompositions = torch._decomp.decompositions
    monkeypatch.setattr(decompositions, "one_layer_lstm", _squeezes_axis_1(decompositions.one_layer_lstm))
    torch.manual_seed(0)
    model, x = _Lstm(), torch.randn(3, 5, 8)
    compiled = hir.compile(copy.deepcopy(model), (x,), training=training)
    with torch.set_grad_enabled(training):
        ours, want = compiled(x), model(x)
    assert [tuple(t.shape) for t in ours] == [(3, 5, 4), (2, 3, 4), (2, 3, 16)]
    for a, b in zip(ours, want, strict=True):
        torch.testing.assert_close(a, b)
