"""
All-gather + GEMM (column-parallel linear layer) on D GPUs, in one run and on the same tensors:

  gemm        C = A @ B on the already gathered A (no communication)
  allgather   NCCL all-gather of the A shards alone
  ag+gemm     all-gather, then GEMM, on one stream (no overlap)
  torch-fused torch.ops.symm_mem.fused_all_gather_matmul
  hir:<p>     the fusion module below lowered by `hir-opt -p <p>` and run by hir's runtime

With --cuda-graph, every hir variant also runs as a CUDA graph (`hir:<p> graph`: captured at the
first call, then replayed on its static input buffers), and so does AG then GEMM (`ag+gemm graph`,
captured by hand), so that both sides are measured without host overhead.

Each rank holds A_shard [M/D, K] and its own B [K, N] (N per rank); C [M, N]. Every result is
checked against A_full @ B. Times are CUDA-event medians over repetitions, each started after a
barrier; the table reports the max over ranks of the per-rank median.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python -m torch.distributed.run --nproc-per-node 2 benchmarks/ag_gemm.py

Output (rank 0), per size: `max(GEMM, AG)` in ms, then one line per variant: its name, ms, x of
max(GEMM, AG), x of torch-fused, and in brackets the relative L2 error against A_full @ B.
`--profile DIR` writes a torch.profiler trace of one hir run to DIR/ag_gemm_trace.json and its
timeline to DIR/ag_gemm_timeline.png (with matplotlib). benchmarks/run_all.py runs the published
configurations.

Schedule variants are pipeline options: `stream-lowering{backend=copy-engine comm-priority=high}:1`
puts the copy-engine's comm stream at high priority, `stream-lowering{join=chain}:2:chunks=2`
joins the worker streams into each other instead of into the caller's stream in every iteration,
`intermediates=whole` allocates the gathered chunks whole instead of as a ring of one per stream.
`stream-lowering{backend=ring}:2:chunks=2` gathers each chunk with D-1 collective-permute steps
(a ring of NCCL sends and receives) instead of one NCCL all-gather.
`--nccl-high-priority` gives the NCCL collectives (torch's internal streams) high priority, for
the whole run: the baselines and every variant.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory  # registers torch.ops.symm_mem

import hir
from hir.frontend.autotune import time_once
from hir.runtime.distributed import ProcessGroupCommunicator as Communicator
from hir.runtime.distributed import enable_symmetric_memory

T = TypeVar("T")

# torch 2.13 renamed the tensor collectives (the old names warn once per rank); older torch has only those.
all_gather_single = getattr(dist, "all_gather_single", dist.all_gather_into_tensor)

FUSION_MODULE = """
func.func @main(%a: tensor<{D}x{MD}x{K}x{T}, #fusion.parallel<[didx, serial, serial], mesh = [{MESH}]>>,
                %b: tensor<{K}x{N}x{T}>)
    -> tensor<{D}x{MD}x{N}x{T}, #fusion.parallel<[stream, serial, serial]>> {{
  %c = fusion.matmul %a, %b : tensor<{D}x{MD}x{K}x{T}, #fusion.parallel<[didx, serial, serial], mesh = [{MESH}]>>, tensor<{K}x{N}x{T}> -> tensor<{D}x{MD}x{N}x{T}, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<{D}x{MD}x{N}x{T}, #fusion.parallel<[stream, serial, serial]>>
}}
"""

# The collective-based form: S chunks, each all-gathered (one NCCL all-gather) then multiplied.
CHUNKED_MODULE = """
func.func @main(%a: tensor<{S}x{D}x{MSD}x{K}x{T}, #fusion.parallel<[serial, didx, serial, serial], mesh = [{MESH}]>>,
                %b: tensor<{K}x{N}x{T}>)
    -> tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, serial, serial, serial]>> {{
  %c = fusion.matmul %a, %b : tensor<{S}x{D}x{MSD}x{K}x{T}, #fusion.parallel<[serial, didx, serial, serial], mesh = [{MESH}]>>, tensor<{K}x{N}x{T}> -> tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, serial, serial, serial]>>
}}
"""

DTYPES = {"bf16": (torch.bfloat16, "bf16"), "f16": (torch.float16, "f16"), "f32": (torch.float32, "f32")}


def timed(fn: Callable[[], object], reps: int, warmup: int, device: str = "cuda") -> float:
    """
    Median ms of `fn`, each repetition after a barrier, measured with CUDA events (wall clock
    on CPU, for the gloo smoke runs of the benchmarks).

    Not triton.testing.do_bench or torch.utils.benchmark.Timer: do_bench and Timer's autorange
    pick how many times to run `fn` from a per-process estimate, and a collective must run equally
    often on every rank (else the job hangs); Timer.timeit(n) fixes the count but times n runs
    back to back, where each repetition here starts after a barrier, so that it times the ranks
    working together rather than one rank waiting out another's previous repetition.
    """
    for _ in range(warmup):
        fn()
    return statistics.median([time_once(fn, torch.device(device), dist.barrier) for _ in range(reps)])


GEMM_FUNCTIONS = ("torch.matmul", "torch.mm", "torch.bmm", "torch.addmm", "F.linear")
"""The functions whose calls start a GEMM: those of a GEMM step (runtime/kernels.py), and the
`F.linear` an eager module calls."""


@contextlib.contextmanager
def gemm_starts() -> Iterator[list[int]]:
    """
    While active, the host time (`time.perf_counter_ns`) at which each call of `GEMM_FUNCTIONS`
    starts is appended to the list it yields. Not torch.profiler: it records every torch op (and
    the runtime adds a range per hir op while one records), which costs microseconds an op before
    the first GEMM, the very time measured; this wraps the GEMM calls alone.
    """
    starts: list[int] = []
    owners = {"torch": torch, "F": torch.nn.functional}
    originals = {name: getattr(owners[name.split(".")[0]], name.split(".")[1]) for name in GEMM_FUNCTIONS}

    def clocked(original: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            starts.append(time.perf_counter_ns())
            return original(*args, **kwargs)

        return call

    for name, original in originals.items():
        owner, attribute = name.split(".")
        setattr(owners[owner], attribute, clocked(original))
    try:
        yield starts
    finally:
        for name, original in originals.items():
            owner, attribute = name.split(".")
            setattr(owners[owner], attribute, original)


def timed_interleaved(
    fns: Mapping[str, Callable[[], object]], reps: int, warmup: int, device: str | torch.device = "cuda"
) -> dict[str, float]:
    """
    Median ms of each of `fns`, timed together: `warmup` rounds, then `reps` rounds, in each of
    which every variant runs once, in the mapping's order; each timed repetition as `timed` times
    one (after a barrier when torch.distributed is initialized, and a synchronize on a GPU; CUDA
    events on a GPU, the wall clock on CPU).

    Round-robin, not one variant's repetitions after another's: GPU clocks drift by a few percent
    over a minute (power, temperature), and a variant timed in a block would be measured in its
    own phase of that drift; interleaved, every variant sees the same drift. The order is the
    mapping's, so every rank runs the same sequence of calls (and collectives) as long as every
    rank builds `fns` in the same order.
    """
    if reps < 1:
        raise ValueError(f"timed_interleaved: reps must be at least 1, got {reps}")
    where = torch.device(device)
    synchronize_ranks = dist.barrier if dist.is_available() and dist.is_initialized() else _no_barrier
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            samples[name].append(time_once(fn, where, synchronize_ranks))
    return {name: statistics.median(times) for name, times in samples.items()}


def _no_barrier() -> None:
    """One process: nothing to wait for."""


def release_memory(device: str | torch.device) -> None:
    """Between sizes: the variants of the last one collected and, on a GPU, their cached blocks returned."""
    gc.collect()  # compiled variants and captured graphs may sit in reference cycles
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def run_program(
    program: hir.Program,
    inputs: list,
    num_streams: int,
    communicator: Communicator,
    sink: list,
    cuda_graph: bool = False,
) -> None:
    sink[:] = program(inputs, num_streams=num_streams, communicator=communicator, cuda_graph=cuda_graph)


def graph_replay(
    program: hir.Program, inputs: list, num_streams: int, communicator: Communicator, sink: list
) -> Callable[[], None]:
    """
    Captures the program's CUDA graph for these inputs, and returns a run that replays it on the
    graph's own input buffers (no copy in), its outputs into `sink`.
    """
    program(inputs, num_streams=num_streams, communicator=communicator, cuda_graph=True)
    (captured_run,) = program.graphs.values()
    static = captured_run.static_inputs
    return functools.partial(run_program, program, static, num_streams, communicator, sink, cuda_graph=True)


def time_sequence(
    name: str,
    fn: Callable[[], object],
    out: torch.Tensor,
    reference: torch.Tensor,
    args: argparse.Namespace,
    results: dict[str, float],
    errors: dict[str, float],
    device: str = "cuda",
) -> None:
    """An unfused baseline that writes `out`: timed and checked, and with --cuda-graph also replayed."""
    results[name] = timed(fn, args.reps, args.warmup, device)
    errors[name] = relative_error(out, reference)
    if args.cuda_graph:
        out.zero_()  # the replay must write it again
        results[f"{name} graph"] = timed(captured(fn), args.reps, args.warmup)
        errors[f"{name} graph"] = relative_error(out, reference)


def captured(fn: Callable[[], T]) -> Callable[[], T]:
    """
    `fn` captured in a CUDA graph (after a warm-up on a side stream, as torch recommends); returns
    its replay, which returns what `fn` returned under capture (the graph's own output buffers).
    """
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()

    def replay() -> T:
        graph.replay()
        return out

    return replay


def max_over_ranks(value: float, device: str = "cuda") -> float:
    t = torch.tensor([value], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.float() - ref.float()).norm() / ref.float().norm()).item()


def build_program(text: str, pipeline: str) -> hir.Program:
    module = hir.parse(text, "ag_gemm")
    hir.run_pipeline(module, pipeline)
    return hir.compile_program(module)


def init_nccl(high_priority: bool) -> None:
    """The process group of the job; `high_priority`: NCCL's internal streams at high priority."""
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    options = None
    if high_priority:
        options = dist.ProcessGroupNCCL.Options()
        options.is_high_priority_stream = True
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank), pg_options=options)


