"""
`hir-calibrate`: measures this machine's device constants for the overlap cost model
(passes/device_constants.py) and caches them, so that `hir.compile`, `hir-run` and
`stream-lowering{overlap=auto}` decide with this machine's numbers.

    hir-calibrate                 # every visible GPU; writes ~/.cache/hir/device-constants.json
    hir-calibrate --gpus 2 --print-only

What it measures (CUDA-event medians after a warm-up):
- bf16 GEMMs of four shapes on one GPU: a least-squares fit of latency + flops / rate;
- host time per hir op of an eager run: a lowered stream loop of small launches;
- on D GPUs, one process each (started with torch.distributed.run): NCCL all-gather and
  reduce-scatter at four sizes (latency + bytes / rate), pushes of every device into all its
  peers' symmetric memory at once on the copy engines (latency + bytes / rate), and the
  symmetric-memory barrier.
Runs in about a minute. Multi-GPU steps set NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1
and NVSHMEM_DISABLE_NVLS=1 unless the environment sets them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from hir.frontend.autotune import median_ms as timed
from hir.passes.device_constants import BUILTIN, DeviceConstants, cache_path, save_constants

GEMM_SHAPES = ((1024, 4096, 8192), (4096, 4096, 8192), (8192, 8192, 8192), (16384, 4096, 8192))
TRANSFER_BYTES = (4 << 20, 16 << 20, 64 << 20, 256 << 20)
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def median_ms(fn: Callable[[], object], reps: int = 20, barrier: Callable[[], None] | None = None) -> float:
    """`fn`'s median ms on the current GPU after 3 warm-up runs, each repetition after `barrier`."""
    return timed(fn, torch.device("cuda"), barrier or (lambda: None), warmup=3, repeats=reps)


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + x / b: (a, b), with a >= 0."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sum((x - mean_x) ** 2 for x in xs)
    intercept = max(0.0, mean_y - slope * mean_x)
    return intercept, 1.0 / slope


def measure_gemm() -> tuple[float, float]:
    flops, times = [], []
    for m, n, k in GEMM_SHAPES:
        a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(k, n, dtype=torch.bfloat16, device="cuda")
        out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
        times.append(median_ms(lambda a=a, b=b, out=out: torch.mm(a, b, out=out)))
        flops.append(2.0 * m * n * k)
    return fit_line(flops, times)


STREAM_ROWS = "tensor<256x1024xf32, #fusion.parallel<[stream, serial]>>"
HOST_MODULE = f"""
func.func @main(%x: {STREAM_ROWS}) -> {STREAM_ROWS} {{
  %y = fusion.relu %x : {STREAM_ROWS} -> {STREAM_ROWS}
  func.return %y : {STREAM_ROWS}
}}
"""


def measure_host_ms_per_op() -> float:
    """Host time of an eager run of a stream loop of 256 launches, per hir op it executes."""
    import hir

    module = hir.run_pipeline(hir.parse(HOST_MODULE, "calibrate"), "stream-lowering")
    program = hir.compile_program(module)
    ops_per_run = executed_ops(module, iterations=256)
    x = torch.randn(256, 1024, device="cuda")
    for _ in range(5):
        program([x], num_streams=4)
    torch.cuda.synchronize()
    samples = []
    for _ in range(20):
        start = time.perf_counter()
        program([x], num_streams=4)
        samples.append((time.perf_counter() - start) * 1e3)
        torch.cuda.synchronize()
    return statistics.median(samples) / ops_per_run


def executed_ops(module: object, iterations: int) -> int:
    """hir ops a run executes: those of the function body once, those inside each loop per iteration."""
    from hir.dialects import hir as hir_dialect

    total = 0
    for op in module.walk():  # type: ignore[attr-defined]
        if op.dialect_name() not in ("hir", "arith") or op.name in ("hir.yield",):
            continue
        inside_loop = op.parent_op() is not None and isinstance(op.parent_op(), hir_dialect.ForOp)
        total += iterations if inside_loop else 1
    return total


