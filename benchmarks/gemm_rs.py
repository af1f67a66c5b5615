"""
GEMM + reduce-scatter (row-parallel linear layer) on D GPUs, in one run and on the same tensors:

  gemm            the local partial product A_r @ B_r  [M, N]
  reduce-scatter  NCCL reduce-scatter of the partial products alone
  gemm+rs         GEMM, then reduce-scatter, on one stream (no overlap)
  torch-fused     torch.ops.symm_mem.fused_matmul_reduce_scatter
  hir ...         the fusion module below (S chunks, `fusion.sum` of the matmul over the devices)
                  lowered with `hir-opt -p PIPELINE` and run by hir's runtime with NUM_STREAMS
                  compute streams; a variant is PIPELINE:NUM_STREAMS:chunks=S

Rank r holds A_r [M, K/D] and B_r [K/D, N]; the result is sum_r A_r @ B_r, scattered by rows.
Every result is checked against that sum. CUDA-event medians after a barrier, max over ranks
(`ag_gemm.timed` says why the loop is ours).

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python -m torch.distributed.run --nproc-per-node 2 benchmarks/gemm_rs.py

Output (rank 0), per size: `max(GEMM, RS)` in ms, then one line per variant: its name (hir
variants: backend, S, streams and the pass options), ms, x of max(GEMM, RS), x of torch-fused, and
in brackets the relative L2 error against the sum (WRONG after it when above 3e-2); then the
targets met or missed by the default copy-engine variant and by the best hir variant.
`--profile DIR` writes the timeline of one hir run (DIR/gemm_rs_timeline.png, with matplotlib).
`--first-launch` also prints, per hir variant, the host microseconds from entering the program's
call to the start of its first GEMM call (`first_launch_us`; median of --reps calls, max over
ranks): the runtime's latency before the pipeline's first kernel.
`--device cpu` runs the same code on CPU processes over gloo (f32, wall-clock times, no
torch-fused): a check that the benchmark runs, not a measurement.
Schedule variants are pipeline options (`stream-lowering{join=chain}:2:chunks=2`, `comm-priority`
for a backend with a comm stream; ag_gemm.py's docstring lists them); `--nccl-high-priority`
gives NCCL's collectives high-priority streams for the whole run.
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory  # registers torch.ops.symm_mem
from ag_gemm import (
    DTYPES,
    GEMM_FUNCTIONS,
    add_nccl_priority_flag,
    build_program,
    exposed,
    gemm_starts,
    graph_replay,
    init_nccl,
    max_over_ranks,
    profile_run,
    relative_error,
    run_program,
    time_sequence,
    timed,
)

import hir
from hir.runtime.distributed import ProcessGroupCommunicator as Communicator
from hir.runtime.distributed import enable_symmetric_memory

# torch 2.13 renamed the tensor collectives (the old names warn once per rank); older torch has only those.
reduce_scatter_single = getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)

FUSION_MODULE = """
func.func @main(%a: tensor<{S}x{D}x{D}x{MSD}x{KD}x{T}, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [{MESH}]>>,
                %b: tensor<1x{D}x1x{KD}x{N}x{T}, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [{MESH}]>>)
    -> tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial], mesh = [{MESH}]>> {{
  %p = fusion.matmul %a, %b : tensor<{S}x{D}x{D}x{MSD}x{KD}x{T}, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [{MESH}]>>, tensor<1x{D}x1x{KD}x{N}x{T}, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [{MESH}]>> -> tensor<{S}x{D}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [{MESH}]>>
  %c = fusion.sum %p dims = [1] : tensor<{S}x{D}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [{MESH}]>> -> tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial], mesh = [{MESH}]>>
  func.return %c : tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial], mesh = [{MESH}]>>
}}
"""

VARIANTS = (
    "stream-lowering:2:chunks=2",
    "stream-lowering{backend=copy-engine}:1:chunks=1",
    "stream-lowering{backend=copy-engine release=end}:1:chunks=1",
    "stream-lowering{backend=copy-engine chunks=2}:1:chunks=1",
    "stream-lowering{backend=copy-engine chunks=4}:1:chunks=1",
    "stream-lowering{backend=copy-engine}:1:chunks=2",
    "stream-lowering{backend=copy-engine}:2:chunks=2",
    "stream-lowering{backend=copy-engine}:1:chunks=4",
    "stream-lowering{backend=ring}:2:chunks=2",
)
"""NCCL per chunk; the default copy-engine lowering in one chunk; the same with the release barrier
at the end, with the own GEMM and its adds in 2 and 4 pieces; in 2 chunks on 1 and 2 streams; in 4;
the ring reduce-scatter (D-1 collective-permute steps and adds) per chunk."""
DEFAULT_VARIANT = VARIANTS[1]
WRONG = 3e-2
"""Relative L2 error above which a result is wrong rather than rounded (bf16 partial sums: ~1e-2)."""


BACKEND_NAMES = {"nccl": "nccl", "copy-engine": "ce", "ring": "ring"}
"""How a variant's name shows its `backend` option."""


