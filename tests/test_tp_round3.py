"""
Tensor-parallel code whose ranks do not compute alike: a forward that branches on a per-rank
Python value, replicated parameters built from a per-rank seed (one CallError on every rank, not
a hang or each rank's own answer); and layouts that are not strings. The 2-rank cases run in one
job (tests/tp_round3_driver.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ranks import run_ranks
from test_distributed import _output

import hir

DRIVER = Path(__file__).resolve().parent / "tp_round3_driver.py"


@pytest.mark.distributed
def test_round3_cases_on_two_gloo_ranks() -> None:
    result = run_ranks([str(DRIVER)], timeout=240)
    assert result.returncode == 0, _output(result)
    assert "tp round 3: 7 cases match eager or raise the same clear error" in result.stdout, _output(result)


@pytest.mark.parametrize(
    ("layouts", "message"),
    [
        ({"in_layouts": [2]}, 'input #0 (input): a layout is a string such as "[didx, serial]" (or None), got 2'),
        ({"param_layouts": {"weight": 3}}, "parameter 'weight': a layout is a string such as \"[didx, serial]\""),
        ({"param_layouts": ["weight"]}, "param_layouts maps the module's parameter names to layouts"),
    ],
)
def test_a_layout_that_is_not_a_string_is_named(layouts: dict, message: str) -> None:
    with pytest.raises(hir.FrontendError) as err:
        hir.compile(torch.nn.Linear(16, 16), (torch.randn(8, 16),), mesh=[0], **layouts)
    assert str(err.value).startswith("<layouts>: error: "), str(err.value)
    assert message in str(err.value)
