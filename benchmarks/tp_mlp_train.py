"""
Training step of the MLP block of benchmarks/tp_mlp.py (linear H -> 4H, gelu, linear 4H -> H, no
biases) on one device: the forward and the backward, compiled by `hir.compile(..., training=True)`,
against eager PyTorch and torch.compile, in one run and on the same tensors.

  eager          model(x).backward(dy)
  torch.compile  torch.compile(model) (inductor's forward and backward)
  hir            hir.compile(model, (x,), training=True): AOT autograd's forward and backward
                 graphs, each lowered with stream-lowering and run by hir's runtime
  hir graph      with --cuda-graph: the same, each program replayed as a CUDA graph

One step is `model(x).backward(dy)` with the parameters' gradients reset to None before it (an
optimizer's zero_grad). Every variant's output and gradients (x's, fc1's, fc2's) are checked
against eager (relative L2 error of the worst, WRONG above 3e-2). CUDA-event medians on a GPU.

    python benchmarks/tp_mlp_train.py                        # bf16, H = 4096 and 8192 on one GPU
    python benchmarks/tp_mlp_train.py --device cpu           # f32, small: a check, not a measurement
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.nn.functional as F

import hir
from hir.frontend.autotune import median_ms

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
WRONG = 3e-2


class MLP(torch.nn.Module):
    def __init__(self, hidden: int, ffn: int, dtype: torch.dtype, device: str):
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, ffn, bias=False, dtype=dtype, device=device)
        self.fc2 = torch.nn.Linear(ffn, hidden, bias=False, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()


def step(model: torch.nn.Module, run: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, dy: torch.Tensor):
    """One forward and backward; returns the output and the gradients (x, then the parameters)."""

    def once() -> list[torch.Tensor]:
        for p in model.parameters():
            p.grad = None
        x.grad = None
        out = run(x)
        out.backward(dy)
        return [out.detach(), x.grad, *(p.grad for p in model.parameters())]  # type: ignore[list-item]

    return once


def measure(hidden: int, M: int, args: argparse.Namespace, device: torch.device) -> list[tuple[str, float, float]]:
    dtype = DTYPES[args.dtype]
    torch.manual_seed(args.seed)
    model = MLP(hidden, args.ffn_mult * hidden, dtype, str(device))
    x = torch.randn(M, hidden, dtype=dtype, device=device, requires_grad=True)
    dy = torch.randn(M, hidden, dtype=dtype, device=device)
    variants: list[tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = [("eager", model)]
    if not args.no_torch_compile:
        variants.append(("torch.compile", torch.compile(model)))
    variants.append(("hir", hir.compile(model, (x.detach(),), training=True, cuda_graph=False)))
    if args.cuda_graph:
        variants.append(("hir graph", hir.compile(model, (x.detach(),), training=True, cuda_graph=True)))
    rows = []
    reference: list[torch.Tensor] = []
    for name, run in variants:
        once = step(model, run, x, dy)
        results = [t.clone() for t in once()]
        if not reference:
            reference = results
        error = max(relative_error(a, b) for a, b in zip(results, reference))
        ms = median_ms(once, device, lambda: None, args.warmup, args.reps)
        rows.append((name, ms, error))
    return rows


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cpu" and args.dtype == "bf16":
        args.dtype = "f32"
    hiddens = (
        [int(h) for h in args.hidden.split(",")] if args.hidden else ([4096, 8192] if device.type == "cuda" else [64])
    )
    sizes = (
        [int(m) for m in args.sizes.split(",")] if args.sizes else ([8192, 16384] if device.type == "cuda" else [128])
    )
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        f"MLP training step (forward + backward), {args.dtype}, FFN = {args.ffn_mult}H, {name}, torch {torch.__version__}"
    )
    print(f"{'H':>6} {'M':>6}  {'variant':<14} {'ms':>9} {'x eager':>8}  error")
    wrong = False
    for hidden in hiddens:
        for M in sizes:
            rows = measure(hidden, M, args, device)
            eager_ms = rows[0][1]
            for variant, ms, error in rows:
                flag = "  WRONG" if error > WRONG else ""
                wrong |= error > WRONG
                print(f"{hidden:>6} {M:>6}  {variant:<14} {ms:>9.3f} {ms / eager_ms:>8.2f}  {error:.1e}{flag}")
    if wrong:
        raise SystemExit("error: a variant's output or gradients differ from eager's")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="bf16 (f32 on CPU)")
    p.add_argument("--hidden", default="", help="H, comma-separated (default: 4096,8192 on a GPU, 64 on CPU)")
    p.add_argument("--sizes", default="", help="M, comma-separated (default: 8192,16384 on a GPU, 128 on CPU)")
    p.add_argument("--ffn-mult", type=int, default=4)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-torch-compile", action="store_true", help="skip torch.compile (its compile takes a while)")
    p.add_argument("--cuda-graph", action="store_true", help="also the hir programs replayed as CUDA graphs")
    return p


if __name__ == "__main__":
    main()
