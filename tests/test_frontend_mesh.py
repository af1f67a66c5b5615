"""
The PyTorch frontend on a mesh: a Megatron-style MLP imports as the all-gather + GEMM and
GEMM + reduce-scatter shapes that stream-lowering pipelines in one loop; the 2-rank gloo job
(tests/frontend_mesh_driver.py) runs the compiled modules and benchmarks/tp_mlp.py against eager
torch on the unsharded inputs; misuse is a located error.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from ranks import run_ranks
from test_distributed import _output

import hir
from hir.frontend import FrontendError

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from tp_mlp import PARAM_LAYOUTS, TPMLP  # noqa: E402

ROWS = "[(stream(2), didx), serial]"


@functools.cache
def _mlp_module() -> str:
    """The TP MLP's imported text (read-only: the tests of its import and lowerings share it)."""
    model = TPMLP(16, 64, torch.float32, "cpu")
    x = torch.randn(32, 16)
    return str(hir.import_torch(model, (x,), [ROWS], [ROWS], mesh=[0, 1], param_layouts=PARAM_LAYOUTS))


def test_tp_mlp_imports_as_ag_gemm_and_gemm_rs() -> None:
    text = _mlp_module()
    mesh = "mesh = [0, 1]"
    # x [M=32, H=16] in 2 chunks of 2 devices: [S, D, M/(S*D), H], rows sharded
    assert f"%x: tensor<2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], {mesh}>>" in text
    # column-parallel W1^T blocks [D, 1, 1, H, 4H/D], row-parallel W2^T blocks [D, 1, 1, 4H/D, H]
    assert (
        f"%p_fc1_weight: tensor<2x1x1x16x32xf32, #fusion.parallel<[didx, serial, serial, serial, serial], {mesh}>>"
        in text
    )
    assert (
        f"%p_fc2_weight: tensor<2x1x1x32x16xf32, #fusion.parallel<[didx, serial, serial, serial, serial], {mesh}>>"
        in text
    )
    columns = f"tensor<2x2x2x8x32xf32, #fusion.parallel<[didx, stream, serial, serial, serial], {mesh}>>"
    assert re.search(rf"%linear = fusion.matmul %x, %p_fc1_weight : .* -> {re.escape(columns)}", text)
    partial = f"tensor<2x2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial, serial], {mesh}>>"
    assert f"%gelu = fusion.gelu %linear approximate = none : {columns} -> {columns}" in text
    assert re.search(rf"%linear_1 = fusion.matmul %gelu, %p_fc2_weight : .* -> {re.escape(partial)}", text)
    rows = f"tensor<2x2x8x16xf32, #fusion.parallel<[stream, didx, serial, serial], {mesh}>>"
    assert f"fusion.sum %linear_1 dims = [0] : {partial} -> {rows}" in text


@pytest.mark.parametrize("backend", ["nccl", "copy-engine"])
def test_tp_mlp_lowers_to_one_pipelined_loop(backend: str) -> None:
    lowered = str(
        hir.run_pipeline(
            hir.parse(_mlp_module()), f"stream-lowering{{backend={backend} policy=contractions-standalone}}"
        )
    )
    # The function body's own loops (4 spaces in): the fork loop, then the main loop, which may
    # hold loops of its own (the copy-engine reduce-scatter's loop over the peers).
    top_loops = [m.start() for m in re.finditer(r"^    hir\.for ", lowered, re.MULTILINE)]
    main_loop = lowered[top_loops[-1] :]
    # chunk i: all-gather, GEMM, gelu (one launch), GEMM, reduction, all in the main loop
    position = 0
    for op in ["hir.allgather", "fusion.matmul", "fusion.gelu", "fusion.matmul"]:
        position = main_loop.index(op, position) + 1
    assert len(top_loops) == 2  # fork loop and main loop: one pipeline
    # NCCL reduce-scatters each chunk; the copy-engine backend may push partials into the peers
    pushed = backend == "copy-engine" and "hir.peer_view" in main_loop
    assert "hir.reduce_scatter" in main_loop[position:] or pushed


