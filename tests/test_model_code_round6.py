"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU), to the bit:
position grids and frequency ranges made with `torch.arange` of a fractional step and with
`torch.linspace` (Perceiver's Fourier features, a sampling grid, timestep ranges), in f32, bf16,
f16 and integer dtypes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import hir

_FLOATS = [torch.float32, torch.bfloat16, torch.float16]


def _seeded(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _bitwise_as_eager(model: Callable[..., Any], *calls: tuple[torch.Tensor, ...]) -> None:
    """Compiled for the first call's shapes, each call (a new shape too) gives eager's bits."""
    with torch.no_grad():
        compiled = hir.compile(model, calls[0])
        for args in calls:
            torch.testing.assert_close(compiled(*args), model(*args), rtol=0, atol=0)


class _FourierFeatures(torch.nn.Module):
    """Perceiver-style Fourier features of a position grid, in the input's dtype."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n = x.shape[-1]
        grid = torch.linspace(-1.0, 1.0, n, dtype=x.dtype)
        bands = torch.linspace(1.0, 7.3, 12, dtype=x.dtype)
        steps = torch.arange(0.1, 0.1 * (n + 1), 0.1, dtype=x.dtype)[:n]
        offsets = torch.arange(1, 3 * n + 1, 3, dtype=x.dtype)  # whole numbers past what bf16 holds exactly
        return x + grid, grid[:, None] * bands, x * steps, offsets + x


@pytest.mark.parametrize("dtype", _FLOATS)
def test_arange_and_linspace_of_floats_round_as_torchs_cpu_kernels(dtype: torch.dtype) -> None:
    # arange computed `start + i * step` in the dtype (bf16 rounded the index, its product and the
    # sum); its kernel computes in f64 (f32 for the half types) and rounds each vector's first
    # value before adding its lanes' steps. linspace was torch's decomposition (bf16 and f16 in
    # f32); the kernel rounds each step in the dtype, and fuses the multiply-add of an f32 one.
    first, second = (_seeded(3, 100, seed=1, dtype=dtype),), (_seeded(2, 333, seed=2, dtype=dtype),)
    _bitwise_as_eager(_FourierFeatures(), first, second)


def _ranges(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (
        torch.arange(-1, 5, 0.013),  # 462 values: vectors, and a tail computed one by one
        torch.linspace(0.0001, 0.02, 1000),  # a beta schedule
        torch.linspace(-5.5, 5.9, 6, dtype=torch.int64),  # the ends truncated first, then each value
        torch.arange(0, 10, 2.5, dtype=torch.int64),  # a fractional step truncated to 2
        torch.arange(-2.7, 10, 1.5, dtype=torch.int32),
        x.new_zeros(()) + 1 / torch.arange(0, -3, -0.5),  # 1 / +0.0 at index 0, as eager's
    )


def test_ranges_of_f32_and_integers_match_eager_to_the_bit() -> None:
    # An integer arange with a fractional start or step was an import error; linspace of an
    # integer dtype rounded the fractional ends, which torch truncates; f32 ranges were an ulp off.
    _bitwise_as_eager(_ranges, (_seeded(3, seed=1),))
