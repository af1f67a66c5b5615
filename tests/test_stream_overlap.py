"""
fusion-stream-overlap and its cost model (passes/overlap_cost.py): the model against the table it
was fitted to and the large sizes it must keep pipelined; `never` and `auto` lowerings run
against the reference on one device and, over gloo, on 2 processes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from ranks import run_ranks
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

import hir
from hir.frontend.lowering_choice import choose_options
from hir.passes.device_constants import BUILTIN, ENVIRONMENT_VARIABLE
from hir.passes.overlap_cost import estimate, workload
from hir.passes.stream_by_shard import can_pipeline_by_shard, pipeline_by_shard
from hir.passes.stream_overlap import choose_lowering
from hir.runtime.compare import mismatches
from hir.runtime.inputs import random_inputs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

AG_GEMM = """
func.func @main(%a: tensor<2x{MD}x{K}xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, %b: tensor<{K}x{N}xbf16>) -> tensor<2x{MD}x{N}xbf16, #fusion.parallel<[stream, serial, serial]>> {{
  %c = fusion.matmul %a, %b : tensor<2x{MD}x{K}xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<{K}x{N}xbf16> -> tensor<2x{MD}x{N}xbf16, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<2x{MD}x{N}xbf16, #fusion.parallel<[stream, serial, serial]>>
}}
"""


def ag_gemm(m: int, n: int, k: int = 8192) -> func.FuncOp:
    module = hir.parse(AG_GEMM.format(MD=m // 2, K=k, N=n), "ag_gemm.mlir")
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


# Measured on 2x H200, bf16, K=8192 (docs/benchmarks.md): M, N/rank, GEMM ms, all-gather ms, and
# whether the copy-engine pipeline beat all-gather then GEMM.
MEASURED = [
    (1024, 4096, 0.105, 0.068, False),
    (2048, 4096, 0.191, 0.107, False),  # 0.275 against 0.281: a tie, either choice is right
    (4096, 4096, 0.362, 0.173, True),
    (16384, 4096, 1.439, 0.582, True),
    (32768, 2048, 1.566, 1.115, True),
    (16384, 1024, 0.377, 0.590, True),
]


@pytest.fixture(autouse=True)
def builtin_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's decisions below are those of the built-in constants, whatever this machine cached."""
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "builtin")


@pytest.mark.parametrize(("m", "n", "gemm", "gather", "pipeline_won"), MEASURED)
def test_model_against_measurements(m: int, n: int, gemm: float, gather: float, pipeline_won: bool) -> None:
    prediction = estimate(ag_gemm(m, n), "copy-engine")
    assert prediction is not None
    assert prediction.compute_ms == pytest.approx(gemm, rel=0.12)
    assert prediction.communication_ms == pytest.approx(gather, rel=0.12)
    assert prediction.serial_ms == pytest.approx(gemm + gather, rel=0.12)
    if m != 2048:
        assert prediction.overlap is pipeline_won, prediction.reason
    nccl = estimate(ag_gemm(m, n), "nccl")
    assert nccl is not None
    assert not nccl.overlap  # the per-chunk NCCL pipelines never won


def test_replay_drops_the_host_share() -> None:
    """Without the host's launches the pipeline costs less: at M=1024 eager loses, replayed it wins."""
    eager = estimate(ag_gemm(1024, 4096), "copy-engine")
    replayed = estimate(ag_gemm(1024, 4096), "copy-engine", replay=True)
    assert eager is not None
    assert replayed is not None
    assert replayed.pipelined_ms is not None
    assert eager.pipelined_ms is not None
    assert replayed.pipelined_ms < eager.pipelined_ms
    assert (eager.overlap, replayed.overlap) == (False, True)


def test_model_reasons() -> None:
    small = estimate(ag_gemm(1024, 4096), "copy-engine")
    assert small is not None
    assert small.reason == (
        "communication 0.068 ms, GEMMs 0.105 ms, serial 0.173 ms, copy-engine pipeline 0.220 ms: "
        "serial (the pipeline gains less than 3%)"
    )
    single_device = hir.parse(
        (EXAMPLES / "set_stream.mlir").read_text(), "set_stream.mlir"
    )  # no communication: nothing to decide
    function = next(op for op in single_device.walk() if isinstance(op, func.FuncOp))
    assert estimate(function, "copy-engine") is None