def _compile(model: torch.nn.Module, params: dict, in_layout: str | None = ROWS, out_layout: str | None = ROWS) -> None:
    hir.import_torch(model, (torch.randn(32, 16),), [in_layout], [out_layout], mesh=[0, 1], param_layouts=params)


class Scanned(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(self.fc(x), -1)  # not on a mesh yet


class Columns(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 32, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.fc(x))


def test_unsupported_op_on_a_mesh_is_located() -> None:
    with pytest.raises(FrontendError) as err:
        _compile(Scanned(), {"fc.weight": "[didx, serial]"})
    assert re.search(
        r"test_frontend_mesh.py:\d+: error: aten.cumsum.default is not supported on a mesh yet", str(err.value)
    )
    assert str(err.value).endswith("# not on a mesh yet")


def test_column_sharded_output_is_an_error() -> None:
    with pytest.raises(FrontendError, match="column-sharded output of a column-parallel linear"):
        _compile(Columns(), {"fc.weight": "[didx, serial]"})


class MixedForms(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) + x  # this device's columns of every row, plus this device's rows


def test_operands_sharded_differently_is_located() -> None:
    with pytest.raises(FrontendError) as err:
        _compile(MixedForms(), {"fc.weight": "[didx, serial]"})
    assert re.search(
        r"test_frontend_mesh.py:\d+: error: aten.add.Tensor: its operands are sharded differently \(columns, rows\)",
        str(err.value),
    ), str(err.value)


def test_row_parallel_linear_needs_column_input() -> None:
    with pytest.raises(FrontendError, match=r"row-parallel linear .* takes the column-sharded output"):
        _compile(Columns(), {"fc.weight": "[serial, didx]"})


@pytest.mark.parametrize(
    ("in_layout", "message"),
    [
        ("[stream(2), serial]", "write stream chunks of sharded rows as (stream(N), didx)"),
        ("[(stream(3), didx), serial]", "32 rows do not split into 3 chunks of 2 devices"),
        ("[serial, didx]", "activations are [rows, columns] with the rows sharded or replicated"),
    ],
)
def test_bad_mesh_layouts(in_layout: str, message: str) -> None:
    with pytest.raises(FrontendError, match=re.escape(message)):
        _compile(TPMLP(16, 64, torch.float32, "cpu"), PARAM_LAYOUTS, in_layout)


@pytest.mark.distributed
def test_tp_modules_on_two_gloo_ranks() -> None:
    """Compiled on each rank, each on its shard, against eager torch on the unsharded inputs."""
    result = run_ranks([str(REPO / "tests" / "frontend_mesh_driver.py")], timeout=300)
    assert result.returncode == 0, _output(result)
    assert "14 programs and benchmarks/tp_mlp.py match eager torch" in result.stdout


@pytest.mark.parametrize(
    ("logical", "axes"),
    [
        ([(2, 8, 6, 4), (2, 2, 6, 4), (2, 2, 6, 4)], [1, 1, 1]),  # 2 key heads cannot go whole to 4 devices
        ([(2, 8, 6, 4), (2, 4, 6, 4), (2, 4, 6, 4)], [1, 0, 1]),  # key sharded along another axis
        ([(2, 8, 6, 4), (2, 4, 6, 4), (2, 4, 6, 4)], [2, 2, 2]),  # along the sequence
    ],
)
def test_grouped_query_attention_on_a_mesh_needs_whole_groups(logical: list[tuple[int, ...]], axes: list[int]) -> None:
    """The located error of attention with fewer key heads whose cut gives a device part of a group."""
    from torch.fx import Graph
    from xdsl.ir import Block

    from hir.frontend.emitter import Emitter
    from hir.frontend.sharded import Form, MeshMode
    from hir.frontend.sharded_heads import HEADS, Heads

    forms = [Form(HEADS, logical=shape, axis=axis) for shape, axis in zip(logical, axes)]
    e = Emitter(Block())
    e.where = "model.py:7"
    node = Graph().call_function(torch.ops.aten.scaled_dot_product_attention.default)
    with pytest.raises(FrontendError, match=r"model.py:7: error: .*grouped-query attention takes query, key and value"):
        Heads(MeshMode((0, 1, 2, 3)))._check_groups(e, node, forms)
    whole = [Form(HEADS, logical=shape, axis=1) for shape in [(2, 8, 6, 4), (2, 4, 6, 4), (2, 4, 6, 4)]]
    Heads(MeshMode((0, 1, 2, 3)))._check_groups(e, node, whole)  # 4 key heads: one whole group per device


class HeadsMixed(torch.nn.Module):
    """Attention written out whose softmax runs over the heads (axis 1), which the devices share out."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k = torch.nn.Linear(16, 16, bias=False), torch.nn.Linear(16, 16, bias=False)
        self.o = torch.nn.Linear(16, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k = (p(x).view(4, 8, 4, 4).transpose(1, 2) for p in (self.q, self.k))
        att = torch.softmax(q @ k.transpose(-2, -1), dim=self.dim)  # along the heads
        return self.o((att @ k).transpose(1, 2).reshape(32, 16))

    dim = 1


HEADS_PARAMS = {"q.weight": "[didx, serial]", "k.weight": "[didx, serial]", "o.weight": "[serial, didx]"}


def test_attention_written_out_imports_as_batched_matmuls_of_each_devices_heads() -> None:
    """q @ k^T and att @ k on [D, B, nh/D, T, hd]: each device's heads, no collective between them."""
    model = HeadsMixed()
    model.dim = -1
    text = str(hir.import_torch(model, (torch.randn(32, 16),), [ROWS], [ROWS], mesh=[0, 1], param_layouts=HEADS_PARAMS))
    scores = r"tensor<2x4x2x8x8xf32, #fusion.parallel<\[didx, stream\(2\), serial, serial, serial\], mesh = \[0, 1\]>>"
    assert re.search(rf"fusion.matmul %\w+, %\w+ : .* -> {scores}", text), text
    assert re.search(rf"fusion.softmax %\w+ dim = 4 : {scores}", text), text


def test_a_softmax_along_the_sharded_heads_is_located() -> None:
    with pytest.raises(FrontendError) as err:
        _compile(HeadsMixed(), HEADS_PARAMS)
    assert re.search(
        r"test_frontend_mesh.py:\d+: error: aten.softmax.int along axis 1 of heads \[4, 4, 8, 8\], the axis "
        r"the devices share out",
        str(err.value),
    ), str(err.value)
    assert str(err.value).endswith("# along the heads")


def test_partial_sums_added_together_are_reduced_once() -> None:
    """Two row-parallel outputs of the same rows, added: one reduce-scatter of their sum, not one each."""
    from tp_layer_driver import BRANCH_LAYOUTS, H, ParallelBranches

    x = torch.randn(32, H)
    text = str(hir.import_torch(ParallelBranches(), (x,), [ROWS], [ROWS], mesh=[0, 1], param_layouts=BRANCH_LAYOUTS))
    assert len(re.findall(r"fusion.sum %\w+ dims = \[0\]", text)) == 1, text


class HeadsMisuse(torch.nn.Module):
    """Heads used in ways that would mix the devices' heads or forms: each a located error."""

    def __init__(self, case: str) -> None:
        super().__init__()
        self.case = case
        self.q, self.k = torch.nn.Linear(16, 16, bias=False), torch.nn.Linear(16, 16, bias=False)
        self.o = torch.nn.Linear(16, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k = (p(x).view(4, 8, 4, 4).transpose(1, 2) for p in (self.q, self.k))
        if self.case == "slice of the heads":
            q = torch.cat((q[:, :2], q[:, 2:]), dim=1)  # the misuse
        elif self.case == "sum over the heads":
            q = q - q.sum(1, keepdim=True)  # the misuse
        elif self.case == "heads and rows":
            q = q * x.view(4, 8, 4, 4).transpose(1, 2)  # the misuse
        return self.o(F.scaled_dot_product_attention(q, k, k).transpose(1, 2).reshape(32, 16))


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("slice of the heads", r"aten.slice.Tensor along axis 1 of heads \[4, 4, 8, 4\], the axis the devices share"),
        ("sum over the heads", r"aten.sum.dim_IntList along axis 1 of heads \[4, 4, 8, 4\], the axis the devices"),
        ("heads and rows", r"views take the output of a column-parallel linear to heads"),
    ],
)
def test_heads_misuse_is_located(case: str, message: str) -> None:
    with pytest.raises(FrontendError) as err:
        _compile(HeadsMisuse(case), HEADS_PARAMS)
    assert re.search(rf"test_frontend_mesh.py:\d+: error: .*{message}", str(err.value)), str(err.value)
    assert str(err.value).endswith("# the misuse")


