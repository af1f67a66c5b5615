"""
A Megatron tensor-parallel transformer layer from one nn.Module (benchmarks/tp_layer.py): it
imports as two all-gathers and two reduce-scatters around per-device attention of each rank's
heads, in one stream loop; the 2- and 4-rank gloo jobs (tests/tp_layer_driver.py) run it against
the unsharded module; what a mesh cannot split is a located error.
"""

from __future__ import annotations

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
from tp_layer import PARAM_LAYOUTS, TPLayer  # noqa: E402

ROWS = "[(stream(2), didx), serial]"


def _import(model: torch.nn.Module, columns: int = 32, layout: str = ROWS, params: dict | None = None) -> str:
    x = torch.randn(32, columns)  # M = 32 rows
    return str(hir.import_torch(model, (x,), [layout], [layout], mesh=[0, 1], param_layouts=params or PARAM_LAYOUTS))


def test_tp_layer_imports_as_megatron() -> None:
    text = _import(TPLayer(32, 4, 64, 8, torch.float32, "cpu"))
    # q [M=32, 32] -> heads [D, B=4, heads/D=2, T=8, hd=8]: the devices on axis 0, the 2 stream
    # chunks on the batch (2 sequences each), attention per device and chunk
    heads = "tensor<2x4x2x8x8xf32, #fusion.parallel<[didx, stream(2), serial, serial, serial], mesh = [0, 1]>>"
    assert re.search(
        rf"fusion.sdpa %transpose, %transpose_1, %transpose_2 causal scale = .* -> {re.escape(heads)}", text
    )
    lowered = str(hir.run_pipeline(hir.parse(text), "stream-lowering"))
    # Megatron's communication: one all-gather before q/k/v and one before fc1, one reduce-scatter
    # after o and one after fc2; nothing around attention
    counts = {op: lowered.count(f"{op} ") for op in ("hir.allgather", "hir.reduce_scatter", "hir.allreduce")}
    assert counts == {"hir.allgather": 2, "hir.reduce_scatter": 2, "hir.allreduce": 0}
    assert len(re.findall(r"^    hir\.for ", lowered, re.MULTILINE)) == 2  # fork loop and main loop: one pipeline


