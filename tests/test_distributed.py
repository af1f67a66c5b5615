"""
Multi-device programs on 2 and 4 CPU processes (gloo), started as torchrun would
(tests/ranks.py): the lowered examples against the fusion-level reference (through
tests/distributed_driver.py, one job for all the modules, since a job costs seconds to start),
`hir-run` itself under torchrun, and a failing or frozen rank ending the job instead of hanging it.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Collection
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from ranks import run_ranks, torchrun

import hir
from hir.runtime.inputs import random_inputs

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
DRIVER = Path(__file__).resolve().parent / "distributed_driver.py"

# The seven main cases of the multi-device issue.
MAIN_EXAMPLES = [
    EXAMPLES / "multidevice" / "allgather.mlir",
    EXAMPLES / "multidevice" / "allreduce.mlir",
    EXAMPLES / "multidevice" / "reduce_scatter.mlir",
    EXAMPLES / "ag_matmul.mlir",
    EXAMPLES / "multidevice" / "ag_matmul_by_device.mlir",
    EXAMPLES / "multidevice" / "ag_linear.mlir",
    EXAMPLES / "multidevice" / "matmul_allreduce.mlir",
    EXAMPLES / "multidevice" / "matmul_reduce_scatter.mlir",
]

# Smaller shapes of the same machinery that the examples do not reach.
EXTRA_MODULES = {
    # stream(4) chunks (hir.alias_chunk) of one row block each: the all-gather runs along axis 1
    # of a 1x2x16x32 chunk, after an axis of extent 1.
    "ag_matmul_chunks": """
func.func @main(%a: tensor<4x2x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<32x24xf32>) -> tensor<4x2x16x24xf32, #fusion.parallel<[stream(4), serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x2x16x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<32x24xf32> -> tensor<4x2x16x24xf32, #fusion.parallel<[stream(4), serial, serial, serial]>>
  func.return %c : tensor<4x2x16x24xf32, #fusion.parallel<[stream(4), serial, serial, serial]>>
}
""",
    # A reduce-scatter along axis 1, after an axis of extent 1.
    "reduce_scatter_axis1": """
func.func @main(%x: tensor<2x1x2x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>>) -> tensor<1x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x1x2x8xf32, #fusion.parallel<[didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<1x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<1x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}
""",
    # Replicated on device 1 only -> on both devices: a broadcast from device 1.
    "broadcast": """
func.func @main(%x: tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>>) -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %y = fusion.set %x : tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [1]>> -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}
""",
    # Compute on the shards, an all-reduce, compute on the replicated result.
    "allreduce_between_compute": """
func.func @main(%x: tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %r = fusion.relu %x : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>
  %y = fusion.sum %r dims = [0] : tensor<2x8x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  %e = fusion.tanh %y : tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %e : tensor<8x16xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}
""",
    # A matmul contracting the sharded axis of X (K) and a max over it, into replicated results:
    # X is gathered first (fusion-decompose-resharding), each device then has all of K.
    "contract_and_max_over_sharded_axis": """
func.func @main(%w: tensor<6x2xf32>, %x: tensor<2x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>)
    -> (tensor<6x3xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>, tensor<3xf32, #fusion.parallel<[serial], mesh = [0, 1]>>) {
  %y = fusion.matmul %w, %x : tensor<6x2xf32>, tensor<2x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<6x3xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
  %m = fusion.max %x dims = [0] : tensor<2x3xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<3xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
  func.return %y, %m : tensor<6x3xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>, tensor<3xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
}
""",
    # int16, which gloo and NCCL do not communicate, travels as int32: a sum over the devices (an
    # all-reduce) and a reduce-scatter whose sharded result is gathered back.
    "int16_allreduce": """
func.func @main(%x: tensor<2x8x16xi16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<8x16xi16, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x8x16xi16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<8x16xi16, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x16xi16, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}
""",
    "int16_reduce_scatter": """