@pytest.mark.distributed
def test_ranks_that_call_with_different_signatures_all_get_one_clear_error() -> None:
    """
    Rows or requires_grad that differ between ranks at a first call: a CallError on both, no hang.
    So are values the ranks compare with their signatures: a replicated x drawn per rank (also at a
    later call with HIR_CHECK_REPLICAS=1), and the whole x passed where a call takes the shard.
    """
    driver = str(REPO / "tests" / "rank_agreement_driver.py")
    cases = (
        "rows_differ,grad_on_one_rank,frozen_on_one_rank,"
        "replicas_differ,replicas_differ_every_call,global_tensor,global_tensor_training"
    )
    result = run_ranks([driver, cases], timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{cases.replace(',', ', ')}: every rank raised the same clear error" in result.stdout


@pytest.mark.distributed
def test_a_rank_whose_peers_run_a_cached_signature_raises_after_the_stores_timeout() -> None:
    result = run_ranks([str(REPO / "tests" / "rank_agreement_driver.py"), "later_divergence"], timeout=300)
    assert "rank 1 raised the timeout's error" in result.stdout, result.stdout + result.stderr
    assert result.returncode != 0  # rank 0's collective fails when rank 1 leaves


class _TwoLinears(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


COLUMN, ROW = "[didx, serial]", "[serial, didx]"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"fc1.bias": "[didx]", "fc2.weight": ROW},
         "'fc1.bias' is sharded (\"[didx]\"), but the linear's weight 'fc1.weight' is replicated"),
        ({"fc1.weight": COLUMN, "fc2.weight": ROW},
         "a column-parallel linear (weight 'fc1.weight', \"[didx, serial]\") takes a column-parallel bias: "
         "give 'fc1.bias' the layout \"[didx]\""),
        ({"fc1.weight": COLUMN, "fc1.bias": "[didx]"},
         "the linear's weight 'fc2.weight' is replicated, and its input is the column-sharded output"),
        ({"fc1.weight": COLUMN, "fc1.bias": "[didx]", "fc2.weight": ROW, "fc2.bias": "[didx]"},
         "adds its bias once, after the sum over the devices: give 'fc2.bias' no layout"),
    ],
)  # fmt: skip
def test_a_bias_laid_out_unlike_its_weight_is_named_with_the_fix(params: dict[str, str], message: str) -> None:
    with pytest.raises(FrontendError) as error:
        hir.import_torch(_TwoLinears(), (torch.randn(8, 16),), [COLUMN], [COLUMN], mesh=[0, 1], param_layouts=params)
    assert message in str(error.value)
    assert str(error.value).startswith(__file__), str(error.value)  # at the module's line
