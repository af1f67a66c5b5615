"""
Torch implementations of the fusion ops, specialised once per op at compile time.

`eager_kernel(op)` returns `f(*operands) -> tensor`; `out_kernel(op)` returns
`f(out, *operands)`, which writes the result into `out` (a buffer or a strided view of one) with
torch's `out=` forms, so a launch into a slice costs no extra copy.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import DYNAMIC_INDEX

from hir.dialects import fusion
from hir.dialects import shape_rules as rules
from hir.dialects.syntax import array_values
from hir.runtime.attention_kernels import (
    reads_statistics,
    sdpa_backward_into,
    sdpa_backward_stacked_kernel,
    sdpa_into,
    sdpa_kernel,
    sdpa_logsumexp_kernel,
    sdpa_with_statistics_kernel,
)
from hir.runtime.dtypes import shaped_dtype
from hir.runtime.indexing_kernels import indexing_into, indexing_kernel
from hir.runtime.norm_grad_kernels import norm_backward_kernel

Eager = Callable[..., torch.Tensor]
Into = Callable[..., object]

_BINARY: dict[type, Callable[..., torch.Tensor]] = {
    fusion.AddOp: torch.add,
    fusion.SubOp: torch.sub,
    fusion.MulOp: torch.mul,
    fusion.DivOp: torch.div,
    fusion.MaximumOp: torch.maximum,
    fusion.PowOp: torch.pow,
}
_UNARY: dict[type, Callable[..., torch.Tensor]] = {
    fusion.NegOp: torch.neg,
    fusion.AbsOp: torch.abs,
    fusion.ExpOp: torch.exp,
    fusion.LogOp: torch.log,
    fusion.SinOp: torch.sin,
    fusion.CosOp: torch.cos,
    fusion.ErfOp: torch.erf,
    fusion.TanhOp: torch.tanh,
    fusion.SigmoidOp: torch.sigmoid,
    fusion.SqrtOp: torch.sqrt,
    fusion.RsqrtOp: torch.rsqrt,
    fusion.ReciprocalOp: torch.reciprocal,
}
_REDUCE: dict[type, Callable[..., torch.Tensor]] = {
    fusion.SumOp: torch.sum,
    fusion.MaxOp: torch.amax,
    fusion.MinOp: torch.amin,
    fusion.MeanOp: torch.mean,
}
_COMPARE: dict[str, Callable[..., torch.Tensor]] = {
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
}


def eager_kernel(op: fusion.FusionOp) -> Eager:
    """
    `f(*operands) -> result` for one fusion op (the reference semantics); an op without operands
    (`fusion.full`) takes `device=` instead, where to make its tensor.
    """
    kind = type(op)
    if (fn := _eager_extension(op)) is not None:
        return fn
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
        # A view: its consumers in the launch (attention, a GEMM) take strided operands, and a
        # launch's result is copied into its buffer by `out_kernel` anyway.
        perm = array_values(op.properties["perm"])
        return lambda x: x.permute(perm)
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
    if (into := _out_extension(op)) is not None:
        return into
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
        if _strided_matrix_mm(out, a, b):
            return
        # torch.matmul(out=) into a strided view fails or scrambles it when it folds batch axes
        # (a of rank >= 3 against a matrix); a stream loop over an inner result axis gives such
        # views. Loops over the outer axis, the pipelines' case, keep the copy-free path.
        out.copy_(torch.matmul(a, b))
        return
    if a.dim() == 1 and b.dim() == 2:
        # torch.matmul(out=) resizes a 1-D `out` to [1, N] here, which scrambles a strided view.
        torch.mm(a.unsqueeze(0), b, out=out.unsqueeze(0))
        return
    k, n = b.shape[-2:] if b.dim() >= 2 else (0, 0)
    if a.dim() >= 2 and k and n and all(d == 1 for d in b.shape[:-2]) and a.numel() // k == out.numel() // n:
        # A weight broadcast over a's batch axes (a tensor-parallel layer's [1, ..., K, N] shard):
        # one GEMM over all of a's rows, as F.linear runs it, instead of torch.matmul's batched
        # GEMM over an expanded copy of the weight.
        rows = out.numel() // n
        torch.mm(a.reshape(rows, k), b.reshape(k, n), out=out.view(rows, n))
        return
    torch.matmul(a, b, out=out)


def _strided_matrix_mm(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> bool:
    """
    One GEMM straight into `out` where every operand is a matrix (leading axes of extent 1) and
    `out` is a block of a larger row- or column-major matrix (a sharded weight's gradient block in
    its full-shaped `.grad`): BLAS writes such a block through its leading dimension, where a
    copy of the product would cost a read and a write of the whole block. Returns whether it ran.
    """
    if a.dim() < 2 or b.dim() < 2 or out.dim() < 2 or any(d != 1 for t in (out, a, b) for d in t.shape[:-2]):
        return False
    c, a, b = out.view(out.shape[-2:]), a.reshape(a.shape[-2:]), b.reshape(b.shape[-2:])
    if c.stride(1) == 1 and c.stride(0) >= c.shape[1]:
        torch.mm(a, b, out=c)
        return True
    if c.stride(0) == 1 and c.stride(1) >= c.shape[0]:  # column-major: C^T = B^T A^T, row-major
        torch.mm(b.t(), a.t(), out=c.t())
        return True
    return False


def _linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    if w.dim() == 1 and bias is not None:  # F.linear rejects a bias with a 1-D weight; the dialect allows a scalar one
        return torch.matmul(x, w) + bias
    return F.linear(x, w, bias)


def _linear_into(out: torch.Tensor, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None) -> None:
    if bias is None and w.dim() == 2 and x.dim() >= 2 and out.is_contiguous() and x.is_contiguous():
        # The common case first, in the fewest torch calls (a launch's host time before its
        # kernel is the caller's wait when the GPU is idle): x's rows times the weight's transpose.
        n, k = w.shape
        if n and k:
            torch.mm(x.view(-1, k), w.t(), out=out.view(-1, n))
            return
    if w.dim() == 2 and x.dim() == 2 and bias is not None:
        torch.addmm(bias, x, w.t(), out=out)
        return
    if w.dim() == 2 and x.dim() > 2 and bias is not None and out.is_contiguous():
        # One addmm over all rows, as F.linear runs it: the bias is added before the one rounding
        # of a bf16 result (a matmul, then an add, rounds twice).
        rows, n = math.prod(out.shape[:-1]), w.shape[0]  # not numel // n: n may be 0
        torch.addmm(bias, x.reshape(rows, x.shape[-1]), w.t(), out=out.view(rows, n))
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


# -- the ops real models need: activations, shapes, normalizations, constants, comparisons ------


def _eager_extension(op: fusion.FusionOp) -> Eager | None:
    kind = type(op)
    if kind is fusion.SiluOp:
        return F.silu
    if kind is fusion.GeluBackwardOp:
        approximate = op.approximate.data  # type: ignore[attr-defined]
        return lambda grad, x: torch.ops.aten.gelu_backward(grad, x, approximate=approximate)
    if kind is fusion.SiluBackwardOp:
        return torch.ops.aten.silu_backward
    if kind is fusion.GeluOp:
        approximate = op.approximate.data  # type: ignore[attr-defined]
        return lambda x: F.gelu(x, approximate=approximate)
    if kind is fusion.CompareOp:
        return _COMPARE[op.predicate.data]  # type: ignore[attr-defined]
    if kind is fusion.WhereOp:
        return torch.where
    if kind is fusion.FullOp:
        shape, value, dtype = _full(op)
        return lambda device: torch.full(shape, value, dtype=dtype, device=device)
    if kind is fusion.RandomOp:
        shape, dtype = list(op.result.type.get_shape()), shaped_dtype(op.result.type)  # type: ignore[attr-defined]
        draw = torch.rand if op.distribution.data == "uniform" else torch.randn  # type: ignore[attr-defined]
        return lambda device: draw(shape, dtype=dtype, device=device)
    if kind is fusion.ReshapeOp:
        target = _reshape_target(op)
        return lambda x: x.reshape(target(x))
    if kind is fusion.SliceOp:
        index = _slice_index(op)
        return lambda x: x[index]
    if kind is fusion.ConcatOp:
        dim = op.dim.value.data  # type: ignore[attr-defined]
        return lambda *xs: torch.cat(xs, dim)
    if kind is fusion.SoftmaxOp:
        dim = op.dim.value.data  # type: ignore[attr-defined]
        return lambda x: torch.softmax(x, dim)
    if kind is fusion.LayerNormOp or kind is fusion.RmsNormOp:
        return _norm(op)
    if isinstance(op, fusion.NormBackwardFusionOp):
        return norm_backward_kernel(op)
    if isinstance(op, fusion.ScaledDotProductAttentionOp):
        return sdpa_with_statistics_kernel(op) if reads_statistics(op) else sdpa_kernel(op)
    if isinstance(op, fusion.ScaledDotProductAttentionBackwardOp | fusion.ScaledDotProductAttentionStatsBackwardOp):
        return sdpa_backward_stacked_kernel(op)
    if isinstance(op, fusion.ScaledDotProductAttentionLogsumexpOp):
        return sdpa_logsumexp_kernel(op)
    return indexing_kernel(op)


def _out_extension(op: fusion.FusionOp) -> Into | None:
    kind = type(op)
    if kind is fusion.CompareOp:
        fn = _COMPARE[op.predicate.data]  # type: ignore[attr-defined]
        return lambda out, a, b: fn(a, b, out=out)
    if kind is fusion.WhereOp:
        return lambda out, c, a, b: torch.where(c, a, b, out=out)
    if kind is fusion.FullOp:
        value = _full(op)[1]
        return lambda out: out.fill_(value)
    if kind is fusion.RandomOp:  # in place, also into a chunk's strided view: from torch's generator
        if op.distribution.data == "uniform":  # type: ignore[attr-defined]
            return lambda out: out.uniform_()
        return lambda out: out.normal_()
    if kind is fusion.ReshapeOp:
        return _reshape_into
    if kind is fusion.ConcatOp:
        return _concat_into(op.dim.value.data)  # type: ignore[attr-defined]
    if kind is fusion.GeluOp:
        approximate = op.approximate.data  # type: ignore[attr-defined]
        return _contiguous_into(
            lambda out, x: torch.ops.aten.gelu.out(x, approximate=approximate, out=out), eager_kernel(op)
        )
    if isinstance(op, fusion.ScaledDotProductAttentionOp):
        return sdpa_into(op)
    if isinstance(op, fusion.ScaledDotProductAttentionBackwardOp | fusion.ScaledDotProductAttentionStatsBackwardOp):
        return sdpa_backward_into(op)
    if kind is fusion.SiluOp:
        return _contiguous_into(lambda out, x: torch.ops.aten.silu.out(x, out=out), eager_kernel(op))
    if kind is fusion.GeluBackwardOp:
        approximate = op.approximate.data  # type: ignore[attr-defined]
        return _contiguous_into(
            lambda out, grad, x: torch.ops.aten.gelu_backward.grad_input(
                grad, x, approximate=approximate, grad_input=out
            ),
            eager_kernel(op),
        )
    if kind is fusion.SiluBackwardOp:
        return _contiguous_into(
            lambda out, grad, x: torch.ops.aten.silu_backward.grad_input(grad, x, grad_input=out), eager_kernel(op)
        )
    if kind in (
        fusion.MeanOp,
        fusion.SliceOp,
        fusion.SoftmaxOp,
        fusion.ScaledDotProductAttentionLogsumexpOp,
    ) or isinstance(op, (fusion.NormFusionOp, fusion.NormBackwardFusionOp)):
        eager = eager_kernel(op)
        return lambda out, *xs: out.copy_(eager(*xs))
    return indexing_into(op)


def _contiguous_into(into: Into, eager: Eager) -> Into:
    """
    `into` (an aten out= form: no temporary, no copy of a large activation) for a contiguous
    destination; a strided view gets a copy of the eager result (gelu.out into a strided view
    leaves it unwritten on CPU).
    """

    def kernel(out: torch.Tensor, *xs: torch.Tensor) -> None:
        if out.is_contiguous():
            into(out, *xs)
        else:
            out.copy_(eager(*xs))

    return kernel


def _full(op: fusion.FusionOp) -> tuple[list[int], int | float | bool, torch.dtype]:
    assert isinstance(op, fusion.FullOp)
    dtype = shaped_dtype(op.result.type)
    value = op.number
    return list(op.result.type.get_shape()), bool(value) if dtype == torch.bool else value, dtype


def _reshape_into(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """
    `out` = `x` reshaped: copied through a view of `out` in `x`'s shape, one copy even when `x`
    is strided (a permute's view: `x.reshape` would copy it first); through `x.reshape` where
    `out` is strided (a chunk of a buffer), which has no such view in general.
    """
    if not out.is_contiguous():
        return out.copy_(x.reshape(out.shape))
    out.view(x.shape).copy_(x)
    return out


def _reshape_target(op: fusion.FusionOp) -> Callable[[torch.Tensor], list[int]]:
    """The result extents: static ones from the type, a dynamic one from the operand axis it keeps."""
    shape = list(op.results[0].type.get_shape())
    groups = rules.reshape_groups(op.operands[0].type.get_shape(), shape)
    sources = {dst[0]: src[0] for src, dst in groups if shape[dst[0]] == DYNAMIC_INDEX}  # always one to one
    if not sources:
        return lambda x: shape
    return lambda x: [x.shape[sources[b]] if b in sources else e for b, e in enumerate(shape)]


def _slice_index(op: fusion.FusionOp) -> tuple[slice, ...]:
    offsets = array_values(op.properties["offsets"])
    strides = array_values(op.properties["strides"])
    sizes = op.results[0].type.get_shape()
    return tuple(
        slice(None) if n == DYNAMIC_INDEX else slice(o, o + (n - 1) * s + 1 if n else o, s)
        for o, s, n in zip(offsets, strides, sizes)
    )


def _concat_into(dim: int) -> Into:
    """Each operand copied into its part of `out` (a strided view too): no temporary."""

    def into(out: torch.Tensor, *xs: torch.Tensor) -> None:
        start = 0
        for x in xs:
            out.narrow(dim, start, x.shape[dim]).copy_(x)
            start += x.shape[dim]

    return into


def _norm(op: fusion.FusionOp) -> Eager:
    assert isinstance(op, fusion.NormFusionOp)
    count, eps = len(array_values(op.dims)), op.eps.value.data
    if isinstance(op, fusion.RmsNormOp):
        return lambda x, weight=None: F.rms_norm(x, x.shape[-count:], weight, eps)
    return lambda x, weight=None, bias=None: F.layer_norm(x, x.shape[-count:], weight, bias, eps)
