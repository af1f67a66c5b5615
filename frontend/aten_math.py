"""
Math functions fusion spells with its unary ops, each as torch computes it up to rounding:
`tan = sin / cos`, `sinh = (expm1(x) - expm1(-x)) / 2` (no cancellation near 0), `cosh = (exp(x)
+ exp(-x)) / 2`, `hypot = sqrt(a^2 + b^2)` (in f64, or scaled), `log10 = log(x) / ln 10`; and `Tensor.unfold`, the
sliding windows of an axis: a reshape where the windows tile it, else one strided slice per
position in the window, stacked on a new last axis; `as_strided` of a dense tensor (a reshape of
its memory, else an `index_select` of the positions) and its `as_strided_scatter` (an
`index_copy` at them); `torch.cdist` over a broadcast of the
differences; `bucketize` / `searchsorted` as counts of the boundaries below each value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType, TensorType
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, float_only, opmath_element, out_element
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of

I64 = IntegerType(64)


def _tan(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    element = out_element(node)
    wide = opmath_element(element)  # bf16 and f16 in f32, rounded once, as torch's kernels
    x = e.cast(x, wide)
    return e.cast(e.binary(fusion.DivOp, e.unary(fusion.SinOp, x), e.unary(fusion.CosOp, x), wide), element)


def _sinh(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    element = out_element(node)
    wide = opmath_element(element)
    x = e.cast(x, wide)
    up, down = e.unary(fusion.Expm1Op, x), e.unary(fusion.Expm1Op, e.unary(fusion.NegOp, x))
    return e.cast(e.binary(fusion.MulOp, e.binary(fusion.SubOp, up, down, wide), 0.5, wide), element)


def _cosh(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    element = out_element(node)
    wide = opmath_element(element)
    x = e.cast(x, wide)
    up, down = e.unary(fusion.ExpOp, x), e.unary(fusion.ExpOp, e.unary(fusion.NegOp, x))
    return e.cast(e.binary(fusion.MulOp, e.binary(fusion.AddOp, up, down, wide), 0.5, wide), element)


def _hypot(e: Emitter, node: Node, a: SSAValue, b: SSAValue) -> SSAValue:
    """
    `torch.hypot(a, b)` as C's `hypot`: an infinite operand gives inf (a NaN other one too), and
    the squares neither overflow nor underflow. f32, bf16 and f16: `sqrt(a^2 + b^2)` in f64 (whose
    squares of them are exact), rounded once; f64: the same, or where the larger magnitude m is
    above 2^500 or below 2^-500, `m * sqrt(1 + (s / m)^2)` with s the smaller one.
    """
    element, wide = out_element(node), Float64Type()
    a, b = e.broadcast_pair(e.cast(a, wide), e.cast(b, wide))
    x, y = e.unary(fusion.AbsOp, a), e.unary(fusion.AbsOp, b)
    squares = e.binary(fusion.AddOp, e.binary(fusion.MulOp, x, x, wide), e.binary(fusion.MulOp, y, y, wide), wide)
    result = e.unary(fusion.SqrtOp, squares)
    if element == wide:  # f64 squares overflow above 2^511 and lose bits below 2^-511: scaled there
        large, small = e.binary(fusion.MaximumOp, x, y, wide), e.binary(fusion.MinimumOp, x, y, wide)
        ratio = e.binary(fusion.DivOp, small, large, wide)
        root = e.unary(fusion.SqrtOp, e.binary(fusion.AddOp, e.binary(fusion.MulOp, ratio, ratio, wide), 1.0, wide))
        scaled = e.binary(fusion.MulOp, large, root, wide)
        outside = e.binary(
            fusion.MaximumOp,
            e.cast(_compare(e, "gt", large, 2.0**500), I64),
            e.cast(
                e.binary(
                    fusion.MulOp,
                    e.cast(_compare(e, "lt", large, 2.0**-500), I64),
                    e.cast(_compare(e, "gt", large, 0.0), I64),
                    I64,
                ),
                I64,
            ),
            I64,
        )
        result = _where(e, _compare(e, "ne", outside, 0), scaled, result, wide)
    infinite = e.binary(
        fusion.MaximumOp, e.cast(_compare(e, "eq", x, math.inf), I64), e.cast(_compare(e, "eq", y, math.inf), I64), I64
    )
    result = _where(e, _compare(e, "ne", infinite, 0), _filled(e, math.inf, x), result, wide)
    return e.cast(result, element)


def _filled(e: Emitter, value: float, like: SSAValue) -> SSAValue:
    return e.broadcast_to(e.constant(value, element_of(like)), shape_of(like))


def _compare(e: Emitter, predicate: str, x: SSAValue, value: float) -> SSAValue:
    other = _filled(e, value, x)
    return e.typed(lambda t: fusion.CompareOp(predicate, x, other, t), [x, other], shape_of(x), IntegerType(1))


def _log10(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    """`log(x) / ln 10`; bf16 and f16 computed in f32 and rounded once, as torch's kernel (in bf16: an ulp off)."""
    element = out_element(node)
    inner = Float32Type() if element in (BFloat16Type(), Float16Type()) else element
    log = e.unary(fusion.LogOp, e.cast(x, inner))
    return e.cast(e.binary(fusion.MulOp, log, 1 / math.log(10), inner), element)