def test_rates_move_the_decision() -> None:
    """Slower links make the pipeline win at M=1024; a slower host makes it lose at M=4096."""
    slow_links = replace(BUILTIN, nccl_bytes_per_ms=BUILTIN.nccl_bytes_per_ms / 8)
    fast_host = replace(slow_links, host_ms_per_op=0.0)
    small = estimate(ag_gemm(1024, 4096), "copy-engine", fast_host)
    assert small is not None
    assert small.overlap, small.reason
    slow_host = replace(BUILTIN, host_ms_per_op=0.05)
    large = estimate(ag_gemm(4096, 4096), "copy-engine", slow_host)
    assert large is not None
    assert not large.overlap, large.reason


def tp_mlp(devices: int, chunks: int, m: int, hidden: int) -> ModuleOp:
    """The fusion module hir.compile imports for benchmarks/tp_mlp.py's block (bf16, FFN = 4H)."""
    ffn, rows, mesh = 4 * hidden // devices, m // (chunks * devices), ", ".join(map(str, range(devices)))

    def sharded(shape: str, kinds: str) -> str:
        return f"tensor<{shape}xbf16, #fusion.parallel<[{kinds}], mesh = [{mesh}]>>"

    w1 = sharded(f"{devices}x1x1x{hidden}x{ffn}", "didx, serial, serial, serial, serial")
    w2 = sharded(f"{devices}x1x1x{ffn}x{hidden}", "didx, serial, serial, serial, serial")
    x = sharded(f"{chunks}x{devices}x{rows}x{hidden}", "serial, didx, serial, serial")
    h = sharded(f"{devices}x{chunks}x{devices}x{rows}x{ffn}", "didx, stream, serial, serial, serial")
    p = sharded(f"{devices}x{chunks}x{devices}x{rows}x{hidden}", "didx, stream, serial, serial, serial")
    out = sharded(f"{chunks}x{devices}x{rows}x{hidden}", "stream, didx, serial, serial")
    text = f"""func.func @main(%w1: {w1}, %w2: {w2}, %x: {x}) -> {out} {{
  %a = fusion.matmul %x, %w1 : {x}, {w1} -> {h}
  %g = fusion.gelu %a approximate = none : {h} -> {h}
  %b = fusion.matmul %g, %w2 : {h}, {w2} -> {p}
  %0 = fusion.sum %b dims = [0] : {p} -> {out}
  func.return %0 : {out}
}}"""
    return hir.parse(text, "tp_mlp.mlir")


def test_tp_mlp_workload() -> None:
    """
    An all-gather into the first GEMM and a reduce-scatter of the second's partial sums, bytes per
    device. In one chunk of rows the copy-engine lowering pipelines the reduce-scatter by
    destination, but gathers x whole over NCCL (no pieces); in two chunks both, per shard and chunk.
    """
    module = tp_mlp(devices=4, chunks=1, m=8192, hidden=4096)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    work = workload(function)
    bf16 = 2
    assert [(t.kind, t.devices, t.pieces) for t in work.transfers] == [("gather", 4, 0), ("reduce", 4, 4)]
    chunked = next(op for op in tp_mlp(4, 2, 8192, 4096).walk() if isinstance(op, func.FuncOp))
    assert [t.pieces for t in workload(chunked).transfers] == [8, 8]
    assert work.transfers[0].bytes_per_device == 8192 * 4096 * bf16 * 3 / 4  # 3 of x's 4 shards
    assert work.transfers[1].bytes_per_device == 8192 * 4096 * bf16 * 3 / 4  # 3 of 4 row blocks of the partial
    assert work.gemms == (2 * 8192 * 4096 * 4096, 2 * 8192 * 4096 * 4096)  # [M, H] x [H, 4H/4], then back


def test_tp_mlp_workload_by_shard() -> None:
    """Pipelined by shard, both transfers are one piece per device: each shard's GEMMs as it lands."""
    module = tp_mlp(devices=4, chunks=1, m=8192, hidden=4096)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert can_pipeline_by_shard(function)
    pipeline_by_shard(function)
    assert [(t.kind, t.pieces) for t in workload(function).transfers] == [("gather", 4), ("reduce", 4)]
    assert not can_pipeline_by_shard(function)  # its stream axes moved: nothing left to move