@dataclass(frozen=True)
class Variant:
    """A hir variant `PIPELINE:NUM_STREAMS:chunks=S`: how the module is lowered and run."""

    text: str
    pipeline: str
    num_streams: int
    chunks: int

    @classmethod
    def parse(cls, text: str) -> Variant:
        pipeline, streams, chunks = text.rsplit(":", 2)
        return cls(text, pipeline, int(streams), int(chunks.removeprefix("chunks=")))

    @property
    def name(self) -> str:
        """`hir ce S=1` (copy-engine, one chunk), `hir nccl S=2 2 streams`, `hir ring S=2 ...`, with the pass options."""
        options = dict(re.findall(r"([\w-]+)=([\w-]+)", self.pipeline.partition("{")[2]))
        backend = BACKEND_NAMES.get(options.pop("backend", "nccl"), "nccl")
        words = [f"hir {backend} S={self.chunks}"]
        if self.num_streams > 1:
            words.append(f"{self.num_streams} streams")
        if "chunks" in options:
            words.append(f"pieces={options.pop('chunks')}")
        words += [f"{k}={v}" for k, v in options.items()]
        return " ".join(words)


@dataclass(frozen=True)
class Target:
    """A target of a size: at most `factor` times the named baseline (`max` or a variant name)."""

    baseline: str
    factor: float


@dataclass(frozen=True)
class Report:
    """What a benchmark's table compares: its title, the collective alone, the baseline, the targets."""

    title: str
    name: str
    """Of the trace and timeline files."""
    collective: str
    baseline: str
    """The result the last column compares with (torch's fused op, or the unfused sequence)."""
    default_variant: str
    targets: dict[tuple[int, int], tuple[Target, ...]]


REPORT = Report(
    "GEMM+RS",
    "gemm_rs",
    "reduce-scatter",
    "torch-fused",
    DEFAULT_VARIANT,
    {
        (16384, 4096): (Target("torch-fused", 0.80), Target("max", 1.15)),
        (32768, 2048): (Target("torch-fused", 0.80), Target("max", 1.15)),
        (16384, 1024): (Target("max", 1.30),),
    },
)
"""The targets of GEMM + RS on 2x H200: x of torch's fused op, x of max(GEMM, RS)."""


def setup(device: str, nccl_high_priority: bool = False) -> tuple[int, Communicator]:
    """
    Process group (NCCL with symmetric memory on CUDA, its streams at high priority with
    `nccl_high_priority`; gloo on CPU): the world size, the communicator.
    """
    if device == "cuda":
        init_nccl(nccl_high_priority)
        enable_symmetric_memory(dist.group.WORLD.group_name)
    else:
        dist.init_process_group("gloo")
    world = dist.get_world_size()
    return world, Communicator(dist.get_rank(), world)


