"""
A Megatron-style tensor-parallel transformer layer on D GPUs, written as one nn.Module and
compiled by `hir.compile`, against eager PyTorch and torch.compile's async tensor parallelism, in
one run and on the same tensors:

  x [M/D, H] (sequence parallel: rows sharded) -> LayerNorm -> all-gather -> q, k, v linears
  H -> H/D (column-parallel: this rank's heads) -> causal attention of its heads
  (F.scaled_dot_product_attention) -> linear H/D -> H (row-parallel) -> reduce-scatter -> + x
  -> LayerNorm -> all-gather -> linear H -> 4H/D -> gelu -> linear 4H/D -> H -> reduce-scatter -> + x

  eager          NCCL all-gathers and reduce-scatters, F.linear, torch's fused attention, one stream
  torch-async-tp torch.compile of the same with functional collectives and
                 torch._inductor.config._micro_pipeline_tp = True (fused all-gather + matmul and
                 matmul + reduce-scatter over symmetric memory)
  hir default    `hir.compile(TPLayer, ...)` with layouts (rows "[(stream(S), didx), serial]", the
                 q/k/v/fc1 weights "[didx, serial]", the o/fc2 weights "[serial, didx]") and nothing
                 else: the lowering the cost model picks, replayed as a CUDA graph on a GPU
  hir ...        the same with PIPELINE, run eagerly with NUM_STREAMS; a variant is
                 PIPELINE:NUM_STREAMS:chunks=S (S stream chunks of the rows, each whole sequences)
  ... graph      with --cuda-graph: eager captured in a CUDA graph and replayed, and each hir
                 variant compiled again with cuda_graph=True and the lowering the eager one kept
                 (the same program, replayed)

Every rank builds the same global x [M, H] and weights (one seed); every result is checked
against the module run eagerly on the unsharded x, rows of this rank (relative L2 error in
brackets, WRONG above 3e-2). CUDA-event medians, each repetition after a barrier, max over ranks.
The variants of one size are timed interleaved (round-robin: every round runs each once), so that
GPU clock drift affects them alike.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python -m torch.distributed.run --nproc-per-node 2 benchmarks/tp_layer.py

`--device cpu` runs it on CPU processes over gloo, f32, small sizes and wall-clock times, without
torch-async-tp: a check that the compiled layer matches eager torch, not a measurement.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ag_gemm import captured, release_memory
from tp_mlp import (
    DTYPES,
    CheckedVariants,
    Rows,
    add_hir_variants,
    all_gather_single,
    end_job,
    reduce_scatter_single,
    report,
    start_job,
)

VARIANTS = (
    "default:4:chunks=1",
    "stream-lowering{overlap=never}:1:chunks=1",
    "stream-lowering{backend=copy-engine}:1:chunks=1",
    "stream-lowering{backend=copy-engine}:2:chunks=2",
    "stream-lowering:2:chunks=2",
)
"""`hir.compile`'s defaults; the serial form; the copy-engine lowering in one chunk and in two;
NCCL collectives per chunk in two. Every variant but the default runs eagerly."""


class TPLayer(torch.nn.Module):
    """
    A pre-norm transformer layer as a user writes it, on tokens [B*T, H] (the rows); the layouts
    given to hir.compile make it tensor-parallel. `norm` is "layer" (LayerNorm) or "rms" (RMSNorm).
    """

    def __init__(
        self, hidden: int, heads: int, ffn: int, seq: int, dtype: torch.dtype, device: str, norm: str = "layer"
    ):
        super().__init__()
        Norm = torch.nn.LayerNorm if norm == "layer" else torch.nn.RMSNorm
        self.seq, self.heads = seq, heads
        self.norm1 = Norm(hidden, dtype=dtype, device=device)
        self.norm2 = Norm(hidden, dtype=dtype, device=device)
        self.q, self.k, self.v, self.o = (
            torch.nn.Linear(hidden, hidden, bias=False, dtype=dtype, device=device) for _ in range(4)
        )
        self.fc1 = torch.nn.Linear(hidden, ffn, bias=False, dtype=dtype, device=device)
        self.fc2 = torch.nn.Linear(ffn, hidden, bias=False, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, H = x.shape
        B, T = M // self.seq, self.seq
        h = self.norm1(x)
        q, k, v = (p(h).view(B, T, self.heads, H // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(M, H))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


PARAM_LAYOUTS = {
    "q.weight": "[didx, serial]",
    "k.weight": "[didx, serial]",
    "v.weight": "[didx, serial]",
    "o.weight": "[serial, didx]",
    "fc1.weight": "[didx, serial]",
    "fc2.weight": "[serial, didx]",
}
"""Megatron's cut: q, k, v and fc1 column-parallel (this rank's heads, its block of the FFN), o and
fc2 row-parallel; the norms replicated."""


def local_weights(model: TPLayer, rank: int, world: int) -> dict[str, torch.Tensor]:
    """This rank's blocks of the weights, as PARAM_LAYOUTS cuts them (for the eager baselines)."""
    blocks = {}
    for name, layout in PARAM_LAYOUTS.items():
        w = model.get_parameter(name).detach()
        axis = 0 if layout == "[didx, serial]" else 1
        blocks[name.removesuffix(".weight")] = w.chunk(world, axis)[rank].contiguous()
    return blocks


