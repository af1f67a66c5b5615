"""
Torch implementations of the fusion ops, specialised once per op at compile time.

`eager_kernel(op)` returns `f(*operands) -> tensor`; `out_kernel(op)` returns
`f(out, *operands)`, which writes the result into `out` (a buffer or a strided view of one) with
torch's `out=` forms, so a launch into a slice costs no extra copy.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import DYNAMIC_INDEX

from hir.dialects import fusion
from hir.dialects.syntax import array_values
from hir.runtime.dtypes import shaped_dtype

Eager = Callable[..., torch.Tensor]
Into = Callable[..., object]

_BINARY: dict[type, Callable[..., torch.Tensor]] = {
    fusion.AddOp: torch.add,
    fusion.SubOp: torch.sub,
    fusion.MulOp: torch.mul,
    fusion.DivOp: torch.div,
    fusion.MaximumOp: torch.maximum,
}
_UNARY: dict[type, Callable[..., torch.Tensor]] = {
    fusion.NegOp: torch.neg,
    fusion.AbsOp: torch.abs,
    fusion.ExpOp: torch.exp,
    fusion.TanhOp: torch.tanh,
}
_REDUCE: dict[type, Callable[..., torch.Tensor]] = {
    fusion.SumOp: torch.sum,
    fusion.MaxOp: torch.amax,
    fusion.MinOp: torch.amin,
}


def eager_kernel(op: fusion.FusionOp) -> Eager:
    """`f(*operands) -> result` for one fusion op (the reference semantics)."""
    kind = type(op)
    if kind is fusion.SetOp:
        return lambda x: x.clone()
    if (fn := _BINARY.get(kind)) is not None:
        return fn
    if (fn := _UNARY.get(kind)) is not None:
        return fn
    if kind is fusion.ReluOp:
        return torch.relu
    if kind is fusion.CastOp:
        dtype = shaped_dtype(op.results[0].type)
        return lambda x: x.to(dtype)
    if kind is fusion.PermuteOp:
        perm = array_values(op.properties["perm"])
        return lambda x: x.permute(perm).contiguous()
    if kind is fusion.ExpandOp:
        return _broadcast_view(op)
    if (fn := _REDUCE.get(kind)) is not None:
        dims = list(array_values(op.properties["dims"]))
        if kind is fusion.SumOp:
            dtype = shaped_dtype(op.results[0].type)
            return lambda x: torch.sum(x, dims, dtype=dtype)
        return lambda x: fn(x, dims)
    if kind is fusion.MatmulOp:
        return torch.matmul
    if kind is fusion.LinearOp:
        return _linear
    raise NotImplementedError(f"no kernel for {op.name}")


def out_kernel(op: fusion.FusionOp) -> Into:
    """`f(out, *operands)`: computes the op into `out` without a temporary where torch allows."""
    kind = type(op)
    if kind is fusion.SetOp or kind is fusion.CastOp:
        return lambda out, x: out.copy_(x)
    if (fn := _BINARY.get(kind)) is not None:
        return lambda out, a, b: fn(a, b, out=out)
    if (fn := _UNARY.get(kind)) is not None:
        return lambda out, x: fn(x, out=out)
    if kind is fusion.ReluOp:
        return lambda out, x: torch.clamp_min(x, 0, out=out)
    if kind is fusion.PermuteOp:
        perm = array_values(op.properties["perm"])
        return lambda out, x: out.copy_(x.permute(perm))
    if kind is fusion.ExpandOp:
        view = _broadcast_view(op)
        return lambda out, x: out.copy_(view(x))
    if (fn := _REDUCE.get(kind)) is not None:
        dims = list(array_values(op.properties["dims"]))
        if kind is fusion.SumOp:
            return lambda out, x: torch.sum(x, dims, dtype=out.dtype, out=out)
        return lambda out, x: fn(x, dims, out=out)
    if kind is fusion.MatmulOp:
        return _matmul_into
    if kind is fusion.LinearOp:
        return _linear_into
    raise NotImplementedError(f"no kernel for {op.name}")


def _matmul_into(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    if not out.is_contiguous():
        # torch.matmul(out=) into a strided view fails or scrambles it when it folds batch axes
        # (a of rank >= 3 against a matrix); a stream loop over an inner result axis gives such
        # views. Loops over the outer axis, the pipelines' case, keep the copy-free path.
        out.copy_(torch.matmul(a, b))
        return
    if a.dim() == 1 and b.dim() == 2:
        # torch.matmul(out=) resizes a 1-D `out` to [1, N] here, which scrambles a strided view.
        torch.mm(a.unsqueeze(0), b, out=out.unsqueeze(0))
        return
    torch.matmul(a, b, out=out)


def _linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    if w.dim() == 1 and bias is not None:  # F.linear rejects a bias with a 1-D weight; the dialect allows a scalar one
        return torch.matmul(x, w) + bias
    return F.linear(x, w, bias)


def _linear_into(out: torch.Tensor, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None) -> None:
    if w.dim() == 2 and x.dim() == 2 and bias is not None:
        torch.addmm(bias, x, w.t(), out=out)
        return
    _matmul_into(out, x, w.t() if w.dim() == 2 else w)
    if bias is not None:
        out.add_(bias)


def _broadcast_view(op: fusion.FusionOp) -> Eager:
    """Unsqueeze the new axes, then expand (a view: no copy)."""
    dims = sorted(array_values(op.properties["dims"]))
    shape = op.results[0].type.get_shape()
    if any(shape[d] == DYNAMIC_INDEX for d in dims):
        raise ValueError("a broadcast to a new axis of dynamic extent cannot be executed")
    target = [shape[d] if d in dims else -1 for d in range(len(shape))]

    def view(x: torch.Tensor) -> torch.Tensor:
        for d in dims:
            x = x.unsqueeze(d)
        return x.expand(target)

    return view