def time_variants(
    variants: list[Variant],
    make_module: Callable[[int], str],
    make_inputs: Callable[[int], list[torch.Tensor]],
    check: Callable[[int, torch.Tensor], float],
    args: argparse.Namespace,
    communicator: Communicator,
    results: dict[str, float],
    errors: dict[str, float],
    profile_title: str,
    report: Report,
) -> None:
    """Times every hir variant on the module and inputs for its S, and checks its output."""
    for number, variant in enumerate(variants, start=1):
        program = build_program(make_module(variant.chunks), variant.pipeline)
        communicator.prepare(program.meshes)
        outputs: list[torch.Tensor] = []
        inputs = make_inputs(variant.chunks)
        run = functools.partial(run_program, program, inputs, variant.num_streams, communicator, outputs)
        results[variant.name] = timed(run, args.reps, args.warmup, args.device)
        errors[variant.name] = check(variant.chunks, outputs[0])
        if args.first_launch:
            us = first_launch_us(program, inputs, variant.num_streams, communicator, args.reps, args.device)
            results[variant.name + FIRST_LAUNCH] = us
            errors[variant.name + FIRST_LAUNCH] = errors[variant.name]
        if args.profile and number == args.profile_variant and profile_title:
            profile_run(run, args.profile, f"{variant.name}: {profile_title}", dist.get_rank(), report.name)
        if args.cuda_graph:
            replayed: list[torch.Tensor] = []
            replay = graph_replay(program, inputs, variant.num_streams, communicator, replayed)
            results[f"{variant.name} graph"] = timed(replay, args.reps, args.warmup)
            errors[f"{variant.name} graph"] = check(variant.chunks, replayed[0])


FIRST_LAUNCH = " @first-launch"
"""Marks a result that is the microseconds to a variant's first GEMM (`--first-launch`), not its ms."""


def first_launch_us(
    program: hir.Program, inputs: list, num_streams: int, communicator: Communicator, calls: int, device: str
) -> float:
    """
    Median host microseconds from entering the program's call to the start of its first GEMM call,
    over `calls` calls, each after a barrier with the device idle (as `timed`'s).
    """
    delays = []
    for _ in range(calls):
        dist.barrier()
        if device == "cuda":
            torch.cuda.synchronize()
        with gemm_starts() as starts:
            entered = time.perf_counter_ns()
            program(inputs, num_streams=num_streams, communicator=communicator)
        if not starts:
            raise SystemExit(f"--first-launch: the program called none of {', '.join(GEMM_FUNCTIONS)}")
        delays.append((starts[0] - entered) / 1e3)
    if device == "cuda":
        torch.cuda.synchronize()
    return statistics.median(delays)


@dataclass(frozen=True)
class RowParallelOperands:
    """This rank's A_r [M, K/D] and B_r [K/D, N], its partial product, and the f32 sum over the ranks."""

    A: torch.Tensor
    B: torch.Tensor
    partial: torch.Tensor
    full: torch.Tensor