def _unfold(e: Emitter, node: Node, x: SSAValue, dim: int, size: int, step: int) -> SSAValue:
    """`x.unfold(dim, size, step)`: axis `dim` becomes the windows' starts, a new last axis their positions."""
    shape = shape_of(x)
    rank = len(shape)
    dim = dim % rank if rank else 0
    out_shape = tuple(node.meta["val"].shape)
    windows = out_shape[dim] if rank else 1
    if rank == 0:
        return e.unsqueeze(x, [0])
    if step == size:  # the windows tile the axis: a view of its first windows * size elements
        used = tuple(windows * size if k == dim else n for k, n in enumerate(shape))
        if used != shape:
            x = e.typed(lambda t: fusion.SliceOp(x, [0] * rank, [1] * rank, t), [x], used, element_of(x))
        split = (*shape[:dim], windows, size, *shape[dim + 1 :])
        x = e.reshape(x, split, f"{node.target}")
        return e.permute(x, [*range(dim + 1), *range(dim + 2, rank + 1), dim + 1])
    parts = []
    sliced = tuple(windows if k == dim else n for k, n in enumerate(shape))
    for k in range(size):
        offsets = [k if a == dim else 0 for a in range(rank)]
        strides = [step if a == dim else 1 for a in range(rank)]
        part = e.typed(lambda t, o=offsets, s=strides: fusion.SliceOp(x, o, s, t), [x], sliced, element_of(x))
        parts.append(e.unsqueeze(part, [rank]))
    if len(parts) == 1:
        return parts[0]
    return e.typed(lambda t: fusion.ConcatOp(parts, rank, t), parts, out_shape, element_of(x))


@dataclass(frozen=True)
class _StridedView:
    """
    What `as_strided` and `as_strided_scatter` share: x's shape, element count and memory order
    (x must be dense), the view's size and strides, and its first position relative to x's.
    """

    shape: tuple[int, ...]
    numel: int
    memory_order: list[int]
    source_stride: tuple[int, ...]
    size: list[int]
    stride: list[int]
    start: int

    @classmethod
    def of(cls, e: Emitter, node: Node, x: SSAValue, size, stride, storage_offset, dense_needed: str) -> _StridedView:
        source = node.args[0].meta["val"]
        shape = shape_of(x)
        memory_order = _memory_order(shape, source.stride())
        if not _counts_up(_positions(shape, source.stride(), 0), memory_order, 0):
            raise e.error(f"{node.target}: the input has gaps or overlaps in memory; {dense_needed}")
        offset = source.storage_offset() if storage_offset is None else int(storage_offset)
        return cls(
            tuple(shape), math.prod(shape), memory_order, tuple(source.stride()),
            [int(n) for n in size], [int(n) for n in stride], offset - source.storage_offset(),
        )  # fmt: skip

    def positions(self, e: Emitter, node: Node) -> tuple[torch.Tensor, int]:
        """Each element's memory position, and the lowest; an error where one lies outside x."""
        positions = _positions(self.size, self.stride, self.start)
        low, high = int(positions.min()), int(positions.max())
        if low < 0 or high >= self.numel:
            raise e.error(f"{node.target}: positions {low} to {high} lie outside the input's {self.numel} elements")
        return positions, low