class RowsView(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(32, 32, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.view(4, 8, 32).view(32, 32))  # a view of sharded rows


class Untransposed(torch.nn.Module):
    """Attention over [B, T, heads, hd] without the transpose: the heads become L."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.o = torch.nn.Linear(32, 32, bias=False), torch.nn.Linear(32, 32, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(4, 8, 4, 8)
        return self.o(F.scaled_dot_product_attention(q, q, q).reshape(32, 32))


class NormedColumns(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.o = torch.nn.Linear(32, 32, bias=False), torch.nn.Linear(32, 32, bias=False)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.o(self.norm(self.q(x)))  # a norm of column-sharded values


QO = {"q.weight": "[didx, serial]", "o.weight": "[serial, didx]"}


def test_the_imported_module_has_no_stray_uses() -> None:
    """
    Every use of a value in the imported module is an op of the module: an op built and then
    replaced by its typed form (the layouts on a mesh) must not stay a use of its operands, or
    the segmenter sees the value escape its kernel and gives it a buffer of its own (a copy).
    """
    from hir.frontend.importer import import_program

    model = TPLayer(32, 4, 64, 8, torch.float32, "cpu")
    imported = import_program(model, (torch.randn(32, 32),), [ROWS], [ROWS], [0, 1], PARAM_LAYOUTS)
    ops = set(imported.module.walk())
    stray = [
        (op.name, use.operation.name) for op in ops for r in op.results for use in r.uses if use.operation not in ops
    ]
    assert stray == []
    hir.run_pipeline(imported.module, "stream-lowering")
    launch = next(
        op
        for op in imported.module.walk()
        if op.name == "hir.launch" and any(o.name == "fusion.sdpa" for o in op.walk())
    )
    assert len(launch.outs) == 1  # the merged heads only: the views and attention stay inside the kernel


@pytest.mark.parametrize(
    ("model", "columns", "layout", "params", "message"),
    [
        (RowsView(), 32, ROWS, {"fc.weight": "[didx, serial]"}, "views take the output of a column-parallel linear"),
        (
            TPLayer(24, 3, 48, 8, torch.float32, "cpu"),
            24,
            ROWS,
            None,
            "3 heads (axis 2 of [4, 8, 3, 8]) do not split over 2 devices",
        ),
        (
            TPLayer(32, 4, 64, 16, torch.float32, "cpu"),
            32,
            "[(stream(4), didx), serial]",
            None,
            "the batch 2 (axis 0 of [2, 16, 4, 8]) is not a multiple of 4",
        ),
        (
            Untransposed(),
            32,
            ROWS,
            QO,
            "must be sharded along the same batch or head axis (not their sequence or embedding axes)",
        ),
        (NormedColumns(), 32, ROWS, QO, "norms take rows (sharded or replicated)"),
    ],
    ids=["view-of-rows", "heads-not-divisible", "chunks-cut-sequences", "sharded-sequence-axis", "norm-of-columns"],
)
def test_what_a_mesh_cannot_split_is_located(
    model: torch.nn.Module, columns: int, layout: str, params: dict | None, message: str
) -> None:
    with pytest.raises(FrontendError) as err:
        _import(model, columns, layout, params)
    assert re.search(r"(test_tp_layer|tp_layer)\.py:\d+: error: ", str(err.value)), str(err.value)
    assert message in str(err.value)


# What each job runs: indices into the driver's CASES (the TP layer's forms) and its other modules.
# 2 ranks: every case and module, and the benchmark's code. 4 ranks, on a 2-core CI machine: the
# cases that differ most (1 chunk and LayerNorm; 2 chunks, RMSNorm and the copy-engine backend; the
# copy-engine pipeline by shard, what hir.compile picks on GPUs), grouped-query attention (4 key
# heads, one a device, and 2 refused), nanoGPT's attention written out and the Llama layer with
# SDPA (its 4 key heads); its form written out and the parallel branches cut each rank's heads or
# columns as on 2 ranks. One rank: a mesh of one device, whose key/value heads and device axes have
# extent 1 (a debugging run of TP code on one GPU): the collectives that are local copies there (the
# copy-engine's, the replicated rows' all-reduce), the copy-engine pipeline by shard (every stream
# axis over a device axis has extent 1), grouped-query attention and the Llama layer's one key head
# (test_a_mesh_of_one_device_runs_without_a_process_group: the layer without a process group).
JOBS = {
    1: ("1,3,4", "gqa,llama-sdpa"),
    2: ("0,1,2,3,4", "gqa,hand-written,llama-sdpa,llama-written,branches"),
    4: ("0,1,4", "gqa,hand-written,llama-sdpa"),
}


@pytest.mark.distributed
@pytest.mark.parametrize("processes", [1, 2, 4])
def test_tp_layer_on_gloo_ranks(processes: int) -> None:
    """Compiled on each rank, each on its rows, against eager torch on the unsharded input."""
    cases, modules = JOBS[processes]
    args = [str(REPO / "tests" / "tp_layer_driver.py"), "--cases", cases, "--modules", modules]
    if processes == 2:
        args.append("--smoke")
    result = run_ranks(args, timeout=300, processes=processes)
    assert result.returncode == 0, _output(result)
    smoke = " and benchmarks/tp_layer.py" if processes == 2 else ""
    programs, others = len(cases.split(",")), len(modules.split(","))
    assert f"tp layer: {programs} programs, {others} other modules{smoke} match eager torch on {processes} ranks" in (
        result.stdout
    )


def test_a_mesh_of_one_device_runs_without_a_process_group() -> None:
    """mesh=[0] in one process without init_process_group: the collectives are copies; forward and gradients match."""
    torch.manual_seed(0)
    layer = TPLayer(32, 4, 64, 8, torch.float32, "cpu")
    x = torch.randn(32, 32)
    rows = "[(stream(2), didx), serial]"
    compiled = hir.compile(layer, (x,), [rows], [rows], mesh=[0], param_layouts=PARAM_LAYOUTS)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), layer(x), rtol=1e-5, atol=1e-5)
    training = hir.compile(layer, (x,), [rows], [rows], mesh=[0], param_layouts=PARAM_LAYOUTS, training=True)
    x_hir, x_eager = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    dy = torch.randn(32, 32)
    training(x_hir).backward(dy)
    hir_grads = {n: p.grad.clone() for n, p in layer.named_parameters()}  # type: ignore[union-attr]
    layer.zero_grad(set_to_none=True)
    layer(x_eager).backward(dy)
    torch.testing.assert_close(x_hir.grad, x_eager.grad, rtol=1e-4, atol=1e-4)
    for name, p in layer.named_parameters():
        torch.testing.assert_close(hir_grads[name], p.grad, rtol=1e-4, atol=1e-4, msg=name)
