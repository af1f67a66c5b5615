"""
An attention block on one device (Llama-style: q/k/v projections, causal
`F.scaled_dot_product_attention`, output projection, residual add), compiled by `hir.compile`,
against eager PyTorch, in one run and on the same tensors:

  eager          the module, torch's fused attention kernel
  eager graph    the same captured in a CUDA graph and replayed (GPU)
  torch.compile  torch.compile(module)
  hir            hir.compile(module, (x,)): one fusion.sdpa, run by torch's fused kernel; replayed as
                 a CUDA graph on a GPU (hir.compile's default)
  hir eager      the same program without a graph
  hir stream(S)  the batch in S stream chunks (in_layouts "[stream(S), serial, serial]"): the
                 projections and attention of chunk s on its own stream

Every result is checked against eager (relative L2 error in brackets, WRONG above 3e-2).
CUDA-event medians on a GPU. The variants are timed interleaved (round-robin: every round runs
each once), so that GPU clock drift affects them alike.

    python benchmarks/attention_block.py                  # bf16 on one GPU
    python benchmarks/attention_block.py --device cpu     # f32, small: a check, not a measurement
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from ag_gemm import GEMM_FUNCTIONS, captured, gemm_starts, timed_interleaved

import hir

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
WRONG = 3e-2


class AttentionBlock(torch.nn.Module):
    """x + o(attention(q(x), k(x), v(x))) on [batch, seq, hidden], causal."""

    def __init__(self, hidden: int, heads: int, dtype: torch.dtype, device: str):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (
            torch.nn.Linear(hidden, hidden, bias=False, dtype=dtype, device=device) for _ in range(4)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, H = x.shape
        q, k, v = (p(x).view(B, T, self.heads, H // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.o(a.transpose(1, 2).reshape(B, T, H))


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()


def measure(args: argparse.Namespace, device: torch.device) -> list[tuple[str, float, float]]:
    dtype = DTYPES[args.dtype]
    torch.manual_seed(args.seed)
    model = AttentionBlock(args.hidden, args.heads, dtype, str(device)).eval()
    x = torch.randn(args.batch, args.seq, args.hidden, dtype=dtype, device=device)
    cuda = device.type == "cuda"
    variants: list[tuple[str, Callable[[], torch.Tensor]]] = [("eager", lambda: model(x))]
    if cuda:
        variants.append(("eager graph", captured(lambda: model(x))))
    if not args.no_torch_compile:
        compiled = torch.compile(model)
        variants.append(("torch.compile", lambda: compiled(x)))
    block = hir.compile(model, (x,))
    variants.append(("hir", lambda: block(x)))
    if cuda:
        plain = hir.compile(model, (x,), cuda_graph=False)
        variants.append(("hir eager", lambda: plain(x)))
    for chunks in (int(s) for s in args.chunks.split(",") if s):
        if args.batch % chunks:
            continue
        layout = f"[stream({chunks}), serial, serial]"
        streamed = hir.compile(model, (x,), [layout], layout)
        variants.append((f"hir stream({chunks})", lambda streamed=streamed: streamed(x)))
    errors: dict[str, float] = {}
    with torch.no_grad():
        reference = model(x).clone()
        for name, run in variants:  # every first call (hir's may measure candidate lowerings) before any timing
            errors[name] = relative_error(run(), reference)
        times = timed_interleaved(dict(variants), args.reps, args.warmup, device)
        if args.first_launch:
            # Run without a graph, each from an idle device: the host's time is the device's wait.
            unreplayed = dict(v for v in variants if v[0] in ("eager", "hir eager" if cuda else "hir"))
            for name, run in unreplayed.items():
                print(
                    f"  first GEMM launch, {name}: {first_gemm_us(run, args.reps, device):.1f} us after the call (host)"
                )
    decision = block.graph_decision or ("replays" if block._graph_for(device) else "runs eagerly")
    measured = ", ".join(f"{name} {ms:.3f} ms" for name, ms in block.measured.items())
    print(f"  hir (default): {decision}" + (f"; measured at the first call: {measured}" if measured else ""))
    return [(name, times[name], errors[name]) for name, _ in variants]


def first_gemm_us(run: Callable[[], torch.Tensor], calls: int, device: torch.device) -> float:
    """Median host microseconds from a call to the start of its first GEMM call, each call from an idle device."""
    delays = []
    for _ in range(calls):
        if device.type == "cuda":
            torch.cuda.synchronize()
        with gemm_starts() as starts:
            entered = time.perf_counter_ns()
            run()
        if not starts:
            raise SystemExit(f"--first-launch: the block called none of {', '.join(GEMM_FUNCTIONS)}")
        delays.append((starts[0] - entered) / 1e3)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return statistics.median(delays)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", choices=sorted(DTYPES), help="default: bf16 on cuda, f32 on cpu")
    p.add_argument("--batch", type=int, help="default: 8 on cuda, 4 on cpu")
    p.add_argument("--seq", type=int, help="default: 2048 on cuda, 16 on cpu")
    p.add_argument("--hidden", type=int, help="default: 4096 on cuda, 64 on cpu")
    p.add_argument("--heads", type=int, help="default: 32 on cuda, 4 on cpu")
    p.add_argument("--chunks", default="2,4", help="comma list of stream chunk counts of the batch")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-torch-compile", action="store_true", help="skip the torch.compile baseline")
    p.add_argument(
        "--first-launch",
        action="store_true",
        help="also print the host microseconds from the call to the first GEMM of eager and of hir without a graph",
    )
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    cpu = args.device == "cpu"
    args.dtype = args.dtype or ("f32" if cpu else "bf16")
    args.batch = args.batch or (4 if cpu else 8)
    args.seq = args.seq or (16 if cpu else 2048)
    args.hidden = args.hidden or (64 if cpu else 4096)
    args.heads = args.heads or (4 if cpu else 32)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        f"attention block, B={args.batch}, T={args.seq}, H={args.hidden}, {args.heads} heads, causal, {args.dtype}, "
        f"{name}, torch {torch.__version__}; ms (median); x of eager; rel. error in []"
    )
    rows = measure(args, device)
    eager_ms = rows[0][1]
    wrong = False
    for variant, ms, error in rows:
        flag = "  WRONG" if error > WRONG else ""
        wrong |= error > WRONG
        print(f"  {variant:<16} {ms:9.3f}  x{ms / eager_ms:.2f}  [{error:.1e}]{flag}")
    return int(wrong)


if __name__ == "__main__":
    raise SystemExit(main())
