"""
Tensor-parallel code beyond the earlier rounds: replicated arguments that are not rows (a scalar,
a [C] vector, a [1, C] context), "[didx]" vectors along a column-parallel output's hidden units,
outputs computed whole, token ids into a replicated or vocab-parallel embedding, and the meshes
and layouts that are refused (every error named, at hir.compile, on every rank). The 3-rank cases
run in one job (tests/tp_round4_driver.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from ranks import run_ranks
from test_distributed import _output

import hir

DRIVER = Path(__file__).resolve().parent / "tp_round4_driver.py"
LAYOUTS = {"fc1.weight": "[didx, serial]", "fc2.weight": "[serial, didx]"}


@pytest.mark.distributed
def test_round4_cases_on_three_gloo_ranks() -> None:
    result = run_ranks([str(DRIVER)], timeout=240, processes=3)
    assert result.returncode == 0, _output(result)
    assert "tp round 4: 5 cases match eager or raise the same clear error" in result.stdout, _output(result)


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False)
        self.register_buffer("hidden", torch.randn(16))

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(x)) * self.hidden) * scale


@pytest.mark.parametrize(
    ("mesh", "message"),
    [
        ([0, 0], "mesh [0, 0] must list distinct device ids"),
        ([-1, 0], "mesh [-1, 0] lists -1: device ids are the ranks of the job, integers from 0"),
        (["0"], "mesh ['0'] lists '0'"),
        ([], "mesh is a list of the ranks that hold the shards, such as [0, 1], got an empty list"),
        ("01", "mesh is a list of the ranks that hold the shards, such as [0, 1], got '01'"),
    ],
)
def test_a_malformed_mesh_is_named_at_compile(mesh: object, message: str) -> None:
    """They were a raw LayoutError, xDSL's VerifyException or a TypeError; an empty mesh compiled for one device."""
    with pytest.raises(hir.FrontendError) as err:
        hir.compile(torch.nn.Linear(8, 8), (torch.randn(4, 8),), mesh=mesh)  # type: ignore[arg-type]
    assert str(err.value).startswith(f"<compile>: error: <Linear>: {message}"), str(err.value)


def test_replicated_scalar_and_didx_vector_on_a_mesh_of_one() -> None:
    """A 0-d argument and a "[didx]" buffer of the hidden units (refused before: "activations are [rows, columns]")."""
    block = Scaled()
    x, scale = torch.randn(8, 8), torch.tensor(0.5)
    compiled = hir.compile(block, (x, scale), ["[didx, serial]", None], ["[didx, serial]"], mesh=[0],
                           param_layouts={**LAYOUTS, "hidden": "[didx]"})  # fmt: skip
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, scale), block(x, scale))


def test_a_replicated_vector_along_column_parallel_outputs_names_the_fix() -> None:
    with pytest.raises(hir.FrontendError) as err:
        hir.import_torch(Scaled(), (torch.randn(8, 8), torch.tensor(0.5)), ["[didx, serial]", None],
                         ["[didx, serial]"], mesh=[0, 1], param_layouts=LAYOUTS)  # fmt: skip
    assert "aten.mul.Tensor: its operands are sharded differently (columns, whole)" in str(err.value)
    assert 'give a [C] parameter or buffer the param_layouts entry "[didx]"' in str(err.value)


def test_a_streamed_weight_is_refused() -> None:
    """A stream axis on a weight was read as replicated (a bias's error then named the wrong cause)."""
    with pytest.raises(hir.FrontendError) as err:
        hir.import_torch(Scaled(), (torch.randn(8, 8), torch.tensor(0.5)), ["[didx, serial]", None],
                         ["[didx, serial]"], mesh=[0, 1], param_layouts={"fc1.weight": "[stream(2), serial]"})  # fmt: skip
    assert "<layouts>: error: parameter 'fc1.weight': a parameter is sharded (didx) or whole, not streamed" in str(
        err.value
    )


class Embedded(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(12, 8)
        self.fc1, self.fc2 = torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        return h + self.fc2(F.relu(self.fc1(h)))


@pytest.mark.parametrize("table", ["[didx, serial]", None])
def test_token_ids_into_an_embedding_on_a_mesh_of_one(table: str | None) -> None:
    """1-D token ids were refused on a mesh ("activations are [rows, columns]"); a vocab-parallel table too."""
    block, ids = Embedded(), torch.randint(0, 12, (8,))
    compiled = hir.compile(block, (ids,), ["[didx]"], ["[didx, serial]"], mesh=[0],
                           param_layouts={**LAYOUTS, "emb.weight": table})  # fmt: skip
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids), block(ids))


def test_token_ids_of_two_axes_name_the_flatten() -> None:
    with pytest.raises(hir.FrontendError) as err:
        hir.import_torch(Embedded(), (torch.randint(0, 12, (4, 2)),), ["[didx, serial]"], ["[didx, serial]"],
                         mesh=[0, 1], param_layouts={**LAYOUTS, "emb.weight": "[didx, serial]"})  # fmt: skip
    assert 'token ids are [tokens] (1-D), sharded ("[didx]") or replicated, not rows [4, 2]' in str(err.value)
    assert "flatten them (ids.flatten())" in str(err.value)


class Indexed(torch.nn.Module):
    """Token ids shifted with `%`, and a "[didx]" scale written as [1, F]."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(12, 8)
        self.fc1, self.fc2 = torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False)
        self.register_buffer("hidden", torch.randn(16))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb((ids + 5) % 12)
        return self.fc2(F.relu(self.fc1(h)) * self.hidden[None, :])


def test_integer_arithmetic_of_ids_and_a_didx_vector_as_a_row() -> None:
    """`%` of ids and `hidden[None, :]` were "not supported on a mesh yet"."""
    block, ids = Indexed(), torch.randint(0, 12, (8,))
    layouts = {**LAYOUTS, "emb.weight": "[didx, serial]", "hidden": "[didx]"}
    compiled = hir.compile(block, (ids,), ["[didx]"], ["[didx, serial]"], mesh=[0], param_layouts=layouts)
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids), block(ids))


class FewKeyHeads(torch.nn.Module):
    """Grouped-query attention's projections: 4 query heads, 2 key and value heads of width 4."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.kv = torch.nn.Linear(16, 16, bias=False), torch.nn.Linear(16, 8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(2, 4, 4, 4).transpose(1, 2)
        k = self.kv(x).view(2, 4, 2, 4).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, k, enable_gqa=True).transpose(1, 2).reshape(8, 16)


def test_fewer_key_heads_than_devices_names_the_fix() -> None:
    with pytest.raises(hir.FrontendError) as err:
        hir.import_torch(FewKeyHeads(), (torch.randn(8, 16),), ["[didx, serial]"], ["[didx, serial]"],
                         mesh=[0, 1, 2, 3], param_layouts={"q.weight": "[didx, serial]", "kv.weight": "[didx, serial]"})  # fmt: skip
    assert (
        "2 heads (axis 2 of [2, 4, 2, 4]) do not split over 4 devices: each device holds whole heads; use a mesh of at most 2 devices"
        in str(err.value)
    )