def add_nccl_priority_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--nccl-high-priority",
        action="store_true",
        help="run NCCL's collectives on high-priority streams (the process group's option), for every variant",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="16384x4096,32768x2048,16384x1024", help="MxN_per_rank list")
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--dtype", default="bf16", choices=DTYPES)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--profile", help="trace one run of a hir variant into this dir (timeline PNG on rank 0)")
    p.add_argument("--profile-variant", type=int, default=1, help="which hir variant to trace (1-based)")
    p.add_argument("--profile-size", type=int, default=1, help="on which size (1-based)")
    p.add_argument(
        "--cuda-graph",
        action="store_true",
        help="also run each hir variant, and AG then GEMM, as a CUDA graph (replayed)",
    )
    p.add_argument(
        "--variants",
        default="stream-lowering:2",
        help="comma list of PIPELINE:NUM_STREAMS[:chunks=S] for the hir programs",
    )
    add_nccl_priority_flag(p)
    return p


def main() -> None:
    args = build_parser().parse_args()

    init_nccl(args.nccl_high_priority)
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype, type_name = DTYPES[args.dtype]
    enable_symmetric_memory(dist.group.WORLD.group_name)
    communicator = Communicator(rank, world)
    rows = []
    for size_number, size in enumerate(args.sizes.split(","), start=1):
        M, N = (int(x) for x in size.split("x"))
        rows.append((M, N, *measure(M, N, args, dtype, type_name, communicator, size_number)))

    if rank == 0:
        print_table(rows, args.k, args.dtype, world, args.nccl_high_priority)
    dist.destroy_process_group()