func.func @main(%x: tensor<2x2x8xi16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x8xi16, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x2x8xi16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x8xi16, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x8xi16, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
""",
    # An elementwise op on a sharded and a replicated operand with an unsharded result: the
    # sharded operand is gathered first (fusion-decompose-resharding).
    "gather_then_add": """
func.func @main(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %z = fusion.add %x, %y : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %z : tensor<2x8xf32>
}
""",
}

# The row-parallel half with the copy-engine backend (passes/copy_engine_reduce.py), beyond the
# examples: the benchmarks' modules with one chunk, a reduce-scatter whose output the iteration goes
# on using, and an all-reduce whose blocks are strided (its 3 rows do not split over 2 devices,
# its 4 columns do).
REDUCTION_MODULES = {
    "gemm_rs_one_chunk": """
func.func @main(%a: tensor<1x2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>,
                %b: tensor<1x2x1x16x24xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<1x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<1x2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>, tensor<1x2x1x16x24xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<1x2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<1x2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<1x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<1x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
""",
    "matmul_ar_one_chunk": """
func.func @main(%a: tensor<1x2x16x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                %b: tensor<2x16x24xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<1x16x24xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<1x2x16x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x16x24xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<1x2x16x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<1x2x16x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<1x16x24xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<1x16x24xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
}
""",
    # The tanh reads the reduce-scatter's output in the same iteration (the loops are fused).
    "gemm_rs_then_tanh": """
func.func @main(%a: tensor<2x2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>,
                %b: tensor<1x2x1x16x24xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<2x2x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>>, tensor<1x2x1x16x24xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<2x2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %d = fusion.tanh %c : tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %d : tensor<2x2x8x24xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
""",
    "matmul_ar_strided_blocks": """
func.func @main(%a: tensor<2x2x3x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                %b: tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>)
    -> tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>> {
  %p = fusion.matmul %a, %b : tensor<2x2x3x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x8x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x3x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %c = fusion.sum %p dims = [1] : tensor<2x2x3x4xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
  func.return %c : tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1]>>
}
""",
}
NUM_STREAMS = (1, 3)
PIPELINES = ("nccl", "copy-engine")  # the driver runs every module with both backends
WITH_RING = (*PIPELINES, "ring")
"""The three backends: the jobs of the examples and of the 4-rank pipelines also run the ring one."""

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(
        not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo"
    ),
]


def _output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def run_driver_job(
    modules: list[Path],
    *,
    processes: int = 2,
    pipelines: tuple[str, ...] = PIPELINES,
    timeout: float = 120,
    refused: Collection[str] = (),
) -> None:
    """
    tests/distributed_driver.py on `modules` in one job: every module, pipeline and stream count
    reports OK, but the `refused` ones (`module/pipeline`), whose lowering must fail with a diagnostic.
    """
    argv = [str(DRIVER)]
    if pipelines != PIPELINES:
        argv += ["--pipelines", ",".join(pipelines)]
    result = run_ranks([*argv, *map(str, modules)], timeout=timeout, processes=processes)
    cases = dict(re.findall(r"^CASE (\S+) (.*)$", result.stdout, re.MULTILINE))
    expected = {f"{m.stem}/{b}/streams={n}" for m in modules for b in pipelines for n in NUM_STREAMS}
    assert set(cases) == expected, _output(result)
    failed = {
        name: verdict
        for name, verdict in cases.items()
        if verdict != "OK" and not (name.rsplit("/", 1)[0] in refused and "lowering: PassFailedException" in verdict)
    }
    assert not failed, f"{failed}\n{_output(result)}"
    assert not [r for r in refused if cases.get(f"{r}/streams={NUM_STREAMS[0]}") == "OK"], _output(result)
    assert result.returncode == 0, _output(result)


def test_examples_match_reference(tmp_path: Path) -> None:
    """
    Every example, lowered with each backend and run on 2 ranks with 1 and 3 streams, matches the
    reference (the ring backend: AG+GEMM, GEMM+RS and matmul+AR as collective-permute rings, what
    it does not take on NCCL).
    """
    extra = []
    for name, text in {**EXTRA_MODULES, **REDUCTION_MODULES}.items():
        path = tmp_path / f"{name}.mlir"
        path.write_text(text)
        extra.append(path)
    run_driver_job([*MAIN_EXAMPLES, *extra], pipelines=WITH_RING)


def test_work_moved_after_the_collectives() -> None:
    """
    fusion-hide-communication and hir-sink-waits on the backward of the TP MLP (weight gradients
    after the reduce-scatter, the waits and the pipeline's join after them) and on the forward
    examples, over NCCL-style collectives and the copy-engine pipelines: the result matches the
    reference on 2 ranks.
    """
    modules = [
        REPO / "tests" / "programs" / "tp_mlp_backward.mlir",
        EXAMPLES / "multidevice" / "tp_mlp.mlir",
        EXAMPLES / "multidevice" / "matmul_reduce_scatter.mlir",
    ]
    run_driver_job(modules, pipelines=("nccl-hidden", "copy-engine-hidden"))


def test_hir_run_under_torchrun(tmp_path: Path) -> None:
    """`hir-run` on 2 ranks: a lowered module checked against --reference, outputs saved global."""
    example = EXAMPLES / "multidevice" / "matmul_reduce_scatter.mlir"  # its output is sharded
    lowered = tmp_path / "lowered.mlir"
    lowered.write_text(str(hir.run_pipeline(hir.parse_file(example), "stream-lowering")))
    outputs = tmp_path / "out.pt"
    result = torchrun(
        ["-m", "hir.tools.hir_run", str(lowered), "--reference", str(example), "--outputs", str(outputs)],
        tmp_path / "logs",
        timeout=90,
    )
    assert result.returncode == 0, _output(result)
    assert result.stdout.count("check: OK") == 1, _output(result)  # rank 0 reports
    assert "Warning" not in result.stderr, _output(result)  # e.g. torch's deprecated collective names
    saved = torch.load(outputs)
    reference = hir.compile_program(hir.parse_file(example))
    expected = reference(random_inputs(reference.input_types, seed=0), device="cpu")
    assert [tuple(t.shape) for t in saved] == [(4, 2, 16, 48)]  # global, not the 4x1x16x48 shard
    torch.testing.assert_close(saved[0], expected[0], rtol=1e-5, atol=1e-5)

    # The one-command form of docs/multidevice.md: --check lowers the fusion-level module itself
    # (the job started as torchrun would, tests/ranks.py, since the first one went through torchrun).
    result = run_ranks(
        ["-m", "hir.tools.hir_run", str(EXAMPLES / "ag_matmul.mlir"), "--check", "--num-streams", "3"], timeout=90
    )
    assert result.returncode == 0, _output(result)
    expected = (
        "check: OK (the fusion-level reference against the program lowered by -p 'stream-lowering': 1 output matches)"
    )
    assert expected in result.stdout, _output(result)
    assert "Warning" not in result.stderr, _output(result)  # no deprecation note per rank from the collectives


def test_failing_rank_ends_the_job() -> None:
    """Rank 1 raises while rank 0 waits in the all-gather: the job fails quickly, it does not hang."""
    start = time.monotonic()
    result = run_ranks(
        [str(DRIVER), "--fail-rank", "1", str(EXAMPLES / "multidevice" / "allgather.mlir")], timeout=80, dist_timeout=20
    )
    elapsed = time.monotonic() - start
    assert result.returncode != 0, _output(result)
    assert "rank 1 fails on purpose before the collectives of allgather" in result.stdout + result.stderr, _output(
        result
    )
    assert "CASE" not in result.stdout, _output(result)
    assert elapsed < 60, f"the job took {elapsed:.0f} s to fail\n{_output(result)}"


FOUR_DEVICES = {
    "ag_by_device_4": """
func.func @main(%a: tensor<4x16x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<32x24xf32>) -> tensor<4x16x24xf32, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x16x32xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<32x24xf32> -> tensor<4x16x24xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<4x16x24xf32, #fusion.parallel<[stream, serial, serial]>>
}
""",
    "ag_by_chunk_4": """
func.func @main(%a: tensor<2x4x8x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<32x24xf32>) -> tensor<2x4x8x24xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x4x8x32xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<32x24xf32> -> tensor<2x4x8x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<2x4x8x24xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}
""",
    "gemm_rs_4": """
func.func @main(%a: tensor<2x4x4x4x8xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<1x4x1x8x12xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>)
    -> tensor<2x4x4x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>> {
  %p = fusion.matmul %a, %b : tensor<2x4x4x4x8xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<1x4x1x8x12xf32, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<2x4x4x4x12xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>>
  %c = fusion.sum %p dims = [1] : tensor<2x4x4x4x12xf32, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<2x4x4x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %c : tensor<2x4x4x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
}
""",
    "matmul_ar_4": """
func.func @main(%a: tensor<2x4x8x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2, 3]>>,
                %b: tensor<4x8x12xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>>)
    -> tensor<2x8x12xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1, 2, 3]>> {
  %p = fusion.matmul %a, %b : tensor<2x4x8x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1, 2, 3]>>, tensor<4x8x12xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<2x4x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>>
  %c = fusion.sum %p dims = [1] : tensor<2x4x8x12xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1, 2, 3]>> -> tensor<2x8x12xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %c : tensor<2x8x12xf32, #fusion.parallel<[stream, serial, serial], mesh = [0, 1, 2, 3]>>
}
""",
}


def test_four_devices(tmp_path: Path) -> None:
    """
    AG+GEMM over 4 ranks, by device (rotated copy-engine pushes to 3 peers) and by chunk; GEMM +
    reduce-scatter and matmul + all-reduce (3 partials pushed and added per block); with the ring
    backend, rings of 3 collective-permute steps.
    """
    modules = []
    for name, text in FOUR_DEVICES.items():
        path = tmp_path / f"{name}.mlir"
        path.write_text(text)
        modules.append(path)
    run_driver_job(modules, processes=4, pipelines=WITH_RING, timeout=180)


REDUCTION_PIPELINES = ("copy-engine-auto", "copy-engine-start", "copy-engine-end")


def test_copy_engine_reductions(tmp_path: Path) -> None:
    """
    The copy-engine reduce-scatter and all-reduce (and the all-gather by device) in one piece, with
    every `release`, on 2 ranks with 1 and 3 streams, race-checked (test_examples_match_reference
    runs them in two pieces).
    """
    modules = [
        EXAMPLES / "multidevice" / "matmul_reduce_scatter.mlir",
        EXAMPLES / "multidevice" / "matmul_allreduce.mlir",
        EXAMPLES / "multidevice" / "ag_matmul_by_device.mlir",
    ]
    path = tmp_path / "gemm_rs_one_chunk.mlir"
    path.write_text(REDUCTION_MODULES["gemm_rs_one_chunk"])
    modules.append(path)
    run_driver_job(modules, pipelines=REDUCTION_PIPELINES, timeout=150)


# Rank 1 of a job freezes itself (SIGSTOP) just before it runs the program, as a hung or
# preempted process would; its peers must fail within the timeout, naming it.
FREEZING_RANK = """
import os
import signal
import sys
import time
from pathlib import Path

