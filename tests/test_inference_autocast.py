"""
An inference function compiled by hir.compile follows the autocast region its call is made in,
as eager does: bf16 results inside `torch.autocast`, f32 ones outside, whichever came first.
"""

from __future__ import annotations

import pytest
import torch

import hir

BF16 = {"device_type": "cpu", "dtype": torch.bfloat16}


class _Head(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc(self.norm(x)).relu(), dim=-1)


def _scores(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (x @ w).sigmoid() + x[:, :8]


def _same(ours: torch.Tensor, want: torch.Tensor) -> None:
    assert ours.dtype == want.dtype
    torch.testing.assert_close(ours, want, rtol=0, atol=0)


@pytest.mark.parametrize("first_inside", [False, True])
def test_a_module_follows_the_region_of_each_call(first_inside: bool) -> None:
    torch.manual_seed(0)
    model, x = _Head().eval(), torch.randn(4, 16)
    with torch.no_grad():
        with torch.autocast(**BF16, enabled=first_inside):
            compiled = hir.compile(model, (x,))
        for inside in (first_inside, not first_inside, first_inside):
            x = torch.randn(4, 16)
            with torch.autocast(**BF16, enabled=inside):
                _same(compiled(x), model(x))


def test_a_function_follows_the_region_of_each_call() -> None:
    torch.manual_seed(1)
    x, w = torch.randn(4, 16), torch.randn(16, 8)
    compiled = hir.compile(_scores, (x, w))
    for inside in (True, False):
        with torch.autocast(**BF16, enabled=inside):
            _same(compiled(x, w), _scores(x, w))