def _as_strided(e: Emitter, node: Node, x: SSAValue, size, stride, storage_offset=None) -> SSAValue:
    """
    `x.as_strided(size, stride, offset)`: the elements at those positions of x's memory, as x is
    laid out in the traced program (torch's decompositions restride a result to keep its
    channels-last layout: `adaptive_avg_pool2d(x.permute(0, 3, 1, 2), 1)`). x must be dense: its
    axes in memory order, flattened, are its memory. The result is that flat tensor's slice,
    reshaped (and permuted) where the positions are a dense layout, else a `fusion.index_select`
    at the positions (an iota per axis times its stride).
    """
    view = _StridedView.of(e, node, x, size, stride, storage_offset, "as_strided reads a dense tensor")
    shape, numel, memory_order = view.shape, view.numel, view.memory_order
    size, stride, start = view.size, view.stride, view.start
    count = math.prod(size)
    if count == 0:
        return e.emit(fusion.FullOp(0, TensorType(element_of(x), tuple(size))))
    positions, low = view.positions(e, node)
    if tuple(size) == tuple(shape) and torch.equal(positions, _positions(shape, view.source_stride, 0)):
        return x  # x's own layout (a restride that keeps every element where it is)
    flat = e.reshape(e.permute(x, memory_order), (numel,), f"{node.target}")
    order = _memory_order(size, stride)
    if _counts_up(positions, order, low):  # a dense layout of a slice of the memory
        if count != numel:
            flat = e.typed(lambda t: fusion.SliceOp(flat, [low], [1], t), [flat], (count,), element_of(x))
        dense = e.reshape(flat, tuple(size[d] for d in order), f"{node.target}")
        return e.permute(dense, [order.index(d) for d in range(len(size))])
    index = _position_index(e, size, stride, start)
    return e.typed(lambda t: fusion.IndexSelectOp(flat, index, 0, t), [flat, index], tuple(size), element_of(x))


def _position_index(e: Emitter, size: list[int], stride: list[int], start: int) -> SSAValue:
    """The memory position of each element of a `size` view with these strides: an iota per axis times its stride."""
    index = e.broadcast_to(e.constant(start, I64), tuple(size))
    for axis, step in enumerate(stride):
        if size[axis] != 1 and step != 0:
            along = e.binary(fusion.MulOp, e.emit(fusion.IotaOp(axis, TensorType(I64, tuple(size)))), step, I64)
            index = e.binary(fusion.AddOp, index, along, I64)
    return index


def _as_strided_scatter(
    e: Emitter, node: Node, x: SSAValue, src: SSAValue, size, stride, storage_offset=None
) -> SSAValue:
    """
    `x.as_strided_scatter(src, size, stride, offset)`: x with the elements of its `as_strided` view
    replaced by src (the backward of `as_strided` whose positions do not overlap: AOT autograd
    writes the gradient into zeros so). x must be dense, as for `as_strided`; its memory, flattened
    in memory order, takes src at the view's positions (one `fusion.index_copy`) and is viewed back.
    """
    view = _StridedView.of(e, node, x, size, stride, storage_offset, "as_strided_scatter writes a dense one")
    shape, numel, memory_order = view.shape, view.numel, view.memory_order
    size, stride, start = view.size, view.stride, view.start
    count = math.prod(size)
    if count == 0:
        return x
    view.positions(e, node)  # checks that they lie inside x
    flat = e.reshape(e.permute(x, memory_order), (numel,), f"{node.target}")
    index = e.reshape(_position_index(e, size, stride, start), (count,), f"{node.target}")
    values = e.reshape(e.cast(src, element_of(x)), (count,), f"{node.target}")
    written = e.typed(
        lambda t: fusion.IndexCopyOp(flat, index, values, 0, t), [flat, index, values], (numel,), element_of(x)
    )
    dense = e.reshape(written, tuple(shape[d] for d in memory_order), f"{node.target}")
    return e.permute(dense, [memory_order.index(d) for d in range(len(shape))])


