"""
Blocks of model code as people write them, on one device: `hir.compile` with its defaults against
eager PyTorch and `torch.compile` (default mode, and `mode="reduce-overhead"`, its CUDA graphs), in
one run on the same tensors, for inference and for a training step (forward and backward).

  llama        a Llama decoder block: RMSNorm, rotary embeddings from non-persistent cos/sin buffers,
               grouped-query attention (16 query heads, 4 key/value heads) with SDPA, a SwiGLU MLP;
               B=4, T=1024, dim 2048, MLP 5632
  moe          a top-2 mixture of 8 SwiGLU experts in the dense form (every expert on every token,
               the top-k outputs gathered and weighted), B=4, T=512, dim 1024, experts of 2816
  vit          a ViT-B encoder block: LayerNorm, fused qkv, SDPA over 197 tokens, GELU MLP; B=32
  llama-train  the Llama block's forward and backward (`training=True`), parameters' gradients accumulated

Each line gives the time as a multiple of eager. Every result is checked against eager (relative L2
error, WRONG above 3e-2; a training step's input gradient too). CUDA-event medians, timed
interleaved (round-robin).

    python benchmarks/model_blocks.py                 # bf16 on one GPU
    python benchmarks/model_blocks.py --device cpu    # f32, small: a check, not a measurement
"""

from __future__ import annotations

import argparse
import copy
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from ag_gemm import timed_interleaved
from segment_policies import WRONG, relative_error
from segment_policies import build_parser as policies_parser
from torch import nn

import hir


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.type_as(x)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int, hidden: int, max_len: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(dim), RMSNorm(dim)
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(max_len).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos_cached[:T].to(x.dtype), self.sin_cached[:T].to(x.dtype)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).reshape(B, T, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Expert(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DenseMoE(nn.Module):
    def __init__(self, dim: int, hidden: int, experts: int, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim, hidden) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        x = x.view(-1, C)
        weights = F.softmax(self.gate(x), dim=1, dtype=torch.float)
        weights, chosen = torch.topk(weights, self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        outs = torch.stack([expert(x) for expert in self.experts], dim=1)  # [N, E, C]
        picked = torch.gather(outs, 1, chosen.unsqueeze(-1).expand(-1, -1, C))
        return (picked * weights.unsqueeze(-1)).sum(dim=1).view(B, T, C)


class ViTBlock(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, N, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def cases(device: str, dtype: torch.dtype) -> dict[str, tuple[Callable[[], nn.Module], torch.Tensor, bool]]:
    """name -> (module maker, input, training): the sizes above on a GPU, small ones on CPU."""
    big = device == "cuda"

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device, dtype=dtype)

    def llama() -> nn.Module:
        return LlamaBlock(2048, 16, 4, 5632, 4096) if big else LlamaBlock(64, 4, 2, 96, 64)

    return {
        "llama": (llama, randn(4, 1024, 2048) if big else randn(2, 16, 64), False),
        "moe": (lambda: DenseMoE(1024, 2816, 8, 2) if big else DenseMoE(32, 48, 4, 2), randn(4, 512, 1024) if big else randn(2, 8, 32), False),
        "vit": (lambda: ViTBlock(768, 12) if big else ViTBlock(48, 4), randn(32, 197, 768) if big else randn(2, 9, 48), False),
        "llama-train": (llama, randn(2, 1024, 2048) if big else randn(2, 16, 64), True),
    }  # fmt: skip


def _inference(module: nn.Module, x: torch.Tensor, opts: argparse.Namespace) -> tuple[dict, dict]:
    eager = copy.deepcopy(module)
    runs: dict[str, Callable[[], object]] = {"eager": lambda: eager(x)}
    compiled = hir.compile(copy.deepcopy(module), (x,))
    with torch.no_grad():
        error = relative_error(compiled(x), eager(x))
    errors = {"hir default": error}
    runs["hir default"] = lambda: compiled(x)
    if not opts.no_torch_compile:
        fast = torch.compile(copy.deepcopy(module))
        graphs = torch.compile(copy.deepcopy(module), mode="reduce-overhead") if opts.device == "cuda" else None
        runs["torch.compile"] = lambda: fast(x)
        if graphs is not None:
            runs["torch.compile reduce-overhead"] = lambda: graphs(x)
    return runs, errors


def _training(module: nn.Module, x: torch.Tensor, opts: argparse.Namespace) -> tuple[dict, dict]:
    """Forward and backward with a fixed output gradient; the input's gradient is checked against eager's."""
    module.train()
    grad = torch.randn_like(x)

    def step_of(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[], torch.Tensor]:
        def step() -> torch.Tensor:
            inp = x.detach().requires_grad_()
            fn(inp).backward(grad)
            return inp.grad

        return step

    eager = copy.deepcopy(module)
    runs: dict[str, Callable[[], object]] = {"eager": step_of(eager)}
    compiled = hir.compile(copy.deepcopy(module), (x.detach().requires_grad_(),), training=True)
    runs["hir default"] = step_of(compiled)
    errors = {"hir default": relative_error(runs["hir default"](), runs["eager"]())}
    if not opts.no_torch_compile:
        runs["torch.compile"] = step_of(torch.compile(copy.deepcopy(module)))
    return runs, errors


def run_case(
    name: str, make: Callable[[], nn.Module], x: torch.Tensor, training: bool, opts: argparse.Namespace
) -> bool:
    """Times eager, hir's default and torch.compile; False where hir's result is wrong."""
    torch.manual_seed(opts.seed)
    with torch.device(opts.device):
        module = make().to(x.dtype).eval()
    for p in module.parameters():  # weights at the scale of a trained model's (Linear's init is small)
        p.data.mul_(1.0 if p.dim() < 2 else math.sqrt(3.0))
    runs, errors = (_training if training else _inference)(module, x, opts)
    with torch.no_grad() if not training else torch.enable_grad():
        times = timed_interleaved(runs, opts.reps, opts.warmup, opts.device)
    base = times["eager"]
    print(f"\n{name}: {tuple(x.shape)} {x.dtype}{' forward + backward' if training else ''}")
    ok = True
    for label, ms in times.items():
        error = errors.get(label)
        note = "" if error is None else f"  [{error:.1e}{' WRONG' if error > WRONG else ''}]"
        ok = ok and (error is None or error <= WRONG)
        print(f"  {label:<32} {ms:8.3f} ms  {ms / base:5.2f}x eager{note}")
    return ok


def build_parser() -> argparse.ArgumentParser:
    """segment_policies.py's flags (device, blocks, repetitions, seed, torch.compile left out), this script's help."""
    parser = policies_parser()
    parser.description = __doc__.split("\n\n")[0]
    return parser


def main(argv: list[str] | None = None) -> int:
    opts = build_parser().parse_args(argv)
    dtype = torch.bfloat16 if opts.device == "cuda" else torch.float32
    chosen = opts.only.split(",") if opts.only else None
    ok = True
    for name, (make, x, training) in cases(opts.device, dtype).items():
        if chosen is None or name in chosen:
            ok = run_case(name, make, x, training, opts) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
