"""
Training loops of a tensor-parallel block on a mesh against eager training of the unsharded
module: replicated parameters that differ between the ranks are a CallError naming them (as for
inference), they stay equal across the ranks after optimizer steps and at a new batch size, and
`clip_grad_norm_` of the compiled step clips by the whole gradient's norm on every rank. The
2-rank cases run in one job (tests/mesh_training_round_driver.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ranks import run_ranks
from test_distributed import _output

DRIVER = Path(__file__).resolve().parent / "mesh_training_round_driver.py"


@pytest.mark.distributed
def test_mesh_training_cases_on_two_gloo_ranks() -> None:
    result = run_ranks([str(DRIVER)], timeout=240)
    assert result.returncode == 0, _output(result)
    assert "mesh training round: 3 cases match eager or raise the same clear error" in result.stdout, _output(result)