from hir.runtime.distributed import Session
from hir.tools.hir_run import main

run = Session.run


def run_or_freeze(self, *args, **kwargs):
    if self.rank == 1:
        Path(os.environ["FROZEN_AT"]).write_text(str(time.time()))
        os.kill(os.getpid(), signal.SIGSTOP)
    return run(self, *args, **kwargs)


Session.run = run_or_freeze
main(sys.argv[1:])
"""


def _lowered(example: Path, tmp_path: Path) -> Path:
    lowered = tmp_path / f"{example.stem}.hir.mlir"
    lowered.write_text(str(hir.run_pipeline(hir.parse_file(example), "stream-lowering")))
    return lowered


def test_a_frozen_rank_ends_the_job_within_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank 0 waits in the all-gather for a stopped rank 1: it fails after --timeout, naming rank 1 and the op."""
    script = tmp_path / "freezing_rank.py"
    script.write_text(FREEZING_RANK)
    lowered = _lowered(EXAMPLES / "multidevice" / "allgather.mlir", tmp_path)
    frozen_at = tmp_path / "frozen_at"
    monkeypatch.setenv("FROZEN_AT", str(frozen_at))  # the ranks inherit it
    result = run_ranks([str(script), str(lowered), "--timeout", "4"], timeout=120)
    elapsed = time.time() - float(frozen_at.read_text())
    message = result.stderr
    assert result.returncode == 1, _output(result)
    assert "Traceback" not in message
    assert "rank 0: hir.allgather at" in message, message
    assert "did not complete within the timeout of 4 s" in message, message
    assert "rank 1 did not respond (stopped, hung or exited)" in message, message
    assert elapsed < 20, f"rank 0 failed {elapsed:.0f} s after rank 1 froze\n{message}"


def test_a_job_larger_than_the_mesh_is_refused(tmp_path: Path) -> None:
    """3 processes for a program over devices [0, 1]: every rank refuses it before anything runs."""
    lowered = _lowered(EXAMPLES / "multidevice" / "allgather.mlir", tmp_path)
    result = run_ranks(["-m", "hir.tools.hir_run", str(lowered)], timeout=90, processes=3)
    assert result.returncode != 0, _output(result)
    assert "runs on devices [0, 1], one process each (2 processes), but the job has 3" in result.stderr, _output(result)
    assert "Traceback" not in result.stderr, _output(result)