def _positions(size, stride, start: int) -> torch.Tensor:
    """The memory position of each element of a `size` tensor with these strides, from `start`."""
    positions = torch.full(tuple(size), start, dtype=torch.long)
    for axis, (n, step) in enumerate(zip(size, stride)):
        positions += torch.arange(n).view([-1 if k == axis else 1 for k in range(len(size))]) * step
    return positions


def _memory_order(size, stride) -> list[int]:
    """The axes by decreasing stride (an axis of extent 1, whose stride means nothing, last)."""
    return sorted(range(len(size)), key=lambda d: -stride[d] if size[d] != 1 else 0)


def _counts_up(positions: torch.Tensor, order: list[int], first: int) -> bool:
    """Whether the positions, their axes in `order`, are `first, first + 1, ...` (a dense layout)."""
    flat = positions.permute(order).reshape(-1)
    return torch.equal(flat, torch.arange(first, first + flat.numel()))


def _cdist(e: Emitter, node: Node, a: SSAValue, b: SSAValue, p: float, compute_mode=None) -> SSAValue:
    """`torch.cdist`: the p-norm of each difference `a[..., i, :] - b[..., j, :]`, over a `[..., P, R, M]` broadcast."""
    element = out_element(node)
    a, b = e.cast(a, element), e.cast(b, element)
    rank = len(shape_of(a))
    diff = e.binary(fusion.SubOp, e.unsqueeze(a, [rank - 1]), e.unsqueeze(b, [rank - 2]), element)
    last = rank
    if p == 0:  # the count of differing coordinates
        zero = e.broadcast_to(e.constant(0.0, element), shape_of(diff))
        differs = e.typed(lambda t: fusion.CompareOp("ne", diff, zero, t), [diff, zero], shape_of(diff), IntegerType(1))
        return e.reduce(fusion.SumOp, e.cast(differs, element), [last], keepdim=False)
    magnitude = e.unary(fusion.AbsOp, diff)
    if math.isinf(p):
        return e.reduce(fusion.MaxOp, magnitude, [last], keepdim=False)
    if p == 1:
        return e.reduce(fusion.SumOp, magnitude, [last], keepdim=False)
    if p == 2:
        squares = e.binary(fusion.MulOp, diff, diff, element)
        return e.unary(fusion.SqrtOp, e.reduce(fusion.SumOp, squares, [last], keepdim=False))
    powers = e.reduce(fusion.SumOp, e.binary(fusion.PowOp, magnitude, float(p), element), [last], keepdim=False)
    return e.binary(fusion.PowOp, powers, 1.0 / p, element)


def _bucketize(e: Emitter, node: Node, x: SSAValue, boundaries: SSAValue, *, out_int32=False, right=False) -> SSAValue:
    """The count of boundaries below each value: `n - sum(x <= b)` (`x < b` with right=True); NaNs go last."""
    return _count_below(e, node, x, boundaries, right, sorted_rows=False)


def _searchsorted(
    e: Emitter,
    node: Node,
    sorted_sequence: SSAValue,
    x: SSAValue,
    *,
    out_int32=False,
    right=False,
    side=None,
    sorter=None,
) -> SSAValue:
    if sorter is not None:
        raise e.error(f"{node.target}: a sorter is not supported: sort the sequence first")
    right = right or side == "right"
    return _count_below(e, node, x, sorted_sequence, right, sorted_rows=len(shape_of(sorted_sequence)) > 1)


def _count_below(e: Emitter, node: Node, x: SSAValue, edges: SSAValue, right: bool, sorted_rows: bool) -> SSAValue:
    """Per value of `x`, the edges below it: against all of a 1-D `edges`, or against its row of an N-D one."""
    operand = element_of(edges) if is_float(element_of(edges)) else element_of(x)
    x, edges = e.cast(x, operand), e.cast(edges, operand)
    rank = len(shape_of(x))
    values = e.unsqueeze(x, [rank])  # [..., V, 1]
    if sorted_rows:
        edges = e.unsqueeze(edges, [rank - 1])  # [..., 1, N]
    values, edges = e.broadcast_pair(values, edges)
    predicate = "lt" if right else "le"
    above = e.typed(
        lambda t: fusion.CompareOp(predicate, values, edges, t), [values, edges], shape_of(values), IntegerType(1)
    )
    element = out_element(node)
    count = e.reduce(fusion.SumOp, e.cast(above, element), [rank], keepdim=False)
    extent = shape_of(edges)[rank]
    return e.binary(fusion.SubOp, e.broadcast_to(e.constant(extent, element), shape_of(count)), count, element)


