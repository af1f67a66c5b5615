"""
Tensor-parallel code as users write it, beyond the recipe: a sub-mesh of a module with sharded
parameters, statistics of a row-parallel output, a replicated [1, C] shift of the rows, results
sharded along an axis the op reads whole; and the errors of what stays refused.
The 2-rank cases run in one job (tests/tp_round2_driver.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ranks import run_ranks
from test_distributed import _output

import hir

DRIVER = Path(__file__).resolve().parent / "tp_round2_driver.py"


@pytest.mark.distributed
def test_round2_cases_on_two_gloo_ranks() -> None:
    result = run_ranks([str(DRIVER)], timeout=240)
    assert result.returncode == 0, _output(result)
    assert "tp round 2: every case matches" in result.stdout, _output(result)


class Centred(torch.nn.Module):
    def __init__(self, dims: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False)
        self.dims = dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc2(torch.relu(self.fc1(x)))
        return y - y.mean(self.dims, keepdim=True)


LAYOUTS = {"fc1.weight": "[didx, serial]", "fc2.weight": "[serial, didx]"}


def test_statistics_of_a_row_parallel_output_reduce_it_first() -> None:
    """The mean reads the reduce-scattered rows (one sum over the devices), not each device's partial sum."""
    text = str(hir.import_torch(Centred(-1), (torch.randn(8, 8),), "[didx, serial]", "[didx, serial]",
                                mesh=[0, 1], param_layouts=LAYOUTS))  # fmt: skip
    body = text[text.index("fusion.matmul") :]
    reduce_at, mean_at = body.index("fusion.sum"), body.index("fusion.mean")
    assert reduce_at < mean_at, text
    assert body.count("fusion.sum") == 1, text  # the subtraction reuses the reduced rows


def test_a_reduction_over_the_rows_names_the_axes() -> None:
    with pytest.raises(hir.FrontendError, match=r"test_tp_round2.py:\d+: error: aten.mean.dim: on a mesh, reductions "
                       r"take rows .* not axes \[0\] of a rows tensor"):  # fmt: skip
        hir.import_torch(Centred(0), (torch.randn(8, 8),), "[didx, serial]", "[didx, serial]", mesh=[0, 1],
                         param_layouts=LAYOUTS)  # fmt: skip


class Shifted(torch.nn.Module):
    def __init__(self, shift: torch.Tensor) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False)
        self.register_buffer("shift", shift)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x + self.shift)))


def test_a_row_shift_broadcasts_and_a_whole_matrix_is_refused() -> None:
    """A replicated [1, C] buffer reads only columns; an [M, C] one would be added whole to each shard."""
    x = torch.randn(8, 8)
    shifted = Shifted(torch.randn(1, 8))
    compiled = hir.compile(shifted, (x,), "[didx, serial]", "[didx, serial]", mesh=[0], param_layouts=LAYOUTS)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), shifted(x))
    with pytest.raises(
        hir.FrontendError, match=r"aten.add.Tensor: its operands are sharded differently \(rows, whole\)"
    ):
        hir.import_torch(Shifted(torch.randn(8, 8)), (x,), "[didx, serial]", "[didx, serial]", mesh=[0, 1],
                         param_layouts=LAYOUTS)  # fmt: skip
