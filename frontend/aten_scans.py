"""
Scans fusion has no op for, and ops that place values by a running count of a mask:

- `cummax`, `cummin` and `logcumsumexp` as torch's kernels define them, in ceil(log2 n) doubling
  steps (Hillis-Steele): each step combines every element with the one `2^k` places before it
  (the axis shifted by `2^k`, the first places filled with the combination's identity), which
  keeps memory that of the input. cummax and cummin carry (value, index) pairs, the later element
  winning ties and NaNs, so the index is that of the last maximum, as torch's; logcumsumexp
  combines by `max + log1p(exp(min - max))`, as torch's kernel does;
- `masked_scatter` (the k-th true position of the mask takes `source[k]`: a `fusion.cumsum` of
  the mask picks, `fusion.index_select`), its backward (a `fusion.index_add` of the gradient at
  those positions), and `tril_indices` / `triu_indices` (the positions of the triangle, each
  added at its running count).
"""

from __future__ import annotations

import math

import torch
from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IntegerType, TensorType
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, out_element
from hir.frontend.aten_indexing import I64, index_add, index_select, iota
from hir.frontend.aten_special import Num, maximum, minimum, where
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of

I32 = IntegerType(32)


def _shifted(e: Emitter, x: SSAValue, dim: int, k: int, fill: float) -> SSAValue:
    """`x` moved `k` places later along `dim`, its first `k` places `fill`."""
    shape = shape_of(x)
    rank = len(shape)
    head = tuple(k if a == dim else n for a, n in enumerate(shape))
    kept = tuple(n - k if a == dim else n for a, n in enumerate(shape))
    pad = e.emit(fusion.FullOp(fill, TensorType(element_of(x), head)))
    body = e.typed(lambda t: fusion.SliceOp(x, [0] * rank, [1] * rank, t), [x], kept, element_of(x))
    return e.typed(lambda t: fusion.ConcatOp([pad, body], dim, t), [pad, body], shape, element_of(x))


def _cumulative_extreme(predicate: str) -> Builder:
    """cummax (`ge`) / cummin (`le`): the later element wins where it compares so with the earlier, or is NaN."""

    def build(e: Emitter, node: Node, x: SSAValue, dim: int) -> tuple[SSAValue, SSAValue]:
        shape = shape_of(x)
        if not shape:
            return x, e.emit(fusion.FullOp(0, TensorType(I64, ())))
        dim %= len(shape)
        element = element_of(x)
        boolean = element == IntegerType(1)
        if boolean:  # as numbers, compared and selected as any others
            x = e.cast(x, I32)
        floats = is_float(element_of(x))
        if floats:
            identity: float = -math.inf if predicate == "ge" else math.inf
        else:
            info = torch.iinfo(torch.int32 if boolean else node.meta["val"][0].dtype)  # the values' own range
            identity = info.min if predicate == "ge" else info.max
        values, indices = Num(e, x), Num(e, iota(e, shape, dim, I64))
        k = 1
        while k < shape[dim]:
            before = Num(e, _shifted(e, values.value, dim, k, identity))
            before_index = Num(e, _shifted(e, indices.value, dim, k, 0))
            later = values.compare(predicate, before)
            if floats:  # a NaN wins from where it is; an earlier NaN is kept
                later = values.compare("ne", values) | (before.eq(before) & later)
            values, indices = where(later, values, before), where(later, indices, before_index)
            k *= 2
        result = e.cast(values.value, element) if boolean else values.value
        return result, indices.value

    return build


def _logcumsumexp(e: Emitter, node: Node, x: SSAValue, dim: int) -> SSAValue:
    """`log(cumsum(exp(x)))` without overflow: log-add-exp of each element and the scan before it."""
    element = out_element(node)
    wide = Float32Type() if element in (BFloat16Type(), Float16Type()) else element
    x = e.cast(x, wide)
    shape = shape_of(x)
    if not shape:
        return e.cast(x, element)
    dim %= len(shape)
    total = Num(e, x)
    k = 1
    while k < shape[dim]:
        before = Num(e, _shifted(e, total.value, dim, k, -math.inf))
        low, high = minimum(before, total), maximum(before, total)
        added = high + (low - high).apply(fusion.ExpOp).apply(fusion.Log1pOp)
        # the same infinity twice: itself (inf - inf would be NaN), as torch's kernel
        total = where(low.eq(high) & high.apply(fusion.AbsOp).eq(math.inf), high, added)
        k *= 2
    return e.cast(total.value, element)


