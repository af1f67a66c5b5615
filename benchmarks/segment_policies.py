"""
`fusion-segment`'s policies on model code that runs on one device, compiled by `hir.compile` with
each policy, without a graph ("eager run") and replayed as a CUDA graph, against what a user
runs instead, in one run and on the same tensors: eager PyTorch, `hir.compile` with its defaults
("hir default": no policy named, a CUDA graph on a GPU) and, on a GPU, `torch.compile(mode=
"reduce-overhead")`. The blocks:

  gpt        a nanoGPT block (LayerNorm, causal attention with split, GELU MLP, biases), B=8, T=1024, C=1024
  gpt-small  the same at GPT-2 small's width, B=2, T=128, C=768
  llama-mlp  RMSNorm, SwiGLU MLP without biases and a residual, [4, 1024, 2048]
  decode     one step of benchmarks/kv_cache_decode.py's 4-layer decoder (dim 2048, caches of 2048)

Each line gives the policy, the launches and buffers of the lowered program, and the time as a
multiple of eager. `hir.compile` segments these programs (no stream or device axes) with
`contractions-with-epilogues` unless `policy=` names another (docs/passes.md). Every result is
checked against eager (relative L2 error, WRONG above 3e-2). CUDA-event medians, timed
interleaved (round-robin).

    python benchmarks/segment_policies.py                 # bf16 on one GPU
    python benchmarks/segment_policies.py --device cpu    # f32, small: a check, not a measurement
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable

import torch
import torch.nn.functional as F
from ag_gemm import timed_interleaved
from kv_cache_decode import Decoder
from torch import nn

import hir

POLICIES = ("standalone-host-ops", "contractions-standalone", "contractions-with-epilogues")
WRONG = 3e-2


class GPTBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.c_attn, self.c_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.c_fc, self.c_out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        return x + self.c_out(F.gelu(self.c_fc(self.ln_2(x))))


class LlamaMLP(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(width)
        self.w1, self.w3 = nn.Linear(width, 4 * width, bias=False), nn.Linear(width, 4 * width, bias=False)
        self.w2 = nn.Linear(4 * width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def cases(device: str, dtype: torch.dtype) -> dict[str, tuple[Callable[[], nn.Module], tuple[torch.Tensor, ...]]]:
    """name -> (module maker, arguments): the sizes above on a GPU, small ones on CPU."""
    big = device == "cuda"

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device, dtype=dtype)

    dim, max_len = (2048, 2048) if big else (64, 32)
    return {
        "gpt": (lambda: GPTBlock(1024 if big else 64, 16 if big else 4), (randn(8, 1024, 1024) if big else randn(2, 16, 64),)),
        "gpt-small": (lambda: GPTBlock(768 if big else 48, 12 if big else 4), (randn(2, 128, 768) if big else randn(2, 8, 48),)),
        "llama-mlp": (lambda: LlamaMLP(2048 if big else 32), (randn(4, 1024, 2048) if big else randn(2, 8, 32),)),
        "decode": (
            lambda: Decoder(4 if big else 2, dim, 16 if big else 4, max_len, 1, dtype),
            (randn(1, 1, dim), torch.tensor([8], device=device)),
        ),
    }  # fmt: skip


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()


def run_case(
    name: str, make: Callable[[], nn.Module], args: tuple[torch.Tensor, ...], opts: argparse.Namespace
) -> bool:
    """Times eager and each policy, without a graph and (on a GPU) replayed; False where a result is wrong."""
    device, dtype = opts.device, args[0].dtype
    torch.manual_seed(opts.seed)
    with torch.device(device):
        module = make().to(dtype).eval()
    eager = copy.deepcopy(module)
    runs: dict[str, Callable[[], object]] = {"eager": lambda: eager(*args)}
    shapes: dict[str, str] = {}
    ok = True
    modes = [("eager run", False), ("graph", None)] if device == "cuda" else [("eager run", False)]
    for mode, graph in modes:
        for policy in POLICIES:
            compiled = hir.compile(copy.deepcopy(module), args, policy=policy, cuda_graph=graph)
            with torch.no_grad():
                error = relative_error(compiled(*args), eager(*args))
            ok = ok and error <= WRONG
            text = str(compiled.specialization(*args).module)
            label = f"{policy}, {mode}"
            shapes[label] = (
                f"{text.count('hir.launch'):3d} launches {text.count('hir.allocate'):3d} buffers  "
                f"[{error:.1e}{' WRONG' if error > WRONG else ''}]"
            )
            runs[label] = lambda compiled=compiled: compiled(*args)
    default = hir.compile(copy.deepcopy(module), args)  # what a user gets: no policy named, graphs where they apply
    with torch.no_grad():
        error = relative_error(default(*args), eager(*args))
    ok = ok and error <= WRONG
    shapes["hir default"] = f"[{error:.1e}{' WRONG' if error > WRONG else ''}]"
    runs["hir default"] = lambda: default(*args)
    if device == "cuda" and not opts.no_torch_compile:
        fast = torch.compile(copy.deepcopy(eager), mode="reduce-overhead")
        runs["torch.compile"] = lambda: fast(*args)
    with torch.no_grad():
        times = timed_interleaved(runs, opts.reps, opts.warmup, device)
    base = times["eager"]
    print(f"\n{name}: {', '.join(f'{tuple(a.shape)}' for a in args)} {dtype}")
    for label, ms in times.items():
        print(f"  {label:<42} {ms:8.3f} ms  {ms / base:5.2f}x eager  {shapes.get(label, '')}")
    return ok


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--only", help="comma list of cases (default: all)")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-torch-compile", action="store_true", help="leave torch.compile out")
    return parser


def main(argv: list[str] | None = None) -> int:
    opts = build_parser().parse_args(argv)
    dtype = torch.bfloat16 if opts.device == "cuda" else torch.float32
    chosen = opts.only.split(",") if opts.only else None
    ok = True
    for name, (make, args) in cases(opts.device, dtype).items():
        if chosen is None or name in chosen:
            ok = run_case(name, make, args, opts) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