def measure_ranks(out: Path) -> None:
    """The multi-GPU part, in each process of a torch.distributed.run job; rank 0 writes `out`."""
    import torch.distributed as dist

    from hir.runtime.distributed import ProcessGroupCommunicator, enable_symmetric_memory

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    enable_symmetric_memory(dist.group.WORLD.group_name)
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = tuple(range(world))
    communicator = ProcessGroupCommunicator(rank, world)
    communicator.prepare([mesh])

    def max_over_ranks(value: float) -> float:
        t = torch.tensor([value], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    barrier = dist.barrier
    nccl_bytes, nccl_times, push_times = [], [], []
    for received in TRANSFER_BYTES:
        shard = received // (world - 1) // 2  # bf16 elements of one device's shard
        x = torch.randn(shard, dtype=torch.bfloat16, device=device)
        gathered = torch.empty(shard * world, dtype=torch.bfloat16, device=device)
        scattered = torch.empty(shard, dtype=torch.bfloat16, device=device)
        ag = median_ms(lambda x=x, g=gathered: dist.all_gather_into_tensor(g, x), barrier=barrier)
        rs = median_ms(lambda g=gathered, s=scattered: dist.reduce_scatter_tensor(s, g), barrier=barrier)
        nccl_bytes.append(float(received))
        nccl_times.append(max_over_ranks((ag + rs) / 2))

        buffer = communicator.empty_symmetric(("calibrate", received), (world, shard), torch.bfloat16, device)
        peers = [communicator.peer_view(buffer, d) for d in mesh if d != rank]
        streams = [torch.cuda.Stream(device) for _ in peers]

        def push(x: torch.Tensor = x, peers: list = peers, streams: list = streams) -> None:
            caller = torch.cuda.current_stream()
            for view, stream in zip(peers, streams):
                stream.wait_stream(caller)
                with torch.cuda.stream(stream):
                    view[rank].copy_(x)
            for stream in streams:
                caller.wait_stream(stream)

        push_times.append(max_over_ranks(median_ms(push, barrier=barrier)))
    nccl_latency, nccl_rate = fit_line(nccl_bytes, nccl_times)
    push_latency, push_rate = fit_line(nccl_bytes, push_times)
    barrier_ms = max_over_ranks(median_ms(lambda: communicator.barrier(mesh), reps=50, barrier=barrier))
    if rank == 0:
        values = {
            "nccl_latency_ms": nccl_latency,
            "nccl_bytes_per_ms": nccl_rate,
            "copy_engine_latency_ms": push_latency / max(1, world - 1),
            "copy_engine_bytes_per_ms": push_rate,
            "barrier_ms": barrier_ms,
            "samples": {"bytes": nccl_bytes, "nccl_ms": nccl_times, "push_ms": push_times},
        }
        out.write_text(json.dumps(values))
    dist.barrier()
    dist.destroy_process_group()


def run_ranks(gpus: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "ranks.json"
        env = {**MULTICAST_OFF, **os.environ}
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(gpus)]
        command += ["-m", "hir.tools.calibrate", "--ranks-part", str(out)]
        subprocess.run(command, env=env, check=True)
        return json.loads(out.read_text())


def calibrate(gpus: int) -> tuple[DeviceConstants, dict]:
    gemm_latency, gemm_rate = measure_gemm()
    host = measure_host_ms_per_op()
    ranks: dict = {}
    if gpus >= 2:
        ranks = run_ranks(gpus)
    name = torch.cuda.get_device_name(0)
    constants = DeviceConstants(
        machine=f"{gpus}x {name}, torch {torch.__version__}",
        gemm_latency_ms=gemm_latency,
        gemm_flop_per_ms=gemm_rate,
        nccl_latency_ms=ranks.get("nccl_latency_ms", BUILTIN.nccl_latency_ms),
        nccl_bytes_per_ms=ranks.get("nccl_bytes_per_ms", BUILTIN.nccl_bytes_per_ms),
        copy_engine_latency_ms=ranks.get("copy_engine_latency_ms", BUILTIN.copy_engine_latency_ms),
        copy_engine_bytes_per_ms=ranks.get("copy_engine_bytes_per_ms", BUILTIN.copy_engine_bytes_per_ms),
        barrier_ms=ranks.get("barrier_ms", BUILTIN.barrier_ms),
        host_ms_per_op=host,
    )
    return constants, ranks.get("samples", {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hir-calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, help="devices of the multi-GPU measurements (default: every visible GPU)")
    parser.add_argument("--out", type=Path, help=f"where to write the constants (default: {cache_path()})")
    parser.add_argument("--print-only", action="store_true", help="print the constants, write nothing")
    parser.add_argument("--ranks-part", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ranks_part is not None:
        measure_ranks(args.ranks_part)
        return 0
    if not torch.cuda.is_available():
        print("hir-calibrate: no CUDA GPU here; the cost model uses the built-in constants", file=sys.stderr)
        return 1
    gpus = args.gpus or torch.cuda.device_count()
    constants, samples = calibrate(gpus)
    print(constants.to_json(), end="")
    if samples:
        print(f"samples: {json.dumps(samples)}")
    if not args.print_only:
        print(f"written to {save_constants(constants, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