def _gather(x_shard: torch.Tensor, world: int) -> torch.Tensor:
    x = torch.empty(x_shard.shape[0] * world, x_shard.shape[1], dtype=x_shard.dtype, device=x_shard.device)
    all_gather_single(x, x_shard)
    return x


def _scatter(partial: torch.Tensor, world: int) -> torch.Tensor:
    if partial.device.type == "cpu":  # gloo has no reduce-scatter
        dist.all_reduce(partial)
        return partial.chunk(world)[dist.get_rank()].clone()
    out = torch.empty(partial.shape[0] // world, partial.shape[1], dtype=partial.dtype, device=partial.device)
    reduce_scatter_single(out, partial)
    return out


def eager_tp(model: TPLayer, x_shard: torch.Tensor, w: dict[str, torch.Tensor], world: int) -> torch.Tensor:
    """Megatron's sequence-parallel layer with NCCL: this rank's heads and FFN block."""
    h = _gather(model.norm1(x_shard), world)
    M = h.shape[0]
    B, T, local_heads = M // model.seq, model.seq, model.heads // world
    q, k, v = (F.linear(h, w[p]).view(B, T, local_heads, -1).transpose(1, 2) for p in ("q", "k", "v"))
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(M, -1)
    x = x_shard + _scatter(F.linear(a, w["o"]), world)
    g = _gather(model.norm2(x), world)
    return x + _scatter(F.linear(F.gelu(F.linear(g, w["fc1"])), w["fc2"]), world)


def torch_async_tp(model: TPLayer, world: int) -> Callable[..., torch.Tensor]:
    """The same layer for torch.compile's micro-pipelined TP, on functional collectives."""
    import torch.distributed._functional_collectives as funcol

    torch._inductor.config._micro_pipeline_tp = True
    group = dist.group.WORLD

    def layer(x_shard: torch.Tensor, w: dict[str, torch.Tensor]) -> torch.Tensor:
        h = funcol.all_gather_tensor(model.norm1(x_shard), 0, group)
        M = h.shape[0]
        B, T, local_heads = M // model.seq, model.seq, model.heads // world
        q, k, v = (torch.mm(h, w[p].t()).view(B, T, local_heads, -1).transpose(1, 2) for p in ("q", "k", "v"))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(M, -1)
        x = x_shard + funcol.reduce_scatter_tensor(torch.mm(a, w["o"].t()), "sum", 0, group)
        g = funcol.all_gather_tensor(model.norm2(x), 0, group)
        partial = torch.mm(F.gelu(torch.mm(g, w["fc1"].t())), w["fc2"].t())
        return x + funcol.reduce_scatter_tensor(partial, "sum", 0, group)

    return torch.compile(layer, fullgraph=True)


def measure(
    M: int, args: argparse.Namespace, device: torch.device
) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = DTYPES[args.dtype]
    torch.manual_seed(args.seed)  # the same global tensors on every rank
    model = TPLayer(args.hidden, args.heads, args.ffn_mult * args.hidden, args.seq, dtype, str(device), args.norm)
    with torch.no_grad():  # the norms' weights and biases random too, not ones and zeros
        for norm in (model.norm1, model.norm2):
            for p in norm.parameters():
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if p is norm.weight else 0.0))
    x = torch.randn(M, args.hidden, dtype=dtype, device=device)
    with torch.no_grad():
        reference = model(x)
    w = local_weights(model, rank, world)
    x_shard = x.chunk(world)[rank].contiguous()
    mine = reference.chunk(world)[rank]
    checked = CheckedVariants()
    decisions: dict[str, str] = {}

    with torch.no_grad():
        checked.add("eager", lambda: eager_tp(model, x_shard, w, world), mine)
        if args.cuda_graph:
            checked.add("eager graph", captured(lambda: eager_tp(model, x_shard, w, world)), mine)
        if device.type == "cuda" and not args.no_torch_compile:
            checked.add_if_it_builds("torch-async-tp", lambda: torch_async_tp(model, world), (x_shard, w), mine)

        def whole_sequences(chunks: int) -> bool:
            return M % (chunks * world) == 0 and (M // args.seq) % chunks == 0

        add_hir_variants(checked, decisions, model, x, reference, args, whole_sequences, PARAM_LAYOUTS)
        times = checked.timed(args.reps, args.warmup, device)
    return *checked.over_ranks(times, device), decisions


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--sizes", help="comma list of M = batch * seq (default: 8192,16384 on cuda, 64 on cpu)")
    p.add_argument("--hidden", type=int, help="H (default: 8192 on cuda, 32 on cpu)")
    p.add_argument("--heads", type=int, help="attention heads, a multiple of D (default: 64 on cuda, 4 on cpu)")
    p.add_argument("--seq", type=int, help="sequence length T (default: 2048 on cuda, 8 on cpu)")
    p.add_argument("--ffn-mult", type=int, default=4, help="the first MLP linear's width is this times H")
    p.add_argument("--norm", default="layer", choices=["layer", "rms"], help="LayerNorm or RMSNorm")
    p.add_argument("--dtype", choices=DTYPES, help="default: bf16 on cuda, f32 on cpu")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma list of PIPELINE:NUM_STREAMS:chunks=S")
    p.add_argument("--no-torch-compile", action="store_true", help="skip the torch-async-tp baseline")
    p.add_argument(
        "--cuda-graph",
        action="store_true",
        help="also run eager and each hir variant as a CUDA graph (replayed; hir.compile(..., cuda_graph=True))",
    )
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    cpu = args.device == "cpu"
    if cpu and args.cuda_graph:
        raise SystemExit("--cuda-graph needs --device cuda")
    args.sizes = args.sizes or ("64" if cpu else "8192,16384")
    args.hidden = args.hidden or (32 if cpu else 8192)
    args.heads = args.heads or (4 if cpu else 64)
    args.seq = args.seq or (8 if cpu else 2048)
    args.dtype = args.dtype or ("f32" if cpu else "bf16")
    return args


def main() -> int:
    args = parse_args()
    device = start_job(args.device)
    rows: Rows = []
    for M in (int(s) for s in args.sizes.split(",")):
        rows.append((f"M={M} (batch {M // args.seq})", *measure(M, args, device)))
        release_memory(device)  # this size's compiled variants and graphs, before the next size's
    title = (
        f"TP layer, D={dist.get_world_size()}, H={args.hidden}, heads={args.heads}, T={args.seq}, "
        f"FFN={args.ffn_mult}H, {args.norm} norm, {args.dtype}, {device.type}"
    )
    return end_job(report(title, rows), device)


if __name__ == "__main__":
    raise SystemExit(main())
