"""
ATen builders of ops spelled with other fusion ops, each exactly: clamp and the clamping
activations, softplus, elu, var/std and vector norms, addmm/baddbmm, `_trilinear` (`nn.Bilinear`, as
batched matmuls), repeat, stack, split, pads,
masks and logical ops, in-place forms (copy, slice and select scatters, `x[mask] = v`), inference
batch norm. `COMPOSITE_TABLE` joins `ATEN_TABLE` (frontend/aten_table.py).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType, TensorType
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import (
    Builder,
    aten,
    concat,
    dims_of,
    fill_value,
    float_only,
    linear_of_product,
    opmath_element,
    out_element,
    truth,
    where,
)
from hir.frontend.aten_indexing import index_put
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of
from hir.frontend.types import element_type


def _clamp(e: Emitter, node: Node, x, low=None, high=None) -> SSAValue:
    """`min(max(x, low), high)`: with low > high every element is high, as in torch."""
    element = out_element(node)
    x = e.cast(x, element)
    if low is not None:
        x = e.binary(fusion.MaximumOp, x, low, element)
    if high is not None:
        x = e.binary(fusion.MinimumOp, x, high, element)
    return x


def _variance(e: Emitter, node: Node, x: SSAValue, dims, correction, keepdim: bool) -> SSAValue:
    """
    `sum((x - mean)^2) / (N - correction)` over `dims`, in the dtype torch's kernel computes in (f32
    for bf16 and f16, whose every step rounded was up to an ulp off): the caller casts the result.
    """
    element = opmath_element(out_element(node))
    x = e.cast(x, element)
    dims = dims_of(x, dims)
    count = math.prod(shape_of(x)[d] for d in dims)
    mean = e.reduce(fusion.MeanOp, x, dims, keepdim=True)
    centered = e.binary(fusion.SubOp, x, mean, element)
    total = e.reduce(fusion.SumOp, e.binary(fusion.MulOp, centered, centered, element), dims, keepdim)
    return e.binary(fusion.DivOp, total, float(max(0, count - (1 if correction is None else correction))), element)


def _var(e: Emitter, node: Node, x: SSAValue, *args, **kwargs) -> SSAValue:
    """var.correction(x, dim, *, correction, keepdim), var.dim(x, dim, unbiased, keepdim), var.default(x, unbiased)."""
    if node.target in (aten.var.default, aten.std.default):
        dims, unbiased, keepdim = None, args[0] if args else kwargs.get("unbiased", True), False
        correction = 1 if unbiased else 0
    elif node.target in (aten.var.dim, aten.std.dim):
        dims = args[0] if args else kwargs.get("dim")
        unbiased = args[1] if len(args) > 1 else kwargs.get("unbiased", True)
        keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
        correction = 1 if unbiased else 0
    else:
        dims = args[0] if args else kwargs.get("dim")
        correction, keepdim = kwargs.get("correction"), kwargs.get("keepdim", False)
    variance = _variance(e, node, x, dims, correction, keepdim)
    if node.target in (aten.std.default, aten.std.dim, aten.std.correction):
        variance = e.unary(fusion.SqrtOp, variance)
    return e.cast(variance, out_element(node))


def _vector_norm(e: Emitter, node: Node, x: SSAValue, ord=2, dim=None, keepdim: bool = False, *, dtype=None):
    """
    `torch.linalg.vector_norm`: `sum(|x|^ord)^(1/ord)`; ord inf/-inf the max/min of |x|, 0 the
    nonzero count. A bf16 or f16 norm is computed in f32 and rounded once, as torch's kernel does.
    """
    result = out_element(node)
    element = opmath_element(result)
    x = e.cast(x, element)
    return e.cast(_norm_of(e, x, ord, dims_of(x, dim), keepdim, element), result)


def _norm_of(e: Emitter, x: SSAValue, ord: float, dims: list[int], keepdim: bool, element: Any) -> SSAValue:
    size = e.unary(fusion.AbsOp, x)
    if ord == math.inf:
        return e.reduce(fusion.MaxOp, size, dims, keepdim)
    if ord == -math.inf:
        return e.reduce(fusion.MinOp, size, dims, keepdim)
    if ord == 0:
        zero = e.broadcast_to(e.constant(0.0, element), shape_of(x))
        nonzero = e.typed(lambda t: fusion.CompareOp("ne", x, zero, t), [x, zero], shape_of(x), IntegerType(1))
        return e.reduce(fusion.SumOp, e.cast(nonzero, element), dims, keepdim)
    if ord == 1:
        return e.reduce(fusion.SumOp, size, dims, keepdim)
    if ord == 2:
        return e.unary(fusion.SqrtOp, e.reduce(fusion.SumOp, e.binary(fusion.MulOp, x, x, element), dims, keepdim))
    total = e.reduce(fusion.SumOp, e.binary(fusion.PowOp, size, float(ord), element), dims, keepdim)
    return e.binary(fusion.PowOp, total, 1.0 / ord, element)


def _add_product(e: Emitter, node: Node, bias, a, b, *, beta=1, alpha=1) -> SSAValue:
    """addmm / baddbmm: `beta * bias + alpha * (a @ b)` (beta = 0 ignores the bias, NaNs too, as torch)."""
    element = out_element(node)
    if _is_linear(node, bias, a, b, beta, alpha):
        # A biased linear as autograd records it (`addmm(bias, x, w.t())`): one fusion.linear, one
        # GEMM with the bias added before its one rounding, where the bias broadcast and added
        # after the product are two more passes over the result.
        return linear_of_product(e, node, a, b, bias)
    wide = opmath_element(element)
    if wide != element and (alpha != 1 or beta != 0):
        # torch's bf16 or f16 kernel scales and adds in its f32 accumulator and rounds once
        # (BLOOM's ALiBi `baddbmm`): the product of f32 casts is the same accumulation.
        a, b = e.cast(a, wide), e.cast(b, wide)
        bias = e.cast(bias, wide) if isinstance(bias, SSAValue) else bias
    product = e.typed(lambda t: fusion.MatmulOp(a, b, t), [a, b], tuple(node.meta["val"].shape), wide)
    if alpha != 1:
        product = e.binary(fusion.MulOp, product, alpha, wide)
    if beta != 0:
        if beta != 1:
            bias = e.binary(fusion.MulOp, bias, beta, wide)
        product = e.binary(fusion.AddOp, bias, product, wide)
    return e.cast(product, element)


def _is_linear(node: Node, bias: Any, a: Any, b: Any, beta: Any, alpha: Any) -> bool:
    """Whether an addmm is `a @ b + bias` of matrices with a bias per column, all of one element type."""
    if node.target is not torch.ops.aten.addmm.default or beta != 1 or alpha != 1:
        return False
    if not all(isinstance(v, SSAValue) for v in (bias, a, b)):
        return False
    shapes = [shape_of(v) for v in (bias, a, b)]
    elements = {element_of(v) for v in (bias, a, b)}
    return len(shapes[1]) == 2 and len(shapes[2]) == 2 and shapes[0] == (shapes[2][1],) and len(elements) == 1


def _contract(e: Emitter, a: SSAValue, b: SSAValue, summed: set[int]) -> SSAValue:
    """
    `(a * b).sum(summed, keepdim=True)` for `a` and `b` of one rank (axes of extent 1 broadcast) as one
    batched `fusion.matmul`: the axes both have batch it, an axis summed in both is the inner
    dimension, an axis one of them has is its side's rows or columns.
    """
    for d in summed:  # an axis summed where only one operand has it: summed on that operand alone
        if shape_of(a)[d] != 1 and shape_of(b)[d] == 1:
            a = e.reduce(fusion.SumOp, a, [d], keepdim=True)
        elif shape_of(b)[d] != 1 and shape_of(a)[d] == 1:
            b = e.reduce(fusion.SumOp, b, [d], keepdim=True)
    sa, sb = shape_of(a), shape_of(b)
    axes = range(len(sa))
    batch = [d for d in axes if d not in summed and sa[d] != 1 and sb[d] != 1]
    rows = [d for d in axes if d not in summed and sa[d] != 1 and sb[d] == 1]
    columns = [d for d in axes if d not in summed and sa[d] == 1 and sb[d] != 1]
    inner = [d for d in axes if d in summed and sa[d] != 1]
    rest = [d for d in axes if d not in (*batch, *rows, *columns, *inner)]  # extent 1 in the result

    def extent(shape: tuple[int, ...], group: list[int]) -> int:
        return math.prod(shape[d] for d in group)

    element = element_of(a)
    left = e.reshape(
        e.permute(a, batch + rows + inner + columns + rest), (extent(sa, batch), extent(sa, rows), extent(sa, inner))
    )
    right = e.reshape(
        e.permute(b, batch + inner + columns + rows + rest), (extent(sb, batch), extent(sb, inner), extent(sb, columns))
    )
    product_shape = (extent(sa, batch), extent(sa, rows), extent(sb, columns))
    product = e.typed(lambda t: fusion.MatmulOp(left, right, t), [left, right], product_shape, element)
    order = batch + rows + columns + inner + rest
    laid = tuple(1 if d in inner or d in rest else max(sa[d], sb[d]) for d in order)
    product = e.reshape(product, laid, "a contraction")
    return e.permute(product, [order.index(d) for d in axes])


def _trilinear(
    e: Emitter, node: Node, i1: SSAValue, i2: SSAValue, i3: SSAValue, expand1, expand2, expand3, sumdim, unroll_dim=1
) -> SSAValue:
    """
    `aten._trilinear` (`nn.Bilinear`, and its backward): `(i1 * i2 * i3).sum(sumdim)`, each unsqueezed
    at its `expand` axes, as two contractions: i1 with i2 over the summed axes i3 lacks, then with i3.
    """
    element = out_element(node)
    a, b, c = (
        e.unsqueeze(e.cast(v, element), sorted(axes)) for v, axes in ((i1, expand1), (i2, expand2), (i3, expand3))
    )
    summed = {d % len(shape_of(a)) for d in sumdim}
    first = {d for d in summed if shape_of(c)[d] == 1}
    y = _contract(e, _contract(e, a, b, first), c, summed - first)
    return e.squeeze(y, sorted(summed))


def _repeat(e: Emitter, node: Node, x: SSAValue, repeats) -> SSAValue:
    """`x.repeat(r)`: a broadcast to `[r0, s0, r1, s1, ...]`, then the view `[r0 * s0, r1 * s1, ...]`."""
    repeats = list(repeats)
    lead = len(repeats) - len(shape_of(x))
    if lead < 0:
        raise e.error(f"{node.target}: {len(repeats)} repeats for a tensor of rank {len(shape_of(x))}")
    if lead:
        x = e.unsqueeze(x, list(range(lead)))
    shape = shape_of(x)
    if all(r == 1 for r in repeats):
        return x
    interleaved = tuple(n for pair in zip(repeats, shape) for n in pair)
    new_axes = list(range(0, 2 * len(shape), 2))
    spread = e.typed(lambda t: fusion.ExpandOp(x, new_axes, t), [x], interleaved, element_of(x))
    return e.reshape(spread, tuple(node.meta["val"].shape), f"{node.target}")


def _stack(e: Emitter, node: Node, xs, dim: int = 0) -> SSAValue:
    element = out_element(node)
    rank = len(shape_of(xs[0])) + 1
    parts = [e.unsqueeze(e.cast(x, element), [dim % rank]) for x in xs]
    if len(parts) == 1:
        return parts[0]
    shape = tuple(node.meta["val"].shape)
    return e.typed(lambda t: fusion.ConcatOp(parts, dim % rank, t), parts, shape, element)


def _pieces(e: Emitter, node: Node, x: SSAValue, dim: int) -> tuple[SSAValue, ...]:
    """split / split_with_sizes / chunk / unbind: one `fusion.slice` per piece, by the recorded shapes."""
    rank = len(shape_of(x))
    dim %= rank
    pieces, start = [], 0
    for val in node.meta["val"]:
        shape = tuple(val.shape)
        kept = shape if len(shape) == rank else (*shape[:dim], 1, *shape[dim:])
        offsets = [start if k == dim else 0 for k in range(rank)]
        if kept == shape_of(x):
            piece = x
        else:
            piece = e.typed(lambda t, o=offsets: fusion.SliceOp(x, o, [1] * rank, t), [x], kept, element_of(x))
        pieces.append(piece if len(shape) == rank else e.squeeze(piece, [dim]))
        start += kept[dim]
    return tuple(pieces)


def _split(e: Emitter, node: Node, x: SSAValue, sizes, dim: int = 0) -> tuple[SSAValue, ...]:
    return _pieces(e, node, x, dim)


def _unbind(e: Emitter, node: Node, x: SSAValue, dim: int = 0) -> tuple[SSAValue, ...]:
    return _pieces(e, node, x, dim)


def _softplus(e: Emitter, node: Node, x: SSAValue, beta=1, threshold=20) -> SSAValue:
    """
    `log1p(exp(beta * x)) / beta`, and x itself where `beta * x > threshold` (torch's formula), for
    bf16 and f16 in f32 as torch's kernel: f16's exp overflows past 11, which made (11, 20] infinite.
    """
    element = out_element(node)
    wide = opmath_element(element)
    x = e.cast(x, wide)
    scaled = x if beta == 1 else e.binary(fusion.MulOp, x, beta, wide)
    soft = e.unary(fusion.Log1pOp, e.unary(fusion.ExpOp, scaled))
    if beta != 1:
        soft = e.binary(fusion.DivOp, soft, beta, wide)
    bound = e.broadcast_to(e.constant(threshold, wide), shape_of(x))
    linear = e.typed(lambda t: fusion.CompareOp("gt", scaled, bound, t), [scaled, bound], shape_of(x), IntegerType(1))
    return e.cast(e.typed(lambda t: fusion.WhereOp(linear, x, soft, t), [linear, x, soft], shape_of(x), wide), element)


def _masked_fill(e: Emitter, node: Node, x: SSAValue, mask: SSAValue, value) -> SSAValue:
    return where(e, node, mask, value, x)


def _copy(e: Emitter, node: Node, destination: SSAValue, source: SSAValue, non_blocking: bool = False) -> SSAValue:
    """The functional form of `destination.copy_(source)`: source broadcast and cast to the destination."""
    source = e.broadcast_to(source, shape_of(destination), destination)
    return e.cast(source, element_of(destination))


def _scalar_tensor(e: Emitter, node: Node, value, **kwargs) -> SSAValue:
    return e.emit(fusion.FullOp(fill_value(value, node.meta["val"].dtype), TensorType(out_element(node), ())))


def _new_full(e: Emitter, node: Node, x: SSAValue, size, *args, **kwargs) -> SSAValue:
    """new_zeros / new_ones / new_full / new_empty (its values are any: zeros)."""
    val = node.meta["val"]
    fill = 1 if node.target == aten.new_ones.default else args[0] if node.target == aten.new_full.default else 0
    return e.emit(
        fusion.FullOp(fill_value(fill, val.dtype), TensorType(element_type(val.dtype, node), tuple(val.shape)))
    )


def _empty(e: Emitter, node: Node, *args, **kwargs) -> SSAValue:
    """empty, empty_like, empty_strided, new_empty_strided (a backward's buffer that a copy fills): zeros;
    values have no strides, so the strides asked for are the layout torch gives the copy, not a value."""
    val = node.meta["val"]
    return e.emit(fusion.FullOp(0, TensorType(element_type(val.dtype, node), tuple(val.shape))))


def _logical_not(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    if node.target == aten.bitwise_not.default and element_of(x) != IntegerType(1):
        # `~x` of integers is `-1 - x` in two's complement (`255 - x` of uint8: -1 wraps to 255)
        return e.binary(fusion.SubOp, -1, x, element_of(x))
    zero = e.broadcast_to(e.constant(0, element_of(x)), shape_of(x))
    return e.typed(lambda t: fusion.CompareOp("eq", x, zero, t), [x, zero], shape_of(x), IntegerType(1))


def _logical_xor(e: Emitter, node: Node, a, b) -> SSAValue:
    """`truth(a) != truth(b)` (`^` of booleans; bitwise_xor of integers is `fusion.bitxor`)."""
    if node.target in (aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar) and out_element(node) != IntegerType(1):
        return _bitwise(e, node, fusion.BitXorOp, a, b)
    a, b = (truth(e, v) if isinstance(v, SSAValue) else e.constant(bool(v), IntegerType(1)) for v in (a, b))
    a, b = e.broadcast_pair(a, b)
    return e.typed(lambda t: fusion.CompareOp("ne", a, b, t), [a, b], shape_of(a), IntegerType(1))


def _logical(conjunction: bool) -> Builder:
    """and: `where(a, b, false)`; or: `where(a, true, b)`, on booleans (other values: `!= 0` first)."""

    def build(e: Emitter, node: Node, a, b) -> SSAValue:
        bitwise = (aten.bitwise_and.Tensor, aten.bitwise_or.Tensor, aten.bitwise_and.Scalar, aten.bitwise_or.Scalar)
        if node.target in bitwise and out_element(node) != IntegerType(1):
            return _bitwise(e, node, fusion.BitAndOp if conjunction else fusion.BitOrOp, a, b)
        a, b = (truth(e, v) if isinstance(v, SSAValue) else bool(v) for v in (a, b))
        return where(e, node, a, b, False) if conjunction else where(e, node, a, True, b)

    return build


def _bitwise(e: Emitter, node: Node, kind: type[fusion.BinaryFusionOp], a: Any, b: Any) -> SSAValue:
    """`a & b`, `a | b`, `a ^ b` of integers (int4 nibbles packed with `(hi << 4) | lo`, hashed ids)."""
    element = out_element(node)
    if not isinstance(element, IntegerType):
        raise e.error(f"{node.target} on {node.meta['val'].dtype} tensors: bitwise ops are of integers and booleans")
    return e.binary(kind, a, b, element)


def _shift(left: bool) -> Builder:
    """
    `a << s` and `a >> s` of integers (int4 weights unpacked from int32 words: `(q >> shifts) & 0xF`):
    `a * 2^s`, which wraps in a's width as the shift does, and `floor(a / 2^s)`, the arithmetic
    shift, in i64 (2^s of a narrower width would overflow). 2^s is computed in f64, exact.
    """

    def build(e: Emitter, node: Node, a: Any, s: Any) -> SSAValue:
        element = out_element(node)
        if not isinstance(element, IntegerType) or element.width.data == 1:
            raise e.error(f"{node.target} on {node.meta['val'].dtype} tensors: shifts are of integers")
        wide, real = IntegerType(64), Float64Type()
        a = e.cast(a, wide) if isinstance(a, SSAValue) else a
        if left:  # 2^63 wraps to i64's minimum, as a shift by 63 does; a larger shift leaves 0
            factor = e.cast(e.binary(fusion.PowOp, 2.0, e.cast(s, real), real), wide) if isinstance(s, SSAValue) else s
            factor = factor if isinstance(factor, SSAValue) else (2**factor + 2**63) % 2**64 - 2**63
            return e.cast(e.binary(fusion.MulOp, a, factor, wide), element)
        # 2^63 is no i64: a shift by more than 62 divides by 2^62, then by 2 (floors compose exactly)
        if isinstance(s, SSAValue):
            s = e.cast(s, wide)
            first = e.cast(
                e.binary(fusion.PowOp, 2.0, e.cast(e.binary(fusion.MinimumOp, s, 62, wide), real), real), wide
            )
            result = e.binary(fusion.FloorDivOp, a, first, wide)
            if element.width.data == 64:
                rest = e.binary(
                    fusion.MaximumOp, e.binary(fusion.MinimumOp, e.binary(fusion.SubOp, s, 62, wide), 1, wide), 0, wide
                )
                result = e.binary(fusion.FloorDivOp, result, e.binary(fusion.AddOp, rest, 1, wide), wide)
        else:
            result = e.binary(fusion.FloorDivOp, a, 2 ** min(int(s), 62), wide)
            if int(s) > 62:
                result = e.binary(fusion.FloorDivOp, result, 2, wide)
        return e.cast(result, element)

    return build


def _along(e: Emitter, x: SSAValue, dim: int, offset: int, size: int) -> SSAValue:
    """`x` sliced to `[offset, offset + size)` along `dim`."""
    shape = shape_of(x)
    kept = tuple(size if k == dim else n for k, n in enumerate(shape))
    offsets = [offset if k == dim else 0 for k in range(len(shape))]
    return e.typed(lambda t: fusion.SliceOp(x, offsets, [1] * len(shape), t), [x], kept, element_of(x))


def _slice_scatter(e: Emitter, node: Node, x: SSAValue, source: SSAValue, dim: int = 0, start=None, end=None, step=1):
    """
    `x[..., start:end:step, ...] = source` in functional form: the parts of x around it,
    concatenated. With a step, the stretch the slice spans is viewed as `[n, step]` (x padded with
    zeros where its last row runs past x), its first column replaced by the source, and viewed back
    (the backward of `x[..., ::2]`, GPT-J's rotary embedding).
    """
    shape = shape_of(x)
    dim %= len(shape)
    begin = 0 if start is None else start + shape[dim] if start < 0 else start
    begin = max(0, min(shape[dim], begin))
    if node.target == aten.select_scatter.default:
        source = e.unsqueeze(source, [dim])
    source = e.cast(source, element_of(x))
    count = shape_of(source)[dim]
    if step != 1 and count > 1:
        span = count * step
        padded = x
        if begin + span > shape[dim]:
            extra = tuple(begin + span - shape[dim] if k == dim else n for k, n in enumerate(shape))
            padded = concat(e, [x, e.emit(fusion.FullOp(0, TensorType(element_of(x), extra)))], dim)
        rows = e.reshape(_along(e, padded, dim, begin, span), (*shape[:dim], count, step, *shape[dim + 1 :]))
        rows = concat(e, [e.unsqueeze(source, [dim + 1]), _along(e, rows, dim + 1, 1, step - 1)], dim + 1)
        source = e.reshape(rows, tuple(span if k == dim else n for k, n in enumerate(shape)))
        count = min(span, shape[dim] - begin)
        if count < span:
            source = _along(e, source, dim, 0, count)
    finish = begin + count
    parts = [_along(e, x, dim, offset, size) for offset, size in ((0, begin), (finish, shape[dim] - finish)) if size]
    parts.insert(1 if begin else 0, source)
    return concat(e, parts, dim)


def _select_scatter(e: Emitter, node: Node, x: SSAValue, source: SSAValue, dim: int, index: int) -> SSAValue:
    return _slice_scatter(e, node, x, source, dim, index % shape_of(x)[dim % len(shape_of(x))])


def _rounding(kind: type[fusion.UnaryFusionOp]) -> Builder:
    """floor / ceil / round / trunc: the op on floats, nothing on integers (already whole)."""

    def build(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
        return e.unary(kind, x) if is_float(element_of(x)) else x

    return build


def _round_decimals(e: Emitter, node: Node, x: SSAValue, *, decimals: int = 0) -> SSAValue:
    """`torch.round(x, decimals=d)` as torch's kernel: `round(x * 10^d) / 10^d`, or `round(x / 10^-d) * 10^-d`."""
    element = element_of(x)
    power = float(torch.tensor(10.0, dtype=torch.float64) ** abs(decimals))
    scale, unscale = (fusion.MulOp, fusion.DivOp) if decimals > 0 else (fusion.DivOp, fusion.MulOp)
    return e.binary(unscale, e.unary(fusion.RoundOp, e.binary(scale, x, power, element)), power, element)


def _scaled_unary(kind: type[fusion.UnaryFusionOp], before: float, after: float) -> Builder:
    """
    log2 = log(x) / ln 2: an op of the dialect between two scalings; bf16 and f16 computed in f32
    and rounded once, as torch's kernels (scaled in bf16, `log2` and `exp2` were ulps off).
    """

    def build(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
        element = out_element(node)
        inner = Float32Type() if element in (BFloat16Type(), Float16Type()) else element
        x = e.cast(x, inner)
        if before != 1:
            x = e.binary(fusion.MulOp, x, before, inner)
        y = e.unary(kind, x)
        return e.cast(y if after == 1 else e.binary(fusion.MulOp, y, after, inner), element)

    return build


def _exp2(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    """
    `torch.exp2(x)`: `2 ** x` (`fusion.pow`, exact at whole x: `exp(x ln 2)` was 1e-6 off `2^100` in
    f32, and 10% off `2^88.5` in bf16, whose `x ln 2` rounded to bf16); bf16 and f16 in f32.
    """
    element = out_element(node)
    inner = Float32Type() if element in (BFloat16Type(), Float16Type()) else element
    return e.cast(e.binary(fusion.PowOp, 2.0, e.cast(x, inner), inner), element)


def _is_nan(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    """`x != x`: true for NaN alone (fusion.compare ne is unordered)."""
    return e.typed(lambda t: fusion.CompareOp("ne", x, x, t), [x], shape_of(x), IntegerType(1))


def _is_inf(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    if not is_float(element_of(x)):
        return e.emit(fusion.FullOp(False, TensorType(IntegerType(1), shape_of(x))))
    size = e.unary(fusion.AbsOp, x)
    inf = e.broadcast_to(e.constant(math.inf, element_of(x)), shape_of(x))
    return e.typed(lambda t: fusion.CompareOp("eq", size, inf, t), [size, inf], shape_of(x), IntegerType(1))


def _hardtanh(e: Emitter, node: Node, x: SSAValue, low=-1.0, high=1.0) -> SSAValue:
    return _clamp(e, node, x, low, high)


def _leaky_relu(e: Emitter, node: Node, x: SSAValue, slope=0.01) -> SSAValue:
    """bf16 and f16: the product with the slope in f32, rounded once, as torch's kernel (not by a bf16 slope)."""
    element = out_element(node)
    wide = opmath_element(element)
    negative = e.cast(e.binary(fusion.MulOp, e.cast(x, wide), slope, wide), element)
    return _positive_or(e, x, negative, element)


def _elu(e: Emitter, node: Node, x: SSAValue, alpha=1.0, scale=1.0, input_scale=1.0) -> SSAValue:
    """
    `scale * (x if x > 0 else alpha * expm1(input_scale * x))` (selu and celu are its forms); bf16
    and f16 in f32, rounded once, as torch's kernel (selu's scale was a second rounding).
    """
    element = out_element(node)
    wide = opmath_element(element)
    x = e.cast(x, wide)
    inner = x if input_scale == 1 else e.binary(fusion.MulOp, x, input_scale, wide)
    negative = e.unary(fusion.Expm1Op, inner)
    if alpha != 1:
        negative = e.binary(fusion.MulOp, negative, alpha, wide)
    result = _positive_or(e, x, negative, wide)
    return e.cast(result if scale == 1 else e.binary(fusion.MulOp, result, scale, wide), element)


def _positive_or(e: Emitter, x: SSAValue, otherwise: SSAValue, element) -> SSAValue:
    zero = e.broadcast_to(e.constant(0, element), shape_of(x))
    positive = e.typed(lambda t: fusion.CompareOp("gt", x, zero, t), [x, zero], shape_of(x), IntegerType(1))
    return e.typed(lambda t: fusion.WhereOp(positive, x, otherwise, t), [positive, x, otherwise], shape_of(x), element)


def _any_or_all(kind: type[fusion.ReductionFusionOp]) -> Builder:
    """any: the max of `x != 0` as i32; all: the min; then `!= 0` again (an empty reduction: torch's answer)."""

    def build(e: Emitter, node: Node, x: SSAValue, dims=None, keepdim: bool = False) -> SSAValue:
        counted = e.cast(truth(e, x), IntegerType(32))
        dims = dims_of(x, dims)
        if any(shape_of(x)[d] == 0 for d in dims):
            val = node.meta["val"]
            empty = kind is fusion.MinOp  # all() of nothing is true, any() false
            return e.emit(fusion.FullOp(empty, TensorType(IntegerType(1), tuple(val.shape))))
        return truth(e, e.reduce(kind, counted, dims, keepdim))

    return build


def _extreme(kind: type[fusion.ReductionFusionOp]) -> Builder:
    """max() / min() of all elements."""

    def build(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
        return e.reduce(kind, x, dims_of(x, None), keepdim=False)

    return build


def _constant_pad(e: Emitter, node: Node, x: SSAValue, pad, value=0) -> SSAValue:
    """F.pad's constant mode: `fusion.full` blocks concatenated around x (negative pads: slices)."""
    element = element_of(x)
    fill = fill_value(value, node.meta["val"].dtype)
    pad = list(pad)
    for k in range(len(pad) // 2):
        dim = len(shape_of(x)) - 1 - k
        before, after = pad[2 * k], pad[2 * k + 1]
        shape = shape_of(x)
        start, stop = max(0, -before), shape[dim] - max(0, -after)
        if start or stop != shape[dim]:
            kept = tuple(stop - start if d == dim else n for d, n in enumerate(shape))
            offsets = [start if d == dim else 0 for d in range(len(shape))]
            x = e.typed(lambda t, v=x, o=offsets: fusion.SliceOp(v, o, [1] * len(o), t), [x], kept, element)
        parts = []
        for size in (before, None, after):
            if size is None:
                parts.append(x)
            elif size > 0:
                block = tuple(size if d == dim else n for d, n in enumerate(shape_of(x)))
                parts.append(e.emit(fusion.FullOp(fill, TensorType(element, block))))
        if len(parts) > 1:
            total = tuple(sum(shape_of(p)[dim] for p in parts) if d == dim else n for d, n in enumerate(shape_of(x)))
            x = e.typed(lambda t, ps=parts, d=dim: fusion.ConcatOp(ps, d, t), parts, total, element)
    return x


def _var_mean(e: Emitter, node: Node, x: SSAValue, dims=None, *, correction=None, keepdim: bool = False):
    variance = e.cast(_variance(e, node, x, dims, correction, keepdim), out_element(node, 0))
    mean = e.reduce(fusion.MeanOp, e.cast(x, out_element(node, 1)), dims_of(x, dims), keepdim)
    return variance, mean


def _batch_norm_eval(e: Emitter, node: Node, x, weight, bias, mean, var, momentum, eps):
    """Inference batch norm: `(x - mean) / sqrt(var + eps) * weight + bias` over axis 1 (no saved statistics)."""
    result = out_element(node, 0)
    element = opmath_element(result)  # bf16 and f16 in f32, rounded once, as torch's kernel
    x = e.cast(x, element)
    shape = shape_of(x)
    others = [d for d in range(len(shape)) if d != 1]

    def per_channel(v: SSAValue) -> SSAValue:
        return e.broadcast_to(
            e.unsqueeze(e.cast(v, element), [d for d in others if d > 0] + ([0] if 0 in others else [])), shape
        )

    inv = e.unary(fusion.RsqrtOp, e.binary(fusion.AddOp, e.cast(var, element), eps, element))
    y = e.binary(fusion.MulOp, e.binary(fusion.SubOp, x, per_channel(mean), element), per_channel(inv), element)
    if weight is not None:
        y = e.binary(fusion.MulOp, y, per_channel(weight), element)
    if bias is not None:
        y = e.binary(fusion.AddOp, y, per_channel(bias), element)
    return e.cast(y, result), None, None


def _index_put(e: Emitter, node: Node, x: SSAValue, indices, values, accumulate: bool = False) -> SSAValue:
    """
    `x[mask] = v` with one boolean mask and a scalar or a row of the axes after it:
    `fusion.where(mask, v, x)`; integer index tensors: `fusion.index_add` (aten_indexing.index_put);
    other forms scatter.
    """
    picked = [(k, index) for k, index in enumerate(indices) if index is not None]
    if picked and all(_is_integer_index(index) for _, index in picked):
        return index_put(e, node, x, indices, values, accumulate)
    boolean = len(picked) == 1 and element_of(picked[0][1]) == IntegerType(1)
    shape = shape_of(x)
    # The value of each selected element: a scalar, or one row of the axes after the mask's
    # (wav2vec's `x[mask_time_indices] = self.masked_spec_embed`); one per selected element is a scatter.
    row = shape[picked[0][0] + len(shape_of(picked[0][1])) :] if boolean else ()
    value_shape = list(shape_of(values))
    while value_shape and value_shape[0] == 1:
        value_shape.pop(0)
    per_row = len(value_shape) <= len(row) and all(
        v in (1, r) for v, r in zip(value_shape, row[len(row) - len(value_shape) :])
    )
    if accumulate or not boolean or not per_row:
        raise e.error(
            f"{node.target}: an indexed assignment other than `x[mask] = value` or one at integer indices scatters "
            "values, which fusion does not have: write it with torch.where"
        )
    axis, mask = picked[0]
    if shape_of(mask) != shape[axis : axis + len(shape_of(mask))]:
        raise e.error(f"{node.target}: the mask {list(shape_of(mask))} does not cover axes {axis}.. of {list(shape)}")
    trailing = len(shape) - axis - len(shape_of(mask))
    if trailing:
        mask = e.unsqueeze(mask, list(range(len(shape_of(mask)), len(shape_of(mask)) + trailing)))
    mask = e.broadcast_to(mask, shape, x)
    leading = len(shape_of(values)) - len(value_shape)
    value = e.squeeze(values, list(range(leading))) if leading else values
    value = e.broadcast_to(e.cast(value, element_of(x)), shape, x)
    return e.typed(lambda t: fusion.WhereOp(mask, value, x, t), [mask, value, x], shape, element_of(x))


def _is_integer_index(index: SSAValue) -> bool:
    element = element_of(index)
    return isinstance(element, IntegerType) and element.width.data != 1


COMPOSITE_TABLE: dict[torch._ops.OpOverload, Builder] = {
    aten.clamp.default: _clamp,
    aten.clamp.Tensor: _clamp,
    aten.clamp_min.default: lambda e, node, x, low: _clamp(e, node, x, low, None),
    aten.clamp_max.default: lambda e, node, x, high: _clamp(e, node, x, None, high),
    aten.log2.default: float_only(_scaled_unary(fusion.LogOp, 1.0, 1 / math.log(2))),
    aten.exp2.default: float_only(_exp2),
    aten.floor.default: _rounding(fusion.FloorOp),
    aten.ceil.default: _rounding(fusion.CeilOp),
    aten.round.default: _rounding(fusion.RoundOp),
    aten.round.decimals: float_only(_round_decimals),
    aten.trunc.default: _rounding(fusion.TruncOp),
    aten.isnan.default: _is_nan,
    aten.isinf.default: _is_inf,
    aten.softplus.default: float_only(_softplus),
    aten.hardtanh.default: _hardtanh,
    aten.leaky_relu.default: float_only(_leaky_relu),
    aten.elu.default: float_only(_elu),
    aten._native_batch_norm_legit_no_training.default: float_only(_batch_norm_eval),
    aten.masked_fill.Scalar: _masked_fill,
    aten.masked_fill.Tensor: _masked_fill,
    aten.index_put.default: _index_put,
    aten.logical_not.default: _logical_not,
    aten.bitwise_not.default: _logical_not,
    aten.logical_and.default: _logical(conjunction=True),
    aten.logical_or.default: _logical(conjunction=False),
    aten.logical_xor.default: _logical_xor,
    aten.bitwise_xor.Tensor: _logical_xor,
    aten.bitwise_and.Tensor: _logical(conjunction=True),
    aten.bitwise_and.Scalar: _logical(conjunction=True),
    aten.bitwise_or.Scalar: _logical(conjunction=False),
    aten.bitwise_xor.Scalar: _logical_xor,
    aten.__rshift__.Scalar: _shift(left=False),
    aten.__rshift__.Tensor: _shift(left=False),
    aten.bitwise_right_shift.Tensor: _shift(left=False),
    aten.bitwise_right_shift.Tensor_Scalar: _shift(left=False),
    aten.bitwise_right_shift.Scalar_Tensor: _shift(left=False),
    aten.__lshift__.Scalar: _shift(left=True),
    aten.__lshift__.Tensor: _shift(left=True),
    aten.bitwise_left_shift.Tensor: _shift(left=True),
    aten.bitwise_left_shift.Tensor_Scalar: _shift(left=True),
    aten.bitwise_left_shift.Scalar_Tensor: _shift(left=True),
    aten.bitwise_or.Tensor: _logical(conjunction=False),
    aten.scalar_tensor.default: _scalar_tensor,
    aten.new_zeros.default: _new_full,
    aten.new_ones.default: _new_full,
    aten.new_full.default: _new_full,
    aten.new_empty.default: _new_full,
    aten.empty.memory_format: _empty,
    aten.empty_like.default: _empty,
    aten.empty_strided.default: _empty,
    aten.new_empty_strided.default: _empty,
    aten.copy.default: _copy,
    aten.slice_scatter.default: _slice_scatter,
    aten.constant_pad_nd.default: _constant_pad,
    aten.select_scatter.default: _select_scatter,
    aten.stack.default: _stack,
    aten.repeat.default: _repeat,
    aten.split.Tensor: _split,
    aten.split_with_sizes.default: _split,
    aten.chunk.default: _split,
    aten.unbind.int: _unbind,
    aten.var.correction: float_only(_var),
    aten.var.dim: float_only(_var),
    aten.var.default: float_only(_var),
    aten.std.correction: float_only(_var),
    aten.std.dim: float_only(_var),
    aten.std.default: float_only(_var),
    aten.linalg_vector_norm.default: float_only(_vector_norm),
    aten.var_mean.correction: float_only(_var_mean),
    aten.any.dim: _any_or_all(fusion.MaxOp),
    aten.any.dims: _any_or_all(fusion.MaxOp),
    aten.any.default: _any_or_all(fusion.MaxOp),
    aten.all.dim: _any_or_all(fusion.MinOp),
    aten.all.dims: _any_or_all(fusion.MinOp),
    aten.all.default: _any_or_all(fusion.MinOp),
    aten.max.default: _extreme(fusion.MaxOp),
    aten.min.default: _extreme(fusion.MinOp),
    aten.addmm.default: _add_product,
    aten.baddbmm.default: _add_product,
    aten._trilinear.default: _trilinear,
}