def _histc(e: Emitter, node: Node, x: SSAValue, bins: int = 100, min: float = 0, max: float = 0) -> SSAValue:
    """
    `torch.histc(x, bins, min, max)` (an MoE's expert load, `histc(topi.float(), bins=E, min=0,
    max=E - 1)`): each value's bin `floor((x - min) * bins / (max - min))` (the last bin takes
    `max`), counted by one `fusion.index_add` of ones into `bins + 1` counters, the last of which
    takes the values outside `[min, max]`. With `min == max`, the data's minimum and maximum
    (widened by 1 where they are equal), as torch does.
    """
    element = out_element(node)
    x = e.cast(x, element)
    flat = e.reshape(x, (math.prod(shape_of(x)),), "histc's values") if len(shape_of(x)) != 1 else x
    n = shape_of(flat)[0]
    if min == max:  # the data's range: 0-d values, broadcast below
        low = e.reduce(fusion.MinOp, flat, [0], keepdim=False)
        high = e.reduce(fusion.MaxOp, flat, [0], keepdim=False)
        same = e.typed(lambda t: fusion.CompareOp("eq", low, high, t), [low, high], (), IntegerType(1))
        low = _where(e, same, e.binary(fusion.SubOp, low, 1.0, element), low, element)
        high = _where(e, same, e.binary(fusion.AddOp, high, 1.0, element), high, element)
        lo, hi = e.broadcast_to(low, (n,)), e.broadcast_to(high, (n,))
    else:
        lo, hi = e.broadcast_to(e.constant(min, element), (n,)), e.broadcast_to(e.constant(max, element), (n,))
    scaled = e.binary(fusion.MulOp, e.binary(fusion.SubOp, flat, lo, element), float(bins), element)
    position = e.binary(fusion.DivOp, scaled, e.binary(fusion.SubOp, hi, lo, element), element)
    index = e.cast(e.unary(fusion.FloorOp, position), I64)
    at_max = e.typed(lambda t: fusion.CompareOp("eq", flat, hi, t), [flat, hi], (n,), IntegerType(1))
    index = _where(e, at_max, e.broadcast_to(e.constant(bins - 1, I64), (n,)), index, I64)
    below = e.typed(lambda t: fusion.CompareOp("lt", flat, lo, t), [flat, lo], (n,), IntegerType(1))
    above = e.typed(lambda t: fusion.CompareOp("gt", flat, hi, t), [flat, hi], (n,), IntegerType(1))
    nan = e.typed(lambda t: fusion.CompareOp("ne", flat, flat, t), [flat, flat], (n,), IntegerType(1))
    outside = e.broadcast_to(e.constant(bins, I64), (n,))
    for mask in (below, above, nan):
        index = _where(e, mask, outside, index, I64)
    zeros = e.broadcast_to(e.constant(0, element), (bins + 1,))
    ones = e.broadcast_to(e.constant(1, element), (n,))
    counts = e.typed(lambda t: fusion.IndexAddOp(zeros, index, ones, 0, t), [zeros, index, ones], (bins + 1,), element)
    return e.typed(lambda t: fusion.SliceOp(counts, [0], [1], t), [counts], (bins,), element)


def _fake_quantized(e: Emitter, x: SSAValue, inverse: Any, scale: Any, zero: Any, low: int, high: int):
    """
    Quantization-aware training's fake quantization, as torch's kernel: `q = round(x * (1 / scale))
    + zero` (half to even), `(clamp(q, low, high) - zero) * scale`; and the mask of the values
    inside the range, whose gradient passes (the straight-through estimator).
    """
    element = element_of(x)
    q = e.binary(fusion.AddOp, e.unary(fusion.RoundOp, e.binary(fusion.MulOp, x, inverse, element)), zero, element)
    clamped = e.binary(fusion.MinimumOp, e.binary(fusion.MaximumOp, q, float(low), element), float(high), element)
    out = e.binary(fusion.MulOp, e.binary(fusion.SubOp, clamped, zero, element), scale, element)
    shape = shape_of(x)
    lo, hi = e.broadcast_to(e.constant(low, element), shape), e.broadcast_to(e.constant(high, element), shape)
    above = e.typed(lambda t: fusion.CompareOp("ge", q, lo, t), [q, lo], shape, IntegerType(1))
    below = e.typed(lambda t: fusion.CompareOp("le", q, hi, t), [q, hi], shape, IntegerType(1))
    false = e.broadcast_to(e.constant(0, IntegerType(1)), shape)
    mask = e.typed(lambda t: fusion.WhereOp(above, below, false, t), [above, below, false], shape, IntegerType(1))
    return out, mask


