"""
CUDA graphs of multi-device programs on 2 GPUs (NCCL collectives, the ring lowering's
collective-permutes, and the copy-engine lowering over symmetric memory): every rank of a torchrun
job runs it; tests/test_cuda_graph.py::test_two_gpus starts it.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python -m torch.distributed.run --nproc-per-node 2 tests/cuda_graph_driver.py

Per case: lower the module, then call it with `cuda_graph=True` four times (the warm-up run and the
capture, then 3 replays), each time with fresh seeded global inputs, which `Session` shards; each
output, gathered back, is compared with the reference (the fusion-level module on the unsharded
inputs). Also checked: one graph for the four calls, and no symmetric buffer allocated after the
first call (the exchange happened before the capture). Rank 0 prints one line per case:

    CASE ag_matmul_by_device/copy-engine OK

FAILING_CASES: a capture that fails on every rank (an op not permitted under capture, after the
program's collectives were captured) is a located error; the process then runs the program
without a graph, and captures it again once the failing op is gone, and exits cleanly
(test_two_gpus checks that no rank reports PyTorch's internal assert about an open capture).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

import hir
from hir.runtime.compare import computed_dtypes, mismatches, tolerance_for
from hir.runtime.cuda_graph import CaptureError
from hir.runtime.distributed import Session
from hir.runtime.inputs import random_inputs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# A bf16 all-gather + GEMM of the benchmarks' form at a size where pushes take real time.
AG_GEMM_BF16 = """
func.func @main(%a: tensor<2x1024x1024xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>,
                %b: tensor<1024x512xbf16>) -> tensor<2x1024x512xbf16, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<2x1024x1024xbf16, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>, tensor<1024x512xbf16> -> tensor<2x1024x512xbf16, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<2x1024x512xbf16, #fusion.parallel<[stream, serial, serial]>>
}
"""

# (case name, module text, pipeline, num_streams)
CASES = (
    (
        "ag_matmul_by_device/copy-engine",
        (EXAMPLES / "multidevice" / "ag_matmul_by_device.mlir").read_text(),
        "stream-lowering{backend=copy-engine chunks=2}",
        1,
    ),
    ("ag_gemm_bf16/copy-engine", AG_GEMM_BF16, "stream-lowering{backend=copy-engine chunks=4}", 2),
    ("ag_matmul/nccl", (EXAMPLES / "ag_matmul.mlir").read_text(), "stream-lowering", 3),
    ("ag_matmul/ring", (EXAMPLES / "ag_matmul.mlir").read_text(), "stream-lowering{backend=ring}", 2),
    (
        "matmul_reduce_scatter/ring",
        (EXAMPLES / "multidevice" / "matmul_reduce_scatter.mlir").read_text(),
        "stream-lowering{backend=ring}",
        2,
    ),
)
FAILING_CASES = (("ag_matmul/nccl/failed-capture", (EXAMPLES / "ag_matmul.mlir").read_text(), "stream-lowering", 2),)
CALLS = 4  # capture, then 3 replays


def check_case(session: Session, name: str, text: str, pipeline: str, num_streams: int) -> str | None:
    """What went wrong on this rank, or None."""
    reference = hir.compile_program(hir.parse(text, f"{name}.mlir"))
    program = hir.compile_program(hir.run_pipeline(hir.parse(text, f"{name}.mlir"), pipeline))
    tolerance = tolerance_for(computed_dtypes(reference.func))
    heap = session.communicator.symmetric if session.communicator is not None else None
    symmetric_after_capture = None
    for call in range(CALLS):
        inputs = random_inputs(reference.input_types, seed=100 + call)  # the same on every rank
        outputs = session.run(program, inputs, num_streams=num_streams, cuda_graph=True)
        expected = session.run_reference(reference, inputs)
        problems = mismatches([t.cpu() for t in outputs], [t.cpu() for t in expected], tolerance)
        if problems:
            return f"call {call}: " + "; ".join(problems)
        if heap is not None:
            if symmetric_after_capture is None:
                symmetric_after_capture = len(heap.buffers)
            elif len(heap.buffers) != symmetric_after_capture:
                return f"call {call}: symmetric buffers were allocated after the capture"
    if len(program.graphs) != 1:
        return f"{len(program.graphs)} graphs captured for one input signature"
    (captured,) = program.graphs.values()
    if captured.replays != CALLS:
        return f"{captured.replays} replays for {CALLS} calls"
    return None


@contextlib.contextmanager
def failing_under_capture() -> Iterator[None]:
    """Each captured run ends with a device synchronize, which capture does not permit (it invalidates it)."""
    original = hir.Program._run_once

    def run_once(self: hir.Program, *args: Any) -> Any:
        results = original(self, *args)
        if torch.cuda.is_current_stream_capturing():
            torch.cuda.synchronize()
        return results

    hir.Program._run_once = run_once  # type: ignore[method-assign]
    try:
        yield
    finally:
        hir.Program._run_once = original  # type: ignore[method-assign]


def check_failing_case(session: Session, name: str, text: str, pipeline: str, num_streams: int) -> str | None:
    """What went wrong on this rank, or None."""
    reference = hir.compile_program(hir.parse(text, f"{name}.mlir"))
    program = hir.compile_program(hir.run_pipeline(hir.parse(text, f"{name}.mlir"), pipeline))
    tolerance = tolerance_for(computed_dtypes(reference.func))
    caller = torch.cuda.current_stream()
    with failing_under_capture():
        try:
            session.run(program, random_inputs(reference.input_types, seed=7), num_streams=num_streams, cuda_graph=True)
            return "the capture did not fail"
        except CaptureError as err:
            if "cannot be captured in a CUDA graph" not in str(err):
                return f"unexpected error: {err}"
    if torch.cuda.is_current_stream_capturing() or torch.cuda.current_stream() != caller:
        return "the failed capture left the caller's stream changed or capturing"
    torch.cuda.empty_cache()  # what fails once the allocator counts a capture that never ended
    for call, graph in enumerate((False, True, True)):  # without a graph, then captured anew and replayed
        inputs = random_inputs(reference.input_types, seed=200 + call)
        outputs = session.run(program, inputs, num_streams=num_streams, cuda_graph=graph)
        expected = session.run_reference(reference, inputs)
        problems = mismatches([t.cpu() for t in outputs], [t.cpu() for t in expected], tolerance)
        if problems:
            return f"call {call} after the failed capture: " + "; ".join(problems)
    if len(program.graphs) != 1:
        return f"{len(program.graphs)} graphs after the failed capture and a good one"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    session = Session.from_environment("cuda")
    assert session.world_size == 2, "run under torchrun with --nproc-per-node 2"
    results = []
    cases = [(check_case, case) for case in CASES] + [(check_failing_case, case) for case in FAILING_CASES]
    for check, (name, text, pipeline, num_streams) in cases:
        try:
            problem = check(session, name, text, pipeline, num_streams)
        except Exception as err:  # reported, then the next case runs
            problem = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        results.append((name, problem))
    per_rank: list[list[tuple[str, str | None]] | None] = [None] * session.world_size
    dist.all_gather_object(per_rank, results)
    failed = False
    if session.is_main:
        for k, (name, _) in enumerate(results):
            problems = [f"rank {r}: {seen[k][1]}" for r, seen in enumerate(per_rank) if seen and seen[k][1]]
            failed |= bool(problems)
            print(f"CASE {name} " + (f"FAIL {' | '.join(problems)}" if problems else "OK"), flush=True)
    session.close()
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