def _running_positions(e: Emitter, mask: SSAValue) -> tuple[Num, Num]:
    """For a flat mask: (the mask, each true position's count of true positions before it; 0 elsewhere)."""
    flat = Num(e, mask)
    counts = e.cast(mask, I64)
    counts = e.typed(lambda t: fusion.CumsumOp(counts, 0, t), [counts], shape_of(counts), I64)
    return flat, where(flat, Num(e, counts) - 1, 0)


def _flat(e: Emitter, x: SSAValue, what: str) -> SSAValue:
    size = math.prod(shape_of(x))
    return x if shape_of(x) == (size,) else e.reshape(x, (size,), what)


def _masked_scatter(e: Emitter, node: Node, x: SSAValue, mask: SSAValue, source: SSAValue) -> SSAValue:
    """`x.masked_scatter(mask, source)`: where the mask is true, the source's elements in order; x elsewhere."""
    shape = tuple(node.meta["val"].shape)
    element = out_element(node)
    x = e.broadcast_to(e.cast(x, element), shape)
    if not math.prod(shape_of(source)):  # nothing to place: torch requires a mask of no true elements
        return x
    mask = e.broadcast_to(mask, shape)
    flat, positions = _running_positions(e, _flat(e, mask, "masked_scatter's mask"))
    picked = index_select(e, _flat(e, e.cast(source, element), "masked_scatter's source"), 0, positions.value)
    placed = where(flat, Num(e, picked), Num(e, _flat(e, x, "masked_scatter's input")))
    return e.reshape(placed.value, shape, "masked_scatter's result") if len(shape) != 1 else placed.value


def _masked_scatter_backward(e: Emitter, node: Node, grad: SSAValue, mask: SSAValue, sizes: list[int]) -> SSAValue:
    """The source's gradient: the k-th true position's gradient at k, zeros after the last."""
    element = out_element(node)
    shape = shape_of(grad)
    flat, positions = _running_positions(e, _flat(e, e.broadcast_to(mask, shape), "the mask"))
    values = where(flat, Num(e, _flat(e, e.cast(grad, element), "the gradient")), 0)
    size = math.prod(sizes)
    zeros = e.emit(fusion.FullOp(0.0, TensorType(element, (size,))))
    total = index_add(e, zeros, 0, positions.value, values.value)
    return e.reshape(total, tuple(sizes), "masked_scatter's source") if tuple(sizes) != (size,) else total


def _triangle_indices(below: bool) -> Builder:
    """tril_indices / triu_indices: each position of the triangle, row and column, added at its running count."""

    def build(e: Emitter, node: Node, rows: int, columns: int, offset: int = 0, **kwargs: object) -> SSAValue:
        val = node.meta["val"]
        count = int(val.shape[1])
        if not count:  # no position inside the grid
            return e.emit(fusion.FullOp(0, TensorType(out_element(node), (2, 0))))
        grid = (rows, columns)
        row, column = Num(e, iota(e, grid, 0, I64)), Num(e, iota(e, grid, 1, I64))
        inside = (column - row <= offset) if below else (column - row >= offset)
        flat, positions = _running_positions(e, _flat(e, inside.value, "the triangle"))
        zeros = e.emit(fusion.FullOp(0, TensorType(I64, (count,))))
        parts = []
        for coordinate in (row, column):
            values = where(flat, Num(e, _flat(e, coordinate.value, "the triangle")), 0)
            parts.append(e.unsqueeze(index_add(e, zeros, 0, positions.value, values.value), [0]))
        stacked = e.typed(lambda t: fusion.ConcatOp(parts, 0, t), parts, (2, count), I64)
        return e.cast(stacked, out_element(node))

    return build


SCAN_TABLE: dict[object, Builder] = {
    aten.cummax.default: _cumulative_extreme("ge"),
    aten.cummin.default: _cumulative_extreme("le"),
    aten.logcumsumexp.default: _logcumsumexp,
    aten.masked_scatter.default: _masked_scatter,
    aten.masked_scatter_backward.default: _masked_scatter_backward,
    aten.tril_indices.default: _triangle_indices(below=True),
    aten.triu_indices.default: _triangle_indices(below=False),
}
