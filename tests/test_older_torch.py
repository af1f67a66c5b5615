"""
The decompositions hir.compile uses where an older torch has none (frontend/older_torch.py),
against torch's own kernels on random data.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from hir.frontend.older_torch import adaptive_max_pool2d, max_pool2d_backward


@pytest.mark.parametrize("size", [(1, 1), (2, 3), (4, 6)])
def test_adaptive_max_pooling_and_its_indices(size: tuple[int, int]) -> None:
    x = torch.randn(2, 3, 8, 12)
    values, indices = adaptive_max_pool2d(x, size)
    want_values, want_indices = F.adaptive_max_pool2d(x, size, return_indices=True)
    torch.testing.assert_close(values, want_values)
    torch.testing.assert_close(indices, want_indices)


def test_adaptive_max_pooling_of_uneven_windows_is_left_to_torch() -> None:
    assert adaptive_max_pool2d(torch.randn(1, 1, 7, 5), (3, 2)) is NotImplemented


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