def row_parallel_operands(M: int, N: int, args: argparse.Namespace) -> RowParallelOperands:
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = DTYPES[args.dtype][0]
    gen = torch.Generator(device=args.device).manual_seed(100 + rank)
    A = torch.randn(M, args.k // world, device=args.device, dtype=dtype, generator=gen)
    B = torch.randn(args.k // world, N, device=args.device, dtype=dtype, generator=gen)
    partial = A @ B
    full = partial.to(torch.float32, copy=True)  # a copy also when the partial is f32
    dist.all_reduce(full)
    return RowParallelOperands(A, B, partial, full)


def maxed_over_ranks(results: dict[str, float], errors: dict[str, float], device: str) -> tuple[dict, dict]:
    """The times and errors of every rank's measurement, the largest of each over the ranks."""
    return (
        {k: max_over_ranks(v, device) for k, v in results.items()},
        {k: max_over_ranks(v, device) for k, v in errors.items()},
    )


def measure(M: int, N: int, args: argparse.Namespace, communicator: Communicator, profile: bool) -> tuple[dict, dict]:
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype, type_name = DTYPES[args.dtype]
    device = args.device
    KD = args.k // world
    operands = row_parallel_operands(M, N, args)
    A, B, partial, full = operands.A, operands.B, operands.partial, operands.full
    reference = full.chunk(world)[rank].to(dtype)  # rows [rank*M/D, (rank+1)*M/D)
    scratch = torch.empty(M, N, device=device, dtype=dtype)
    out = torch.empty(M // world, N, device=device, dtype=dtype)
    results: dict[str, float] = {}
    errors: dict[str, float] = {}
    results["gemm"] = timed(lambda: torch.mm(A, B, out=scratch), args.reps, args.warmup, device)
    errors["gemm"] = relative_error(scratch, partial)
    results["reduce-scatter"] = timed(lambda: reduce_scatter_single(out, partial), args.reps, args.warmup, device)
    errors["reduce-scatter"] = relative_error(out, reference)

    def gemm_then_rs() -> None:
        torch.mm(A, B, out=scratch)
        reduce_scatter_single(out, scratch)

    time_sequence("gemm+rs", gemm_then_rs, out, reference, args, results, errors, device)
    fused: list[torch.Tensor] = []
    group_name = dist.group.WORLD.group_name

    def torch_fused() -> None:
        fused[:] = [torch.ops.symm_mem.fused_matmul_reduce_scatter(A, B, "sum", 0, group_name)]

    if device == "cuda":
        try:
            results["torch-fused"] = timed(torch_fused, args.reps, args.warmup)
            errors["torch-fused"] = relative_error(fused[0], reference)
        except Exception as err:  # report and go on: the baseline may be missing on this build
            if rank == 0:
                print(f"torch-fused failed: {err}")

    mesh = ", ".join(str(d) for d in range(world))

    def module(S: int) -> str:
        return FUSION_MODULE.format(S=S, D=world, MSD=M // (S * world), KD=KD, N=N, T=type_name, MESH=mesh)

    def inputs(S: int) -> list[torch.Tensor]:
        # Global A[s, d', d, r, k] = A_{d'}[s*M/S + d*M/(S*D) + r, k]: this rank's slice d' = rank.
        return [A.view(S, world, M // (S * world), KD).unsqueeze(1).contiguous(), B.view(1, 1, 1, KD, N)]

    def check(S: int, output: torch.Tensor) -> float:
        # This rank holds rows {s*M/S + rank*M/(S*D) + r} of the sum.
        rows = full.view(S, world, M // (S * world), N)[:, rank].to(dtype)
        return relative_error(output.reshape(S, M // (S * world), N), rows)

    variants = [Variant.parse(v) for v in args.variants.split(",")]
    title = f"GEMM+RS M={M} N={N} K={args.k}" if profile else ""
    time_variants(variants, module, inputs, check, args, communicator, results, errors, title, REPORT)
    return maxed_over_ranks(results, errors, device)


def print_rows(report: Report, rows: list, args: argparse.Namespace, world: int) -> None:
    """The table of each size, then the targets met or missed (see the module docstring)."""
    nccl = "; NCCL streams at high priority" if args.nccl_high_priority else ""
    print(
        f"\n{report.title}, D={world}, K={args.k}, {args.dtype}{nccl}; ms (max over ranks of per-rank median); "
        "rel. error in []"
    )
    default = Variant.parse(report.default_variant).name
    for M, N, measured, errors in rows:
        results = {k: v for k, v in measured.items() if not k.endswith(FIRST_LAUNCH)}
        bound = max(results["gemm"], results[report.collective])
        print(f"\nM={M} N={N}: max(GEMM, {report.collective}) = {bound:.3f} ms")
        baseline_ms = results.get(report.baseline)
        for name, ms in results.items():
            extra = f"  x{ms / bound:.2f} of max"
            if baseline_ms:
                extra += f"  x{ms / baseline_ms:.2f} of {report.baseline}"
            if name.startswith("hir ") or name.startswith(report.baseline):
                extra += f"  exposed {exposed(ms, results['gemm'], results[report.collective]):.2f}"
            wrong = "  WRONG" if errors[name] > WRONG else ""
            print(f"  {name:<44} {ms:8.3f}{extra}  [{errors[name]:.1e}]{wrong}")
        for name, us in measured.items():
            if name.endswith(FIRST_LAUNCH):
                print(f"  first GEMM launch, {name.removesuffix(FIRST_LAUNCH)}: {us:.1f} us after the call (host)")
        hir = {k: v for k, v in results.items() if k.startswith("hir ") and errors[k] <= WRONG}
        targets = report.targets.get((M, N), ())
        if not hir or not targets:
            continue
        best = min(hir, key=hir.__getitem__)
        for label, name in (("default", default), ("best", best)):
            if name not in hir:
                continue
            verdicts = []
            for target in targets:
                base = bound if target.baseline == "max" else results.get(target.baseline)
                if base is None:
                    verdicts.append(f"no {target.baseline}")
                    continue
                ratio = hir[name] / base
                met = "met" if ratio <= target.factor else "MISSED"
                verdicts.append(f"x{ratio:.2f} of {target.baseline} (<= {target.factor}: {met})")
            print(f"  target, {label} ({name}): " + ", ".join(verdicts))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(p, ",".join(VARIANTS))
    p.add_argument("--sizes", default="16384x4096,32768x2048,16384x1024", help="MxN list")
    return p


def add_common_arguments(p: argparse.ArgumentParser, variants: str) -> None:
    """The flags gemm_rs.py and matmul_ar.py share."""
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--dtype", choices=DTYPES, help="default: bf16 on CUDA, f32 on CPU")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: a gloo smoke run")
    p.add_argument("--variants", default=variants, help="comma list of PIPELINE:NUM_STREAMS:chunks=S")
    p.add_argument("--profile", help="trace one hir run into this dir (timeline PNG on rank 0)")
    p.add_argument("--profile-variant", type=int, default=2, help="which hir variant to trace (1-based)")
    p.add_argument("--profile-size", type=int, default=1, help="on which size (1-based)")
    p.add_argument(
        "--cuda-graph",
        action="store_true",
        help="also run each hir variant, and the unfused sequence, as a CUDA graph (replayed)",
    )
    p.add_argument(
        "--first-launch",
        action="store_true",
        help="also measure each hir variant's host time from the call to its first GEMM (median of --reps calls)",
    )
    add_nccl_priority_flag(p)


def run_sizes(args: argparse.Namespace, measure_size: Callable[..., tuple[dict, dict]]) -> tuple[list, int]:
    """Every size of `--sizes` measured, on every rank."""
    args.dtype = args.dtype or ("bf16" if args.device == "cuda" else "f32")
    if args.nccl_high_priority and args.device != "cuda":
        raise SystemExit("--nccl-high-priority needs --device cuda")
    if args.cuda_graph and args.device != "cuda":
        raise SystemExit("--cuda-graph needs --device cuda")
    world, communicator = setup(args.device, args.nccl_high_priority)
    rows = []
    for number, size in enumerate(args.sizes.split(","), start=1):
        M, N = (int(x) for x in size.split("x"))
        rows.append((M, N, *measure_size(M, N, args, communicator, number == args.profile_size)))
    return rows, world


def run_benchmark(
    report: Report, parser: argparse.ArgumentParser, measure_size: Callable[..., tuple[dict, dict]]
) -> None:
    """The main of gemm_rs.py and matmul_ar.py: every size measured on every rank, the table on rank 0."""
    args = parser.parse_args()
    rows, world = run_sizes(args, measure_size)
    if dist.get_rank() == 0:
        print_rows(report, rows, args, world)
    dist.destroy_process_group()


def main() -> None:
    run_benchmark(REPORT, build_parser(), measure)


if __name__ == "__main__":
    main()