def test_choose_lowering() -> None:
    # Rows in one chunk: the pipeline by shard overlaps the all-gather too, which the pipeline as
    # written gathers whole; the model ranks it first.
    large = choose_lowering(tp_mlp(devices=2, chunks=1, m=32768, hidden=8192), replay=True)
    assert large.options() == {"backend": "copy-engine", "overlap": "by-shard"}, large.reason
    assert large.by_shard_ms is not None
    assert large.pipelined_ms is not None
    assert large.serial_ms is not None
    assert large.by_shard_ms < large.pipelined_ms < large.serial_ms
    assert [o.options()["overlap"] for o in large.others()] == ["always", "never"]
    slow_host = replace(BUILTIN, host_ms_per_op=1.0)
    small = choose_lowering(tp_mlp(devices=2, chunks=1, m=512, hidden=1024), replay=False, constants=slow_host)
    assert small.options() == {"backend": "nccl", "overlap": "never"}, small.reason
    # Two stream chunks of sharded rows have no serial form (the gathered axis is not outermost).
    chunked = choose_lowering(tp_mlp(devices=2, chunks=2, m=512, hidden=1024), replay=False, constants=slow_host)
    assert chunked.options() == {"backend": "copy-engine", "overlap": "always"}, chunked.reason
    assert "no serial form" in chunked.reason
    assert chunked.by_shard_ms is None  # its stream axis has two chunks: nothing to move
    alone = choose_lowering(hir.parse((EXAMPLES / "set_stream.mlir").read_text(), "set_stream.mlir"), replay=True)
    assert alone.options() == {"backend": "nccl", "overlap": "always"}


CHAIN = """
func.func @main(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>) -> tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>> {
  %y = fusion.matmul %x, %w : tensor<64x32xf32>, tensor<32x48xf32> -> tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>>
  %z = fusion.relu %y : tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>> -> tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %z : tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>>
}
"""


@pytest.mark.parametrize("overlap", ["never", "auto", "always"])
def test_single_device_numerics(overlap: str) -> None:
    lowered = hir.run_pipeline(hir.parse(CHAIN, "chain.mlir"), f"stream-lowering{{overlap={overlap}}}")
    loops = [op for op in lowered.walk() if op.name == "hir.for"]
    assert bool(loops) == (overlap != "never")  # auto leaves a function without communication alone
    reference = hir.compile_program(hir.parse(CHAIN, "chain.mlir"))
    inputs = random_inputs(reference.input_types, seed=4)
    outputs = hir.execute(lowered, inputs, race_check=True, num_streams=3)
    assert not mismatches(outputs, reference(inputs))


@pytest.mark.distributed
def test_serial_all_gather_gemm_on_two_processes(tmp_path: Path) -> None:
    """`never` (and `auto`, which decides the same at this size) lower the AG+GEMM to one all-gather and one GEMM."""
    example = EXAMPLES / "multidevice" / "ag_matmul_by_device.mlir"
    lowered = hir.run_pipeline(hir.parse_file(example), "stream-lowering{backend=copy-engine overlap=auto}")
    assert [op.name for op in lowered.walk() if op.name in ("hir.allgather", "hir.for", "hir.peer_view")] == [
        "hir.allgather"
    ]
    result = run_ranks(
        ["-m", "hir.tools.hir_run", str(example), "--check", "-p", "stream-lowering{overlap=never}", "--race-check"],
        timeout=90,
    )
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    assert "check: OK (the fusion-level reference against the program lowered by" in result.stdout, output
    assert "1 output matches)" in result.stdout, output


def test_compile_defaults() -> None:
    """hir.compile's choice: the model's on CUDA when the caller names neither backend nor overlap."""
    module = tp_mlp(devices=2, chunks=1, m=32768, hidden=8192)
    options, lowering = choose_options(module, "stream-lowering", {"policy": "standalone-host-ops"}, True, True)
    assert lowering is not None
    assert options == {"policy": "standalone-host-ops", "backend": "copy-engine", "overlap": "by-shard"}
    assert "by shard: copy-engine pipeline" in lowering.reason
    assert "replayed, constants of 2x NVIDIA H200, NVLink (built-in)" in lowering.reason
    for pipeline, given, on_cuda in [
        ("stream-lowering", {}, False),  # CPU: as written
        ("stream-lowering", {"backend": "ring"}, True),  # the caller's backend
        ("stream-lowering", {"overlap": "always"}, True),
        ("fusion-segment,convert-fusion-to-hir", {}, True),  # the caller's pipeline
    ]:
        assert choose_options(module, pipeline, given, on_cuda, True) == (given, None)


@pytest.mark.distributed
@pytest.mark.parametrize("backend", ["copy-engine", "nccl"])
def test_tp_mlp_by_shard_on_two_processes(backend: str) -> None:
    """
    The TP MLP pipelined by shard matches the fusion-level reference on random inputs, with
    poisoned buffers, and the race check (streams and peers' pushes) finds every access ordered.
    """
    example = EXAMPLES / "multidevice" / "tp_mlp.mlir"
    pipeline = f"stream-lowering{{backend={backend} overlap=by-shard}}"
    result = run_ranks(
        ["-m", "hir.tools.hir_run", str(example), "--check", "--race-check", "--poison", "-p", pipeline],
        timeout=90,
    )
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    assert "1 output matches)" in result.stdout, output
    assert "race check: OK" in result.stdout, output
