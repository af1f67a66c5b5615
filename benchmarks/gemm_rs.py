"""
GEMM + reduce-scatter (row-parallel linear layer) on D GPUs, in one run and on the same tensors:

  gemm           the local partial product A_r @ B_r  [M, N]
  reduce-scatter NCCL reduce-scatter of the partial products alone
  gemm+rs        GEMM, then reduce-scatter, on one stream (no overlap)
  torch-fused    torch.ops.symm_mem.fused_matmul_reduce_scatter
  hir:<p>        the fusion module below (S chunks, per-chunk GEMM + reduce-scatter) lowered with
                 `hir-opt -p <p>` and run by hir's runtime

Rank r holds A_r [M, K/D] and B_r [K/D, N]; the result is sum_r A_r @ B_r, scattered by rows.
Every result is checked against that sum. CUDA-event medians after a barrier, max over ranks
(`ag_gemm.timed` says why the loop is ours).

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python -m torch.distributed.run --nproc-per-node 2 benchmarks/gemm_rs.py

Output (rank 0), per size: `max(GEMM, RS)` in ms, then one line per variant: its name, ms, x of
max(GEMM, RS), x of torch-fused, and in brackets the relative L2 error against the sum.
Schedule variants are pipeline options (`stream-lowering{join=chain}:2:chunks=2`, `comm-priority`
for a backend with a comm stream; ag_gemm.py's docstring lists them); `--nccl-high-priority`
gives NCCL's collectives high-priority streams for the whole run.
"""

from __future__ import annotations

import argparse
import functools

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem  # registers torch.ops.symm_mem
from ag_gemm import (
    DTYPES,
    add_nccl_priority_flag,
    build_program,
    init_nccl,
    max_over_ranks,
    relative_error,
    run_program,
    timed,
)

from hir.runtime.distributed import ProcessGroupCommunicator as Communicator

FUSION_MODULE = """
func.func @main(%a: tensor<{S}x{D}x{D}x{MSD}x{KD}x{T}, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [{MESH}]>>,
                %b: tensor<1x{D}x1x{KD}x{N}x{T}, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [{MESH}]>>)
    -> tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial], mesh = [{MESH}]>> {{
  %p = fusion.matmul %a, %b : tensor<{S}x{D}x{D}x{MSD}x{KD}x{T}, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [{MESH}]>>, tensor<1x{D}x1x{KD}x{N}x{T}, #fusion.parallel<[serial, didx, serial, serial, serial], mesh = [{MESH}]>> -> tensor<{S}x{D}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [{MESH}]>>
  %c = fusion.sum %p dims = [1] : tensor<{S}x{D}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial, serial], mesh = [{MESH}]>> -> tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial], mesh = [{MESH}]>>
  func.return %c : tensor<{S}x{D}x{MSD}x{N}x{T}, #fusion.parallel<[stream, didx, serial, serial], mesh = [{MESH}]>>
}}
"""


