"""
One decoding step of a gpt-fast-style decoder (RMSNorm, attention over a KV cache that the step
writes at `input_pos`, SwiGLU MLP; the caches are module buffers updated in place), compiled by
`hir.compile`, against eager PyTorch, on the same tensors:

  eager          the module
  torch.compile  torch.compile(module, mode="reduce-overhead") (a CUDA graph, as hir's default)
  hir            hir.compile(module, (x, input_pos)): a CUDA graph replayed on a GPU; each step
                 writes the new caches back into the module's buffers (docs/frontend.md, "State
                 updated in place"): two copies of every cache per step that eager does not make

First a check: the compiled module and an eager copy decode the same steps from the same caches,
and their outputs and caches are compared (relative L2 error, WRONG above 3e-2). Then each variant
decodes one step at a fixed position, timed interleaved (CUDA-event medians).

    python benchmarks/kv_cache_decode.py                        # bf16 on one GPU
    python benchmarks/kv_cache_decode.py --device cpu --layers 1 --dim 64 --max-len 32 --reps 3
"""

from __future__ import annotations

import argparse
import copy

import torch
import torch.nn.functional as F
from ag_gemm import timed_interleaved

import hir

WRONG = 3e-2


class KVCache(torch.nn.Module):
    def __init__(self, batch: int, heads: int, max_len: int, head_dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        shape = (batch, heads, max_len, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype))
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype))

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.k_cache[:, :, input_pos] = k
        self.v_cache[:, :, input_pos] = v
        return self.k_cache, self.v_cache


class Layer(torch.nn.Module):
    def __init__(self, dim: int, heads: int, max_len: int, batch: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.attention_norm = torch.nn.RMSNorm(dim, dtype=dtype)
        self.ffn_norm = torch.nn.RMSNorm(dim, dtype=dtype)
        self.wqkv = torch.nn.Linear(dim, 3 * dim, bias=False, dtype=dtype)
        self.wo = torch.nn.Linear(dim, dim, bias=False, dtype=dtype)
        self.w13 = torch.nn.Linear(dim, 2 * 4 * dim, bias=False, dtype=dtype)
        self.w2 = torch.nn.Linear(4 * dim, dim, bias=False, dtype=dtype)
        self.kv_cache = KVCache(batch, heads, max_len, self.head_dim, dtype)
        self.register_buffer("causal_mask", torch.ones(max_len, max_len, dtype=torch.bool).tril())

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        bsz, seqlen, dim = x.shape
        q, k, v = self.wqkv(self.attention_norm(x)).split(dim, dim=-1)
        q, k, v = (t.view(bsz, seqlen, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        k, v = self.kv_cache.update(input_pos, k, v)
        mask = self.causal_mask[None, None, input_pos]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        h = x + self.wo(y.transpose(1, 2).contiguous().view(bsz, seqlen, dim))
        gate, up = self.w13(self.ffn_norm(h)).chunk(2, dim=-1)
        return h + self.w2(F.silu(gate) * up)


class Decoder(torch.nn.Module):
    def __init__(self, layers: int, dim: int, heads: int, max_len: int, batch: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(Layer(dim, heads, max_len, batch, dtype) for _ in range(layers))

    def forward(self, x: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, input_pos)
        return x


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()


def check(compiled: object, module: Decoder, eager: Decoder, args: argparse.Namespace, device: str) -> float:
    """The largest relative error of the outputs and caches over a prefill and a few decoding steps."""
    worst = 0.0
    dtype = module.layers[0].wqkv.weight.dtype
    steps = [torch.arange(4, device=device)] + [torch.tensor([p], device=device) for p in range(4, 8)]
    with torch.no_grad():
        for pos in steps:
            x = torch.randn(args.batch, len(pos), args.dim, dtype=dtype, device=device)
            worst = max(worst, relative_error(compiled(x, pos), eager(x, pos)))
        for ours, theirs in zip(module.buffers(), eager.buffers()):
            if ours.is_floating_point() and theirs.float().norm() > 0:
                worst = max(worst, relative_error(ours, theirs))
    return worst


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--no-torch-compile", action="store_true", help="leave torch.compile out")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    device = args.device
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        module = Decoder(args.layers, args.dim, args.heads, args.max_len, args.batch, dtype).eval()
    eager = copy.deepcopy(module)
    x = torch.randn(args.batch, 1, args.dim, dtype=dtype, device=device)
    pos = torch.tensor([8], device=device)
    compiled = hir.compile(module, (torch.randn(args.batch, 4, args.dim, dtype=dtype, device=device), pos.new_zeros(4)))
    error = check(compiled, module, eager, args, device)
    print(
        f"decoder: {args.layers} layers, dim {args.dim}, {args.heads} heads, caches of {args.max_len} positions, "
        f"batch {args.batch}, {dtype}, {device}"
    )
    print(f"check: compiled against eager over a prefill and 4 steps: {error:.2e}{'  WRONG' if error > WRONG else ''}")

    variants = {"eager": lambda: eager(x, pos), "hir": lambda: compiled(x, pos)}
    if not args.no_torch_compile and device == "cuda":
        reference = copy.deepcopy(eager)
        fast = torch.compile(reference, mode="reduce-overhead")
        variants["torch.compile"] = lambda: fast(x, pos)
    with torch.no_grad():
        times = timed_interleaved(variants, args.reps, args.warmup, device)
    step = compiled.specialization(x, pos)
    print(f"hir's decision for the step: {step.graph_decision or 'as compiled'}")
    base = times["eager"]
    for name, ms in times.items():
        print(f"{name:<14} {ms:8.3f} ms per step  {ms / base:5.2f}x eager")
    return 1 if error > WRONG else 0


if __name__ == "__main__":
    raise SystemExit(main())