def measure(
    M: int,
    N: int,
    args: argparse.Namespace,
    dtype: torch.dtype,
    type_name: str,
    communicator: Communicator,
    size_number: int = 1,
) -> tuple[dict[str, float], dict[str, float]]:
    """Times and relative errors of every variant for one size, maxed over ranks."""
    rank, world = dist.get_rank(), dist.get_world_size()
    group_name = dist.group.WORLD.group_name
    mesh = ", ".join(str(d) for d in range(world))
    K = args.k
    gen = torch.Generator(device="cuda").manual_seed(1234)
    A_full = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)  # the same on every rank
    B = torch.randn(K, N, device="cuda", dtype=dtype, generator=torch.Generator(device="cuda").manual_seed(rank))
    A_shard = A_full.chunk(world)[rank].contiguous()
    reference = A_full @ B
    A_gather = torch.empty_like(A_full)
    C = torch.empty(M, N, device="cuda", dtype=dtype)
    results: dict[str, float] = {}
    errors: dict[str, float] = {}

    results["gemm"] = timed(lambda: torch.mm(A_full, B, out=C), args.reps, args.warmup)
    errors["gemm"] = relative_error(C, reference)
    results["allgather"] = timed(lambda: all_gather_single(A_gather, A_shard), args.reps, args.warmup)
    errors["allgather"] = relative_error(A_gather, A_full)

    def ag_then_gemm() -> None:
        all_gather_single(A_gather, A_shard)
        torch.mm(A_gather, B, out=C)

    time_sequence("ag+gemm", ag_then_gemm, C, reference, args, results, errors)

    fused_out: list[torch.Tensor] = []

    def fused() -> None:
        fused_out[:] = torch.ops.symm_mem.fused_all_gather_matmul(A_shard, [B], 0, group_name)[1]

    try:
        results["torch-fused"] = timed(fused, args.reps, args.warmup)
        errors["torch-fused"] = relative_error(fused_out[0], reference)
    except Exception as err:  # report and go on: the baseline may be missing on this build
        if rank == 0:
            print(f"torch-fused failed: {err}")

    for number, variant in enumerate(args.variants.split(","), start=1):
        pipeline, num_streams, *rest = variant.split(":")
        chunks = int(rest[0].removeprefix("chunks=")) if rest else 0
        if chunks:
            text = CHUNKED_MODULE.format(S=chunks, D=world, MSD=M // (chunks * world), K=K, N=N, T=type_name, MESH=mesh)
            a_local = _chunked_shard(A_full, chunks, world, rank)
        else:
            text = FUSION_MODULE.format(D=world, MD=M // world, K=K, N=N, T=type_name, MESH=mesh)
            a_local = A_shard.view(1, M // world, K)
        program = build_program(text, pipeline)
        communicator.prepare(program.meshes)
        name = f"hir:{variant}"
        outputs: list[torch.Tensor] = []
        run = functools.partial(run_program, program, [a_local, B], int(num_streams), communicator, outputs)
        results[name] = timed(run, args.reps, args.warmup)
        errors[name] = relative_error(outputs[0].reshape(M, N), reference)
        if args.profile and number == args.profile_variant and size_number == args.profile_size:
            profile_run(run, args.profile, f"{name} M={M} N={N} K={K}", rank)
        if args.cuda_graph:
            replayed: list[torch.Tensor] = []
            replay = graph_replay(program, [a_local, B], int(num_streams), communicator, replayed)
            results[f"{name} graph"] = timed(replay, args.reps, args.warmup)
            errors[f"{name} graph"] = relative_error(replayed[0].reshape(M, N), reference)

    return {k: max_over_ranks(v) for k, v in results.items()}, {k: max_over_ranks(v) for k, v in errors.items()}


def profile_run(run: Callable[[], object], out_dir: str, title: str, rank: int, name: str = "ag_gemm") -> None:
    """A torch.profiler trace of one run, and on rank 0 its timeline as a PNG: DIR/NAME_trace.json, DIR/NAME_timeline.png."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        dist.barrier()
        run()
        torch.cuda.synchronize()
    if rank == 0:
        trace = os.path.join(out_dir, f"{name}_trace.json")
        prof.export_chrome_trace(trace)
        from timeline import PlottingUnavailable, render

        try:
            render(trace, os.path.join(out_dir, f"{name}_timeline.png"), title)
        except PlottingUnavailable as err:  # matplotlib is optional: the trace opens in Perfetto too
            print(f"trace in {trace}; no timeline PNG ({err})")


def _chunked_shard(A_full: torch.Tensor, chunks: int, world: int, rank: int) -> torch.Tensor:
    """A[S, D, M/(S*D), K] layout: chunk s of the gathered A is rows [s*M/S, (s+1)*M/S)."""
    M, K = A_full.shape
    return A_full.view(chunks, world, M // (chunks * world), K)[:, rank : rank + 1].contiguous()


def exposed(ms: float, gemm_ms: float, collective_ms: float) -> float:
    """The share of the collective a program does not hide: (t - t_GEMM) / t_collective."""
    return (ms - gemm_ms) / collective_ms


def print_table(rows: list, K: int, dtype: str, world: int, nccl_high_priority: bool = False) -> None:
    nccl = "; NCCL streams at high priority" if nccl_high_priority else ""
    print(f"\nAG+GEMM, D={world}, K={K}, {dtype}{nccl}; ms (max over ranks of per-rank median); rel. error in []")
    for M, N, results, errors in rows:
        bound = max(results["gemm"], results["allgather"])
        print(f"\nM={M} N/rank={N}: max(GEMM, AG) = {bound:.3f} ms")
        fused = results.get("torch-fused")
        for name, ms in results.items():
            extra = f"  x{ms / bound:.2f} of max(GEMM,AG)"
            if fused:
                extra += f"  x{ms / fused:.2f} of torch-fused"
            if name.startswith(("hir", "ag+gemm", "torch-fused")):
                extra += f"  exposed {exposed(ms, results['gemm'], results['allgather']):.2f}"
            print(f"  {name:<64} {ms:8.3f}{extra}  [{errors[name]:.1e}]")


if __name__ == "__main__":
    main()