def measure(M: int, N: int, args: argparse.Namespace, communicator: Communicator) -> tuple[dict, dict]:
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype, type_name = DTYPES[args.dtype]
    KD = args.k // world
    gen = torch.Generator(device="cuda").manual_seed(100 + rank)
    A = torch.randn(M, KD, device="cuda", dtype=dtype, generator=gen)
    B = torch.randn(KD, N, device="cuda", dtype=dtype, generator=gen)
    partial = A @ B
    full = partial.float()
    dist.all_reduce(full)
    reference = full.chunk(world)[rank].to(dtype)  # rows [rank*M/D, (rank+1)*M/D)
    scratch = torch.empty(M, N, device="cuda", dtype=dtype)
    out = torch.empty(M // world, N, device="cuda", dtype=dtype)
    results: dict[str, float] = {}
    errors: dict[str, float] = {}
    results["gemm"] = timed(lambda: torch.mm(A, B, out=scratch), args.reps, args.warmup)
    errors["gemm"] = relative_error(scratch, partial)
    results["reduce-scatter"] = timed(lambda: dist.reduce_scatter_tensor(out, partial), args.reps, args.warmup)
    errors["reduce-scatter"] = relative_error(out, reference)

    def gemm_then_rs() -> None:
        torch.mm(A, B, out=scratch)
        dist.reduce_scatter_tensor(out, scratch)

    results["gemm+rs"] = timed(gemm_then_rs, args.reps, args.warmup)
    errors["gemm+rs"] = relative_error(out, reference)
    fused: list[torch.Tensor] = []
    group_name = dist.group.WORLD.group_name

    def torch_fused() -> None:
        fused[:] = [torch.ops.symm_mem.fused_matmul_reduce_scatter(A, B, "sum", 0, group_name)]

    try:
        results["torch-fused"] = timed(torch_fused, args.reps, args.warmup)
        errors["torch-fused"] = relative_error(fused[0], reference)
    except Exception as err:  # report and go on: the baseline may be missing on this build
        if rank == 0:
            print(f"torch-fused failed: {err}")

    mesh = ", ".join(str(d) for d in range(world))
    for variant in args.variants.split(","):
        pipeline, num_streams, chunks = variant.split(":")
        S = int(chunks.removeprefix("chunks="))
        MSD = M // (S * world)
        text = FUSION_MODULE.format(S=S, D=world, MSD=MSD, KD=KD, N=N, T=type_name, MESH=mesh)
        program = build_program(text, pipeline)
        communicator.prepare(program.meshes)
        # Global A[s, d', d, r, k] = A_{d'}[s*M/S + d*M/(S*D) + r, k]: this rank's slice d' = rank.
        a_local = A.view(S, world, MSD, KD).unsqueeze(1).contiguous()
        b_local = B.view(1, 1, 1, KD, N)
        outputs: list[torch.Tensor] = []
        name = f"hir:{variant}"
        run = functools.partial(run_program, program, [a_local, b_local], int(num_streams), communicator, outputs)
        results[name] = timed(run, args.reps, args.warmup)
        # This rank holds rows {s*M/S + rank*M/(S*D) + r} of the sum.
        rows = full.view(S, world, MSD, N)[:, rank].to(dtype)
        errors[name] = relative_error(outputs[0].reshape(S, MSD, N), rows)
    return {k: max_over_ranks(v) for k, v in results.items()}, {k: max_over_ranks(v) for k, v in errors.items()}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="16384x4096,32768x2048,16384x1024", help="MxN list")
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--dtype", default="bf16", choices=DTYPES)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument(
        "--variants",
        default="stream-lowering:2:chunks=2,stream-lowering:4:chunks=4",
        help="comma list of PIPELINE:NUM_STREAMS:chunks=S for the hir programs",
    )
    add_nccl_priority_flag(p)
    return p


def main() -> None:
    args = build_parser().parse_args()
    init_nccl(args.nccl_high_priority)
    if hasattr(symm_mem, "enable_symm_mem_for_group"):
        symm_mem.enable_symm_mem_for_group(dist.group.WORLD.group_name)
    communicator = Communicator(dist.get_rank(), dist.get_world_size())
    rows = []
    for size in args.sizes.split(","):
        M, N = (int(x) for x in size.split("x"))
        rows.append((M, N, *measure(M, N, args, communicator)))
    if dist.get_rank() == 0:
        world = dist.get_world_size()
        print(
            f"\nGEMM+RS, D={world}, K={args.k}, {args.dtype}{'; NCCL streams at high priority' * args.nccl_high_priority}; "
            "ms (max over ranks of per-rank median); rel. error in []"
        )
        for M, N, results, errors in rows:
            bound = max(results["gemm"], results["reduce-scatter"])
            print(f"\nM={M} N={N}: max(GEMM, RS) = {bound:.3f} ms")
            fused_ms = results.get("torch-fused")
            for name, ms in results.items():
                extra = f"  x{ms / bound:.2f} of max(GEMM,RS)" + (
                    f"  x{ms / fused_ms:.2f} of torch-fused" if fused_ms else ""
                )
                print(f"  {name:<32} {ms:8.3f}{extra}  [{errors[name]:.1e}]")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