def _fake_quantize(e: Emitter, node: Node, x: SSAValue, scale: float, zero_point: int, low: int, high: int):
    """`torch.fake_quantize_per_tensor_affine` with Python numbers: (the fake-quantized x, the mask)."""
    inverse = float(torch.tensor(1.0, dtype=torch.float32) / torch.tensor(scale, dtype=torch.float32))
    return _fake_quantized(e, x, inverse, float(scale), float(zero_point), low, high)


def _fake_quantize_tensor_qparams(
    e: Emitter, node: Node, x: SSAValue, scale: SSAValue, zero_point: SSAValue, enabled: SSAValue, low: int, high: int
):
    """The same with 1-element tensors (torch.ao's FakeQuantize modules), `x` itself where `enabled` is 0."""
    element = element_of(x)
    shape = shape_of(x)

    def number(t: SSAValue) -> SSAValue:
        t = e.cast(t, element)
        return e.broadcast_to(e.squeeze(t, list(range(len(shape_of(t))))), shape)

    s, z = number(scale), number(zero_point)
    inverse = e.unary(fusion.ReciprocalOp, s)
    out, mask = _fake_quantized(e, x, inverse, s, z, low, high)
    on = e.cast(number(enabled), IntegerType(1))
    true = e.broadcast_to(e.constant(1, IntegerType(1)), shape)
    out = e.typed(lambda t: fusion.WhereOp(on, out, x, t), [on, out, x], shape, element)
    mask = e.typed(lambda t: fusion.WhereOp(on, mask, true, t), [on, mask, true], shape, IntegerType(1))
    return out, mask


def _fake_quantize_per_channel(
    e: Emitter, node: Node, x: SSAValue, scale: SSAValue, zero_point: SSAValue, axis: int, low: int, high: int
):
    """`torch.fake_quantize_per_channel_affine`: a scale and a zero point per index of `axis`."""
    element = element_of(x)
    shape = shape_of(x)
    axis %= len(shape)

    def per_channel(t: SSAValue) -> SSAValue:
        t = e.cast(t, element)
        return e.broadcast_to(e.reshape(t, tuple(n if d == axis else 1 for d, n in enumerate(shape))), shape)

    s, z = per_channel(scale), per_channel(zero_point)
    return _fake_quantized(e, x, e.unary(fusion.ReciprocalOp, s), s, z, low, high)


def _where(e: Emitter, mask: SSAValue, a: SSAValue, b: SSAValue, element) -> SSAValue:
    return e.typed(lambda t: fusion.WhereOp(mask, a, b, t), [mask, a, b], shape_of(b), element)


MATH_TABLE: dict[object, Builder] = {
    aten.tan.default: float_only(_tan),
    aten.sinh.default: float_only(_sinh),
    aten.cosh.default: float_only(_cosh),
    aten.hypot.default: float_only(_hypot),
    aten.log10.default: float_only(_log10),
    aten.unfold.default: _unfold,
    aten.as_strided.default: _as_strided,
    aten.as_strided_scatter.default: _as_strided_scatter,
    aten._cdist_forward.default: float_only(_cdist),
    aten.bucketize.Tensor: _bucketize,
    aten.searchsorted.Tensor: _searchsorted,
    aten.histc.default: float_only(_histc),
    aten.fake_quantize_per_tensor_affine_cachemask.default: float_only(_fake_quantize),
    aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default: float_only(_fake_quantize_tensor_qparams),
    aten.fake_quantize_per_channel_affine_cachemask.default: float_only(_fake_quantize_per_channel),
}
