"""
An inference function compiled by hir.compile follows the autocast region its call is made in,
as eager does: bf16 results inside `torch.autocast`, f32 ones outside, whichever came first.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import hir
from hir.frontend.specialize import CallError

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


def _tp_mlp() -> tuple[torch.nn.Module, dict[str, str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from tp_mlp import PARAM_LAYOUTS, TPMLP

    torch.manual_seed(2)
    return TPMLP(16, 32, torch.float32, "cpu").eval(), PARAM_LAYOUTS


def test_a_tp_layer_on_a_mesh_follows_the_region_of_each_call() -> None:
    model, params = _tp_mlp()
    x, rows = torch.randn(8, 16), "[didx, serial]"
    compiled = hir.compile(model, (x,), [rows], [rows], mesh=[0], param_layouts=params)
    with torch.no_grad():
        for inside in (False, True, False):
            with torch.autocast(**BF16, enabled=inside):
                _same(compiled(x), model(x))


def test_training_on_a_mesh_inside_autocast_is_an_error_not_f32_results() -> None:
    model, params = _tp_mlp()
    x, rows = torch.randn(8, 16), "[didx, serial]"
    step = hir.compile(model.train(), (x,), [rows], [rows], mesh=[0], param_layouts=params, training=True)
    torch.testing.assert_close(step(x), model(x))
    with torch.autocast(**BF16), pytest.raises(CallError, match=r"training on a mesh does not follow torch\.autocast"):
        step(x)
