"""
matmul + all-reduce (row-parallel linear layer, replicated output) on D GPUs, in one run and on the
same tensors:

  gemm            the local partial product A_r @ B_r  [M, N]
  allreduce       NCCL all-reduce of the partial products alone
  gemm+ar         GEMM, then all-reduce, on one stream (no overlap)
  gemm+symm-ar    GEMM into symmetric memory, then torch.ops.symm_mem.two_shot_all_reduce_
                  (torch has no fused matmul + all-reduce)
  hir ...         the fusion module below (S chunks, `fusion.sum` of the matmul over the devices,
                  replicated) lowered with `hir-opt -p PIPELINE` and run by hir's runtime with
                  NUM_STREAMS compute streams; a variant is PIPELINE:NUM_STREAMS:chunks=S

Rank r holds A_r [M, K/D] and B_r [K/D, N]; every rank gets sum_r A_r @ B_r. Every result is
checked against that sum. Times and output as in gemm_rs.py, the ratios against gemm+ar:

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python -m torch.distributed.run --nproc-per-node 2 benchmarks/matmul_ar.py
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
from ag_gemm import DTYPES, relative_error, time_sequence, timed
from gemm_rs import (
    Report,
    Target,
    Variant,
    add_common_arguments,
    maxed_over_ranks,
    row_parallel_operands,
    run_benchmark,
    time_variants,
)

from hir.runtime.distributed import ProcessGroupCommunicator as Communicator

FUSION_MODULE = """
func.func @main(%a: tensor<{S}x{D}x{MS}x{KD}x{T}, #fusion.parallel<[serial, didx, serial, serial], mesh = [{MESH}]>>,
                %b: tensor<{D}x{KD}x{N}x{T}, #fusion.parallel<[didx, serial, serial], mesh = [{MESH}]>>)
    -> tensor<{S}x{MS}x{N}x{T}, #fusion.parallel<[stream, serial, serial], mesh = [{MESH}]>> {{
  %p = fusion.matmul %a, %b : tensor<{S}x{D}x{MS}x{KD}x{T}, #fusion.parallel<[serial, didx, serial, serial], mesh = [{MESH}]>>, tensor<{D}x{KD}x{N}x{T}, #fusion.parallel<[didx, serial, serial], mesh = [{MESH}]>> -> tensor<{S}x{D}x{MS}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial], mesh = [{MESH}]>>
  %c = fusion.sum %p dims = [1] : tensor<{S}x{D}x{MS}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial], mesh = [{MESH}]>> -> tensor<{S}x{MS}x{N}x{T}, #fusion.parallel<[stream, serial, serial], mesh = [{MESH}]>>
  func.return %c : tensor<{S}x{MS}x{N}x{T}, #fusion.parallel<[stream, serial, serial], mesh = [{MESH}]>>
}}
"""

VARIANTS = (
    "stream-lowering:2:chunks=2",
    "stream-lowering{backend=copy-engine}:1:chunks=2",
    "stream-lowering{backend=copy-engine}:1:chunks=1",
    "stream-lowering{backend=copy-engine}:2:chunks=2",
    "stream-lowering{backend=copy-engine}:1:chunks=4",
    "stream-lowering{backend=copy-engine chunks=2}:1:chunks=2",
    "stream-lowering{backend=ring}:2:chunks=2",
)
"""NCCL per chunk; the copy-engine lowering in 2 chunks (its all-gather of chunk i overlaps the GEMMs
of chunk i+1), in 1, in 2 on 2 streams, in 4; in 2 with the own GEMM and its adds in 2 pieces; the
ring all-reduce (ring reduce-scatter then ring all-gather of collective-permute steps) per chunk."""
REPORT = Report(
    "matmul+AR",
    "matmul_ar",
    "allreduce",
    "gemm+ar",
    VARIANTS[1],
    {size: (Target("gemm+ar", 0.85),) for size in ((16384, 4096), (32768, 2048), (16384, 1024))},
)
"""The target of matmul + AR on 2x H200: x of GEMM then all-reduce."""


def measure(M: int, N: int, args: argparse.Namespace, communicator: Communicator, profile: bool) -> tuple[dict, dict]:
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype, type_name = DTYPES[args.dtype]
    device = args.device
    KD = args.k // world
    operands = row_parallel_operands(M, N, args)
    A, B, partial, full = operands.A, operands.B, operands.partial, operands.full
    reference = full.to(dtype)
    out = torch.empty(M, N, device=device, dtype=dtype)
    results: dict[str, float] = {}
    errors: dict[str, float] = {}
    results["gemm"] = timed(lambda: torch.mm(A, B, out=out), args.reps, args.warmup, device)
    errors["gemm"] = relative_error(out, partial)

    work = partial.clone()  # reduced in place rep after rep (it grows, well within range); checked once after
    results["allreduce"] = timed(lambda: dist.all_reduce(work), args.reps, args.warmup, device)
    work.copy_(partial)
    dist.all_reduce(work)
    errors["allreduce"] = relative_error(work, reference)

    def gemm_then_ar() -> None:
        torch.mm(A, B, out=out)
        dist.all_reduce(out)

    time_sequence("gemm+ar", gemm_then_ar, out, reference, args, results, errors, device)

    if device == "cuda":
        try:
            group_name = dist.group.WORLD.group_name
            symmetric = symm_mem.empty(M, N, device=device, dtype=dtype)
            symm_mem.rendezvous(symmetric, group_name)

            def gemm_then_symm_ar() -> None:
                torch.mm(A, B, out=symmetric)
                torch.ops.symm_mem.two_shot_all_reduce_(symmetric, "sum", group_name)

            results["gemm+symm-ar"] = timed(gemm_then_symm_ar, args.reps, args.warmup)
            errors["gemm+symm-ar"] = relative_error(symmetric, reference)
        except Exception as err:  # report and go on: the baseline may be missing on this build
            if rank == 0:
                print(f"gemm+symm-ar failed: {err}")

    mesh = ", ".join(str(d) for d in range(world))

    def module(S: int) -> str:
        return FUSION_MODULE.format(S=S, D=world, MS=M // S, KD=KD, N=N, T=type_name, MESH=mesh)

    def inputs(S: int) -> list[torch.Tensor]:
        # Global A[s, d', r, k] = A_{d'}[s*M/S + r, k]: this rank's slice d' = rank.
        return [A.view(S, 1, M // S, KD), B.view(1, KD, N)]

    def check(S: int, output: torch.Tensor) -> float:
        return relative_error(output.reshape(M, N), reference)

    variants = [Variant.parse(v) for v in args.variants.split(",")]
    title = f"matmul+AR M={M} N={N} K={args.k}" if profile else ""
    time_variants(variants, module, inputs, check, args, communicator, results, errors, title, REPORT)
    return maxed_over_ranks(results, errors, device)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(p, ",".join(VARIANTS))
    p.add_argument("--sizes", default="16384x4096,32768x2048,16384x1024", help="MxN list")
    return p


def main() -> None:
    run_benchmark(REPORT, build_parser(), measure)


if __name__ == "__main__":
    main()
