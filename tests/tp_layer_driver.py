"""
A Megatron tensor-parallel transformer layer (benchmarks/tp_layer.py's TPLayer: sequence-parallel
norm, all-gather into the column-parallel q/k/v, attention of each rank's heads, row-parallel
output projection and reduce-scatter, then the TP MLP) compiled with hir.compile on a mesh of
every rank, run under torchrun (gloo on CPU), each rank on its own rows, compared with the module
run eagerly on the unsharded input. Exits non-zero (on every rank) when a result differs.

    python -m torch.distributed.run --nproc-per-node 2 tests/tp_layer_driver.py [--smoke] [--cases 0,1] [--modules gqa]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import job_verdict

import hir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from tp_layer import PARAM_LAYOUTS, TPLayer
from tp_mlp import my_rows

H, HEADS, FFN, M = 32, 4, 64, 32

CASES = [
    # name, norm, sequence length (batch M / T), chunks (None: replicated rows), pipeline
    ("LayerNorm, 1 chunk", "layer", 8, 1, "stream-lowering{policy=contractions-standalone}"),
    ("RMSNorm, 2 chunks of one sequence, copy-engine", "rms", 16, 2, "stream-lowering{backend=copy-engine}"),
    ("RMSNorm, 2 chunks of 2 sequences", "rms", 8, 2, "stream-lowering"),
    ("replicated rows (all-reduce)", "layer", 8, None, "stream-lowering"),
    (
        "LayerNorm, 1 chunk, copy-engine by shard",
        "layer",
        8,
        1,
        "stream-lowering{backend=copy-engine overlap=by-shard}",
    ),
]


def check(name: str, norm: str, seq: int, chunks: int | None, pipeline: str) -> str | None:
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same global module and input on every rank
    layer = TPLayer(H, HEADS, FFN, seq, torch.float32, "cpu", norm)
    with torch.no_grad():
        for p in (*layer.norm1.parameters(), *layer.norm2.parameters()):
            p.add_(torch.randn_like(p) * 0.1)  # not the ones and zeros a norm starts with
    x = torch.randn(M, H)
    with torch.no_grad():
        expected = layer(x)
    layout = f"[(stream({chunks}), didx), serial]" if chunks else None
    compiled = hir.compile(
        layer, (x,), [layout], [layout], mesh=list(range(world)), pipeline=pipeline, param_layouts=PARAM_LAYOUTS
    )
    mine = my_rows(x, chunks, rank, world) if chunks else x
    want = my_rows(expected, chunks, rank, world) if chunks else expected
    for _ in range(2):  # a second call reuses the sharded parameters
        with torch.no_grad():
            got = compiled(mine)
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
            diff = (got - want).abs().max().item() if got.shape == want.shape else tuple(got.shape)
            return f"{name} {pipeline}: rank {rank} differs from eager by {diff}"
    return None


class GroupedQueryAttention(torch.nn.Module):
    """Llama 3's attention: fewer key and value heads than query heads (`enable_gqa=True`)."""

    def __init__(self, heads: int, kv_heads: int, seq: int):
        super().__init__()
        self.heads, self.kv_heads, self.seq, width = heads, kv_heads, seq, H // heads
        self.q, self.o = (torch.nn.Linear(H, H, bias=False) for _ in range(2))
        self.k, self.v = (torch.nn.Linear(H, kv_heads * width, bias=False) for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, _ = x.shape
        B, width = M // self.seq, H // self.heads
        q = self.q(x).view(B, self.seq, self.heads, width).transpose(1, 2)
        k, v = (p(x).view(B, self.seq, self.kv_heads, width).transpose(1, 2) for p in (self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return x + self.o(a.transpose(1, 2).reshape(M, H))


GQA_LAYOUTS = {"q.weight": "[didx, serial]", "k.weight": "[didx, serial]", "v.weight": "[didx, serial]",
               "o.weight": "[serial, didx]"}  # fmt: skip


def grouped_query_attention() -> list[str]:
    """8 query heads over 4 key and value heads, each rank its groups; 2 key heads on 4 ranks are refused
    where the projection's heads are cut."""
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(2)
    layer = GroupedQueryAttention(8, 4, 8)
    x = torch.randn(M, H)
    with torch.no_grad():
        want = my_rows(layer(x), 1, rank, world)
    rows = "[(stream(1), didx), serial]"
    compiled = hir.compile(layer, (x,), [rows], [rows], mesh=list(range(world)), param_layouts=GQA_LAYOUTS)
    with torch.no_grad():
        got = compiled(my_rows(x, 1, rank, world))
    failures = (
        [] if torch.allclose(got, want, rtol=1e-4, atol=1e-5) else [f"grouped-query attention: rank {rank} differs"]
    )
    if world == 4:
        split = GroupedQueryAttention(8, 2, 8)
        try:
            hir.compile(split, (x,), [rows], [rows], mesh=list(range(world)), param_layouts=GQA_LAYOUTS)(
                my_rows(x, 1, rank, world)
            )
            failures.append("grouped-query attention: 2 key heads over 4 ranks were not refused")
        except Exception as err:
            if "2 heads (axis 2 of [4, 8, 2, 4]) do not split over 4 devices" not in str(err):
                failures.append(f"grouped-query attention: unexpected error {err}")
    return failures


class HandWrittenAttention(torch.nn.Module):
    """nanoGPT's attention, written out: `q @ k^T`, a causal mask buffer, softmax, `@ v`."""

    def __init__(self, hidden: int, heads: int, seq: int):
        super().__init__()
        self.heads, self.seq = heads, seq
        self.q, self.k, self.v, self.o = (torch.nn.Linear(hidden, hidden, bias=False) for _ in range(4))
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, H = x.shape
        B, T = M // self.seq, self.seq
        q, k, v = (p(x).view(B, T, self.heads, H // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.bias[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(M, H)
        return x + self.o(y)


class LlamaLayer(torch.nn.Module):
    """
    A Llama decoder layer as HF writes it, on tokens [B*T, H]: RMSNorm written out (f32 statistics),
    rotary embeddings from non-persistent cos/sin buffers (`rotate_half`: slices and a cat of the
    head dimension), grouped-query attention (SDPA with `enable_gqa`, or written out with
    `repeat_interleave` of the key and value heads), a SiLU-gated MLP.
    """

    def __init__(self, hidden: int, heads: int, kv_heads: int, seq: int, sdpa: bool):
        super().__init__()
        from test_model_blocks import LlamaRMSNorm, LlamaRotaryEmbedding

        self.heads, self.kv_heads, self.seq, self.width, self.sdpa = heads, kv_heads, seq, hidden // heads, sdpa
        self.q, self.o = (torch.nn.Linear(hidden, hidden, bias=False) for _ in range(2))
        self.k, self.v = (torch.nn.Linear(hidden, kv_heads * self.width, bias=False) for _ in range(2))
        self.gate, self.up = (torch.nn.Linear(hidden, 2 * hidden, bias=False) for _ in range(2))
        self.down = torch.nn.Linear(2 * hidden, hidden, bias=False)
        self.norm1, self.norm2 = LlamaRMSNorm(hidden), LlamaRMSNorm(hidden)
        self.rope = LlamaRotaryEmbedding(self.width, 2 * seq)
        with torch.no_grad():
            for norm in (self.norm1, self.norm2):
                norm.weight.add_(torch.randn(hidden) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from test_model_blocks import rotate_half

        M, H = x.shape
        B, T = M // self.seq, self.seq
        h = self.norm1(x)
        q = self.q(h).view(B, T, self.heads, self.width).transpose(1, 2)
        k, v = (p(h).view(B, T, self.kv_heads, self.width).transpose(1, 2) for p in (self.k, self.v))
        cos, sin = self.rope(v, T)
        q, k = (t * cos + rotate_half(t) * sin for t in (q, k))
        if self.sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            groups = self.heads // self.kv_heads
            k, v = (t.repeat_interleave(groups, dim=1) for t in (k, v))
            scores = (q @ k.transpose(2, 3)) / math.sqrt(self.width)
            scores = scores + torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
            a = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype) @ v
        x = x + self.o(a.transpose(1, 2).reshape(M, H))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


LLAMA_LAYOUTS = {**GQA_LAYOUTS, "gate.weight": "[didx, serial]", "up.weight": "[didx, serial]",
                 "down.weight": "[serial, didx]"}  # fmt: skip


def matches_unsharded(what: str, layer: torch.nn.Module, layouts: dict[str, str], chunks: int) -> list[str]:
    """`layer` compiled on the mesh, on this rank's rows in `chunks` chunks, against it run on the whole input."""
    rank, world = dist.get_rank(), dist.get_world_size()
    x = torch.randn(M, H)
    with torch.no_grad():
        want = my_rows(layer(x), chunks, rank, world)
    rows = f"[(stream({chunks}), didx), serial]"
    compiled = hir.compile(layer, (x,), [rows], [rows], mesh=list(range(world)), param_layouts=layouts)
    with torch.no_grad():
        got = compiled(my_rows(x, chunks, rank, world))
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
        return [f"{what}: rank {rank} differs by {(got - want).abs().max().item():.1e}"]
    return []


class ParallelBranches(torch.nn.Module):
    """Two MLPs of the same rows, their outputs added before the residual: one sum of partial sums."""

    def __init__(self) -> None:
        super().__init__()
        self.a1, self.b1 = (torch.nn.Linear(H, 2 * H, bias=False) for _ in range(2))
        self.a2, self.b2 = (torch.nn.Linear(2 * H, H, bias=False) for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + (self.a2(F.gelu(self.a1(x))) + self.b2(F.silu(self.b1(x))))


BRANCH_LAYOUTS = {"a1.weight": "[didx, serial]", "b1.weight": "[didx, serial]", "a2.weight": "[serial, didx]",
                  "b2.weight": "[serial, didx]"}  # fmt: skip


def llama_layer(forms: tuple[bool, ...] = (True, False)) -> list[str]:
    """The Llama layer (SDPA and/or written out) on each rank's rows, 2 chunks, against the unsharded module."""
    world = dist.get_world_size()
    failures = []
    for sdpa in forms:
        torch.manual_seed(4)
        layer = LlamaLayer(H, 2 * world, world, 8, sdpa)
        failures += matches_unsharded(f"Llama layer (sdpa={sdpa})", layer, LLAMA_LAYOUTS, 2)
    return failures


def hand_written_attention() -> list[str]:
    """Attention as its math on each rank's heads, in 2 chunks of whole sequences."""
    torch.manual_seed(3)
    return matches_unsharded("hand-written attention", HandWrittenAttention(H, 4, 8), GQA_LAYOUTS, 2)


def benchmark_smoke() -> list[str]:
    """benchmarks/tp_layer.py's measurement on CPU (small, one repetition): its code runs and matches."""
    import tp_layer

    variants = "default:1:chunks=1,stream-lowering{backend=copy-engine}:1:chunks=2"
    args = tp_layer.parse_args(["--device", "cpu", "--reps", "1", "--warmup", "0", "--variants", variants])
    _, errors, decisions = tp_layer.measure(int(args.sizes), args, torch.device("cpu"))
    if len(errors) != 3:
        return [f"tp_layer measured {sorted(errors)}, expected eager and 2 hir variants"]
    if decisions:  # on CPU hir.compile lowers as written: the cost model describes GPUs
        return [f"tp_layer: a lowering was chosen on CPU: {decisions}"]
    return [f"tp_layer {name}: relative error {error:.1e}" for name, error in errors.items() if error > 1e-5]


def parallel_branches() -> list[str]:
    torch.manual_seed(5)
    return matches_unsharded("parallel branches", ParallelBranches(), BRANCH_LAYOUTS, 2)


MODULES = {
    "gqa": grouped_query_attention,
    "hand-written": hand_written_attention,
    "llama-sdpa": lambda: llama_layer((True,)),
    "llama-written": lambda: llama_layer((False,)),
    "branches": parallel_branches,
}
"""The other modules than the TP layer, by name (`--modules`)."""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=",".join(str(i) for i in range(len(CASES))), help="indices into CASES")
    parser.add_argument("--modules", default=",".join(MODULES), help="names in MODULES")
    parser.add_argument("--smoke", action="store_true", help="also run benchmarks/tp_layer.py's measurement")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    failures = []
    cases = [CASES[int(i)] for i in args.cases.split(",") if i]
    for case in cases:
        if (failure := check(*case)) is not None:
            failures.append(failure)
    modules = [m for m in args.modules.split(",") if m]
    for module in modules:
        failures += MODULES[module]()
    if args.smoke:
        failures += benchmark_smoke()
    smoke = " and benchmarks/tp_layer.py" if args.smoke else ""
    return job_verdict(
        failures,
        f"tp layer: {len(cases)} programs, {len(modules)} other modules{smoke} match eager torch on "
        f"{dist.get_world_size()} ranks",
    )


if __name__ == "__main__":
    sys.exit(main())
