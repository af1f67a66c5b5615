"""
Tensor-parallel model code as users write it, on 2 gloo ranks in one job
(tests/tp_round6_driver.py): training steps of weight-shared and tied tensor-parallel layers,
attention with the padding masks HF passes, GPT-2's fused projections,
a soft mixture of tensor-parallel experts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ranks import run_ranks
from test_distributed import _output

DRIVER = Path(__file__).resolve().parent / "tp_round6_driver.py"


@pytest.mark.distributed
def test_round6_cases_on_two_gloo_ranks() -> None:
    result = run_ranks([str(DRIVER)], timeout=240)
    assert result.returncode == 0, _output(result)
    assert "tp round 6: 4 cases match eager or raise the same clear error" in result.stdout, _output(result)
