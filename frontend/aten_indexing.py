"""
ATen builders for reading by index and along one axis: gather, index_select, embedding,
`x[idx]` (index.Tensor), diagonal, flip, arange, tril/triu, cumsum, cumprod, prod, argmax/argmin, max/min
with indices, topk and sort; for writing by index: scatter, scatter_add, index_add and the
integer-indexed `index_put` (an embedding's backward). `INDEXING_TABLE` joins `ATEN_TABLE`
(frontend/aten_table.py).

Values with indices (`max(dim)`, `topk`, `sort`) are a `fusion.gather` of the indices, so each
op computes one tensor; a graph's `getitem` picks the entry (frontend/importer.py).
"""

from __future__ import annotations

import math
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue

from hir.dialects import fusion
from hir.dialects.parallel_encoding import layout_of
from hir.frontend.aten_common import out_element
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of
from hir.frontend.types import element_type

aten = torch.ops.aten
Builder = Callable[..., Any]
I64 = IntegerType(64)
I32 = IntegerType(32)


def _axis(x: SSAValue, dim: int) -> int:
    return dim % max(len(shape_of(x)), 1)


def _index_operand(e: Emitter, index: SSAValue) -> SSAValue:
    element = element_of(index)
    if not isinstance(element, IntegerType) or element.width.data == 1:
        raise e.error(
            f"an index must be an integer tensor, got {element} (a boolean mask selects a data-dependent shape)"
        )
    return index


def index_select(e: Emitter, x: SSAValue, dim: int, index: SSAValue) -> SSAValue:
    """`x.index_select(dim, index)` for an index of any rank (the index's axes replace `dim`)."""
    index = _index_operand(e, index)
    shape = shape_of(x)
    dim = _axis(x, dim)
    result = (*shape[:dim], *shape_of(index), *shape[dim + 1 :])
    return e.typed(lambda t: fusion.IndexSelectOp(x, index, dim, t), [x, index], result, element_of(x))


@dataclass(frozen=True)
class TensorIndex:
    """
    The integer of a 0-d integer tensor (`x[t]` of a 0-d `t`, which torch.export reads with
    `_local_scalar_dense`) where it is only the index of `select`s: each is an `index_select` at it.
    """

    value: SSAValue

    @staticmethod
    def of(node: Node, tensor: Any) -> TensorIndex | None:
        """`tensor` as such an index for `node` (its `_local_scalar_dense`), or None where it is read otherwise."""
        users = list(node.users)
        if not (isinstance(tensor, SSAValue) and not shape_of(tensor) and users):
            return None
        source = node.args[0].meta.get("val") if node.args and isinstance(node.args[0], Node) else None
        if getattr(source, "dtype", None) not in (torch.int64, torch.int32, torch.int16, torch.int8):
            return None  # a bool or uint8 one is a mask in eager (`x[t]` of shape [1, ...] or [0, ...])
        selects = all(u.target == aten.select.int and len(u.args) == 3 and u.args[2] is node for u in users)
        return TensorIndex(tensor) if selects and all(node not in u.args[:2] for u in users) else None


def select_at(e: Emitter, x: SSAValue, dim: int, index: TensorIndex) -> SSAValue:
    """`x.select(dim, t)` of a 0-d integer tensor t: negative from the end, out of range an error at run time."""
    dim = _axis(x, dim)
    at = _wrapped(e, e.cast(index.value, I64), shape_of(x)[dim], I64)
    return e.squeeze(index_select(e, x, dim, e.reshape(at, (1,))), [dim])


def gather(e: Emitter, x: SSAValue, dim: int, index: SSAValue) -> SSAValue:
    index = _index_operand(e, index)
    dim = _axis(x, dim)
    shape, wanted = shape_of(x), shape_of(index)
    if len(shape) != len(wanted):
        raise e.error(f"gather: x has rank {len(shape)} and the index {len(wanted)}; they need one rank")
    kept = tuple(wanted[d] if d != dim else shape[d] for d in range(len(shape)))
    if kept != shape:  # torch reads only the leading part of x off `dim`
        if any(k > s for k, s in zip(kept, shape)):
            raise e.error(f"gather: the index {list(wanted)} is larger than x {list(shape)} off dim {dim}")
        zeros, ones = [0] * len(shape), [1] * len(shape)
        x = e.typed(lambda t: fusion.SliceOp(x, zeros, ones, t), [x], kept, element_of(x))
    layout = layout_of(index.type)
    if layout.stream_axis == dim and layout.stream_chunks is None:
        raise e.error(
            f"gather along axis {dim}, which its index streams one index at a time: a loop over single "
            f"indices of the gathered axis has no gather to run; stream the index's axis {dim} in chunks "
            "(`stream(N)`) or stream another axis"
        )
    return e.typed(lambda t: fusion.GatherOp(x, index, dim, t), [x, index], wanted, element_of(x))


def _gather(e: Emitter, node: Node, x, dim: int, index, sparse_grad: bool = False) -> SSAValue:
    return gather(e, x, dim, index)


def _index_select(e: Emitter, node: Node, x, dim: int, index) -> SSAValue:
    return index_select(e, x, dim, index)


def _embedding(e: Emitter, node: Node, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return index_select(e, weight, 0, indices)


def _indexed_first(
    e: Emitter, x: SSAValue, indices: Sequence[SSAValue | None]
) -> tuple[SSAValue, list[SSAValue | None], list[int] | None]:
    """
    `x` and `indices` (torch's advanced indexing: None where an axis is taken whole) with the
    indexed axes made adjacent. Tensors on axes that are not adjacent (`x[i, :, j]`) put their
    broadcast axes first, as torch does: x's indexed axes are permuted to the front, in order, so
    that indexing the permuted x gives torch's result. The permutation comes back too (None where
    the axes were adjacent already), for index_put to permute its result back.
    """
    axes = [k for k, index in enumerate(indices) if index is not None]
    if not axes or axes == list(range(axes[0], axes[-1] + 1)):
        return x, list(indices), None
    rank = len(shape_of(x))
    perm = axes + [k for k in range(rank) if k not in axes]
    return e.permute(x, perm), [indices[k] for k in axes], perm


def _linear_index(e: Emitter, shape: tuple[int, ...], axes: list[int], picked: list[SSAValue]) -> SSAValue:
    """
    The integer index tensors `picked`, one per axis of `axes` (adjacent axes of `shape`), as one
    row-major index over those axes: broadcast together, negative ones counted from the end as
    torch does. With several axes, each index is checked against its own axis (an index_select of
    zeros at it, which raises as torch does), since `x[0, 3]` of a [5, 3] x is in range of the merged axis.
    """
    first, count = axes[0], len(axes)
    element = element_of(picked[0])
    linear: SSAValue | None = None
    for k, index in zip(axes, picked):
        extent = shape[k]
        index = _wrapped(e, e.cast(index, element), extent, element)
        if count > 1:  # an entry out of its axis could land in range of the merged one: checked per axis
            zeros = e.broadcast_to(e.constant(0, element), (extent,))
            index = e.binary(fusion.AddOp, index, index_select(e, zeros, 0, index), element)
        stride = math.prod(shape[k + 1 : first + count])
        term = index if stride == 1 else e.binary(fusion.MulOp, index, stride, element)
        linear = term if linear is None else e.binary(fusion.AddOp, linear, term, element)
    assert linear is not None
    return linear


def _wrapped(e: Emitter, index: SSAValue, extent: int, element: Attribute) -> SSAValue:
    """
    `index` with its negative values counted from the end of an axis of `extent`, made once per
    index and extent: a decoder's every layer indexes its caches and mask by the same position, and
    each wrap is three kernels. (`remainder` would be one, but would also wrap an index out of
    range, which torch refuses, into a wrong row.)
    """
    key = (index, extent, e.block)
    known = e.wrapped_indices.get(key)
    if known is not None:
        return known
    negative = e.typed(
        lambda t, i=index: fusion.CompareOp("lt", i, e.broadcast_to(e.constant(0, element), shape_of(i)), t),
        [index],
        shape_of(index),
        IntegerType(1),
    )
    wrapped = e.binary(fusion.AddOp, index, extent, element)
    e.wrapped_indices[key] = result = e.typed(
        lambda t, n=negative, w=wrapped, i=index: fusion.WhereOp(n, w, i, t),
        [negative, wrapped, index],
        shape_of(index),
        element,
    )
    return result


def _merged(shape: tuple[int, ...], first: int, count: int, extent: int) -> tuple[int, ...]:
    """`shape` with its axes first .. first + count - 1 replaced by one axis of `extent`."""
    return (*shape[:first], extent, *shape[first + count :])


def _index(e: Emitter, node: Node, x: SSAValue, indices: Sequence[SSAValue | None]) -> SSAValue:
    """
    `x[..., i, j, ...]` with integer index tensors on consecutive axes: their broadcast values
    (negative ones counted from the end, as torch does) linearized over those axes, whose merged
    view `fusion.index_select` reads.
    """
    x, indices, _ = _indexed_first(e, x, indices)
    axes = [k for k, index in enumerate(indices) if index is not None]
    if not axes:
        return x
    shape = shape_of(x)
    first, count = axes[0], len(axes)
    linear = _linear_index(e, shape, axes, [_index_operand(e, indices[k]) for k in axes])
    if count > 1:
        x = e.reshape(x, _merged(shape, first, count, math.prod(shape[first : first + count])), f"{node.target}")
    return index_select(e, x, first, linear)


def index_add(e: Emitter, x: SSAValue, dim: int, index: SSAValue, source: SSAValue) -> SSAValue:
    """`x.index_add(dim, index, source)` for a 1-D index (indices in range, as torch requires)."""
    return e.typed(
        lambda t: fusion.IndexAddOp(x, index, source, dim, t), [x, index, source], shape_of(x), element_of(x)
    )


def _index_add(
    e: Emitter, node: Node, x: SSAValue, dim: int, index: SSAValue, source: SSAValue, *, alpha: float = 1
) -> SSAValue:
    """`x.index_add(dim, index, source, alpha=alpha)`: `fusion.index_add` of `alpha * source`."""
    index = _index_operand(e, index)
    if not shape_of(x):
        raise e.error("index_add of a 0-d tensor is not supported: add the value itself")
    dim = _axis(x, dim)
    if len(shape_of(index)) > 1:
        raise e.error(f"index_add: the index must be 0-D or 1-D, got shape {list(shape_of(index))}")
    if not shape_of(index):
        index = e.unsqueeze(index, [0])
    if len(shape_of(source)) != len(shape_of(x)):
        raise e.error(f"index_add: source {list(shape_of(source))} needs the rank of x {list(shape_of(x))}")
    source = e.cast(source, element_of(x))
    if alpha != 1:
        source = e.binary(fusion.MulOp, source, alpha, element_of(x))
    return index_add(e, x, dim, index, source)


def index_put(
    e: Emitter, node: Node, x: SSAValue, indices: Sequence[SSAValue | None], values: SSAValue, accumulate: bool
) -> SSAValue:
    """
    `x.index_put(indices, values, accumulate)` with integer index tensors on adjacent axes. Their
    broadcast indices are linearized over those axes (as for `x[i, j]`) into one flat index over
    a merged view of them, along which one `fusion.index_add` adds the values, broadcast to the
    indexed shape and flattened alike: memory linear in x and the values (an embedding's backward,
    `index_put(zeros, [ids], grad, accumulate=True)`). Without `accumulate` a single value
    (`x[idx] = v`) is written at the positions an index_add of ones counts; several values (a KV
    cache's `cache[:, :, pos] = k`, `index_copy`, an inverse permutation `inv[order] = arange(n)`)
    are one `fusion.index_copy`, whose positions take their last writer's slice, as torch's CPU
    kernel leaves them where indices repeat.
    """
    x, indices, perm = _indexed_first(e, x, indices)
    if perm is not None:  # the update of the permuted x, permuted back
        updated = index_put(e, node, x, indices, values, accumulate)
        return e.permute(updated, [perm.index(k) for k in range(len(perm))])
    axes = [k for k, index in enumerate(indices) if index is not None]
    shape = shape_of(x)
    first, count = axes[0], len(axes)
    linear = _linear_index(e, shape, axes, [_index_operand(e, indices[k]) for k in axes])
    entries = shape_of(linear)
    indexed = (*shape[:first], *entries, *shape[first + count :])
    single = math.prod(shape_of(values)) == 1
    total = math.prod(entries)
    if total == 0:
        return x
    flat = (total,)
    if entries != flat:
        linear = e.reshape(linear, flat, "the flattened index")
    merged = _merged(shape, first, count, math.prod(shape[first : first + count]))
    target = e.reshape(x, merged, f"{node.target}") if merged != shape else x
    if accumulate or not single:
        source = _broadcast_values(e, node, e.cast(values, element_of(x)), indexed)
        spread = _merged(indexed, first, len(entries), total)
        if spread != indexed:
            source = e.reshape(source, spread, "the flattened values")
        if accumulate:
            result = index_add(e, target, first, linear, source)
        else:
            result = e.typed(
                lambda t: fusion.IndexCopyOp(target, linear, source, first, t),
                [target, linear, source],
                shape_of(target),
                element_of(target),
            )
        return e.reshape(result, shape, f"{node.target}") if merged != shape else result
    # One value: the positions some index names (an index_add of ones counts them) take it.
    ones = e.broadcast_to(e.constant(1, I32), _merged(merged, first, 1, total))
    zeros = e.broadcast_to(e.constant(0, I32), merged)
    counts = index_add(e, zeros, first, linear, ones)
    if merged != shape:
        counts = e.reshape(counts, shape, f"{node.target}")
    none = e.broadcast_to(e.constant(0, I32), shape)
    hit = e.typed(lambda t: fusion.CompareOp("gt", counts, none, t), [counts, none], shape, IntegerType(1))
    value = e.squeeze(values, list(range(len(shape_of(values)))))
    value = e.broadcast_to(e.cast(value, element_of(x)), shape, x)
    return e.typed(lambda t: fusion.WhereOp(hit, value, x, t), [hit, value, x], shape, element_of(x))


def _broadcast_values(e: Emitter, node: Node, values: SSAValue, indexed: tuple[int, ...]) -> SSAValue:
    """`values` broadcast to the indexed shape, as torch's index_put broadcasts them."""
    given = shape_of(values)
    lead = len(indexed) - len(given)
    if lead < 0 or any(n not in (1, indexed[lead + k]) for k, n in enumerate(given)):
        raise e.error(f"{node.target}: values {list(given)} do not broadcast to the indexed shape {list(indexed)}")
    return e.broadcast_to(values, indexed)


def _diagonal(e: Emitter, node: Node, x: SSAValue, offset: int = 0, dim1: int = 0, dim2: int = 1) -> SSAValue:
    """`x.diagonal(offset, dim1, dim2)`: the two axes moved last and merged, read at a stride of m + 1."""
    rank = len(shape_of(x))
    dim1, dim2 = dim1 % rank, dim2 % rank
    rest = [d for d in range(rank) if d not in (dim1, dim2)]
    x = e.permute(x, [*rest, dim1, dim2])
    shape = shape_of(x)
    n, m = shape[-2:]
    length = node.meta["val"].shape[-1]
    merged = e.reshape(x, (*shape[:-2], n * m), f"{node.target}")
    if length == 0:
        return e.emit(fusion.FullOp(0, TensorType(element_of(x), tuple(node.meta["val"].shape))))
    start = offset if offset >= 0 else -offset * m
    index = e.binary(fusion.MulOp, iota(e, (length,), 0, I64), m + 1, I64)
    if start:
        index = e.binary(fusion.AddOp, index, start, I64)
    return index_select(e, merged, len(shape) - 2, index)


def _diagonal_scatter(
    e: Emitter, node: Node, x: SSAValue, source: SSAValue, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> SSAValue:
    """
    `torch.diagonal_scatter` (a diagonal's backward, `einsum("ii->")`'s): x with the diagonal's
    positions (column - row = offset, over the two axes moved last) taking `source`'s values, read
    along the rows (offset >= 0) or the columns, `fusion.where` the mask of the diagonal.
    """
    rank = len(shape_of(x))
    dim1, dim2 = dim1 % rank, dim2 % rank
    rest = [d for d in range(rank) if d not in (dim1, dim2)]
    perm = [*rest, dim1, dim2]
    moved = e.permute(x, perm)
    shape = shape_of(moved)
    element = element_of(x)
    n, m = shape[-2:]
    rows, columns = iota(e, (n, m), 0, I64), iota(e, (n, m), 1, I64)
    shifted = e.binary(fusion.AddOp, rows, offset, I64) if offset else rows
    on = e.typed(lambda t: fusion.CompareOp("eq", columns, shifted, t), [columns, shifted], (n, m), IntegerType(1))
    source = e.cast(source, element)
    length = shape_of(source)[-1]
    along, extent = (len(shape) - 1, n) if offset >= 0 else (len(shape), m)  # source[k]: row k, or column k
    if extent > length:  # positions past the diagonal's end: never on it
        pad = (*shape_of(source)[:-1], extent - length)
        zeros = e.emit(fusion.FullOp(0, TensorType(element, pad)))
        joined = (*shape_of(source)[:-1], extent)
        source = e.typed(lambda t: fusion.ConcatOp([source, zeros], len(pad) - 1, t), [source, zeros], joined, element)
    value = e.broadcast_to(e.unsqueeze(source, [along]), shape)
    mask = e.broadcast_to(on, shape)
    result = e.typed(lambda t: fusion.WhereOp(mask, value, moved, t), [mask, value, moved], shape, element)
    return e.permute(result, [perm.index(d) for d in range(rank)])


def _flip(e: Emitter, node: Node, x: SSAValue, dims) -> SSAValue:
    rank = len(shape_of(x))
    axes = sorted({d % rank for d in dims if shape_of(x)[d % rank] > 1})
    if not axes:
        return x
    return e.typed(lambda t: fusion.FlipOp(x, axes, t), [x], shape_of(x), element_of(x))


def iota(e: Emitter, shape: tuple[int, ...], dim: int, element) -> SSAValue:
    return e.emit(fusion.IotaOp(dim, TensorType(element, shape)))


def _arange(e: Emitter, node: Node, *args, **kwargs) -> SSAValue:
    """
    `start + i * step` as torch's CPU kernel computes it: in int64 for an integer dtype (`start` and
    `step` truncated to integers), in f64 for f32 and f64 and in f32 for bf16 and f16, rounded to
    the dtype (`_float_range`).
    """
    numbers = [a for a in args if isinstance(a, int | float)]
    start, step = 0, 1
    if node.target == aten.arange.start_step and len(numbers) >= 3:
        start, step = numbers[0], numbers[2]
    elif node.target in (aten.arange.start, aten.arange.start_step):
        start = numbers[0]
    if "start" in kwargs:
        start = kwargs["start"]
    if "step" in kwargs:
        step = kwargs["step"]
    val = node.meta["val"]
    element = element_type(val.dtype, node)
    shape = tuple(val.shape)
    if not val.dtype.is_floating_point:  # torch's Scalar -> int64 conversions truncate toward zero
        start, step = int(start), int(step)
        result = iota(e, shape, 0, I64)
        if step != 1:
            result = e.binary(fusion.MulOp, result, step, I64)
        if start != 0:
            result = e.binary(fusion.AddOp, result, start, I64)
        return e.cast(result, element)
    last = start + step * (shape[0] - 1) if shape[0] else start
    exact = (start, step, last, last - start)
    if all(float(v).is_integer() and abs(v) <= 2 ** _MANTISSA[val.dtype] for v in exact):
        result = iota(e, shape, 0, element)  # every value and product exact in the dtype
        if step != 1:
            result = e.binary(fusion.MulOp, result, step, element)
        return e.binary(fusion.AddOp, result, start, element)  # `+ start` also for 0: -0.0 * ... is +0.0
    return _float_range(e, shape[0], start, step, val.dtype, element)


_MANTISSA = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}
"""Bits of each float dtype's significand: the integers up to 2**bits are exact in it."""

_GRAIN_SIZE = 32768
"""`at::internal::GRAIN_SIZE`: torch's CPU kernels split a range at least this long over threads."""


def _vector_bytes() -> int:
    """
    The width of the CPU vectors (`at::vec::Vectorized`) of torch's `arange` kernel, in bytes:
    256 bits on x86 (torch registers no AVX-512 build of it), 128 on ARM without SVE.
    """
    if platform.machine().lower() in ("arm64", "aarch64"):
        return 32 if torch.backends.cpu.get_cpu_capability().startswith("SVE") else 16
    return 32


def _float_range(e: Emitter, n: int, start: float, step: float, dtype: torch.dtype, element: Attribute) -> SSAValue:
    """
    torch's CPU `arange` of a float dtype: `start + step * i` computed in the accumulation type
    (f64 for f32 and f64, f32 for bf16 and f16) and rounded to the dtype, except that its
    vectorized loop rounds each vector's first value to the dtype first and adds `k * step` to it
    for the vector's k-th lane (a second rounding). Each thread's range (one below `_GRAIN_SIZE`
    elements) runs vectors of `V` lanes two at a time from its start, and the last elements that
    fill no pair one at a time. So element i is `dtype(dtype(start + step * b) + (i - b) * step)`
    with b the index of its vector's first lane, or i itself. In f32 the multiply-adds are fused
    (`_fused_multiply_add`), the lanes' only for f16 (as torch 2.13's kernel; torch 2.11's rounds
    them apart, which differs on about one element in a million).
    """
    acc = element_type(torch.float64 if dtype in (torch.float32, torch.float64) else torch.float32)
    lanes = _vector_bytes() // dtype.itemsize
    i = iota(e, (n,), 0, I64)
    chunk = n
    threads = torch.get_num_threads()
    if n >= _GRAIN_SIZE and threads > 1:
        tasks = min(threads, -(-n // _GRAIN_SIZE))
        chunk = -(-n // tasks)
    last_start = (n - 1) // chunk * chunk
    full, tail = chunk - chunk % (2 * lanes), (n - last_start) - (n - last_start) % (2 * lanes)
    base = i
    if max(full, tail) > 0:
        local = e.binary(fusion.RemainderOp, i, chunk, I64) if chunk < n else i
        bound: SSAValue | int = tail
        if full != tail and chunk < n:  # the last thread's range: its own count of whole pairs
            in_last = e.cast(_compare(e, "ge", i, last_start), I64)
            bound = e.binary(fusion.AddOp, e.binary(fusion.MulOp, in_last, tail - full, I64), full, I64)
        vectorized = _compare(e, "lt", local, bound)
        first = e.binary(fusion.SubOp, i, e.binary(fusion.RemainderOp, local, lanes, I64), I64)
        base = _where(e, vectorized, first, i)
    value = e.cast(_fused_multiply_add(e, base, step, start, acc), element)
    if base is i:
        return value
    lane = e.binary(fusion.SubOp, i, base, I64)
    if dtype == torch.float16:  # its vectors fuse the lane's multiply-add too, in f32
        with_lanes = _fused_multiply_add(e, lane, step, value, acc)
    else:
        with_lanes = e.binary(
            fusion.AddOp, e.cast(value, acc), e.binary(fusion.MulOp, e.cast(lane, acc), step, acc), acc
        )
    return e.cast(with_lanes, element)


def _fused_multiply_add(
    e: Emitter, index: SSAValue, scale: float, offset: float | SSAValue, element: Attribute
) -> SSAValue:
    """
    `offset + scale * index` in `element` (an integer `index`; `offset` a number or a tensor of a
    float dtype that f32 holds), as torch's CPU kernels compute it for f32: one fused multiply-add,
    rounded once (the f64 product of an f32 scale and an index below 2**29 is exact, and so is the
    f64 sum but where the two lie more than 29 binary orders apart). For f64 it is rounded twice,
    an ulp off the fused result at times.
    """
    f64 = element_type(torch.float64)
    if element != element_type(torch.float32):
        offset = e.cast(offset, element) if isinstance(offset, SSAValue) else offset
        return e.binary(fusion.AddOp, e.binary(fusion.MulOp, e.cast(index, element), scale, element), offset, element)
    product = e.binary(fusion.MulOp, e.cast(index, f64), _as_f32(scale), f64)
    offset = e.cast(offset, f64) if isinstance(offset, SSAValue) else _as_f32(offset)
    return e.cast(e.binary(fusion.AddOp, product, offset, f64), element)


def _as_f32(value: float) -> float:
    return float(torch.tensor(value, dtype=torch.float64).to(torch.float32))


def _where(e: Emitter, condition: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    return e.typed(lambda t: fusion.WhereOp(condition, x, y, t), [condition, x, y], shape_of(x), element_of(x))


def _compare(e: Emitter, kind: str, x: SSAValue, bound: int) -> SSAValue:
    """`x <kind> bound` for an integer tensor `x` and a number."""
    limit = e.broadcast_to(e.constant(bound, element_of(x)), shape_of(x))
    return e.typed(lambda t: fusion.CompareOp(kind, x, limit, t), [x, limit], shape_of(x), IntegerType(1))


def _linspace(e: Emitter, node: Node, start: float, end: float, steps: int, **kwargs) -> SSAValue:
    """
    `torch.linspace` as its CPU kernel computes it: in the dtype, each operation rounded to it
    (torch's decomposition computes a bf16 or f16 one in f32), `start + step * i` for the first
    half and `end - step * (steps - 1 - i)` for the second, with
    `step = (end - start) / (steps - 1)`; for an integer dtype in f64 from the truncated ends,
    truncated.
    """
    dtype = node.meta["val"].dtype
    element = element_type(dtype, node)
    i = iota(e, (steps,), 0, I64)
    counted = e.binary(fusion.SubOp, steps - 1, i, I64)
    half = _compare(e, "lt", i, max(steps // 2, 1))  # one step: `start` (torch fills it)
    if not dtype.is_floating_point:
        first, final = float(int(start)), float(int(end))
        step = (final - first) / max(steps - 1, 1)
        f64 = element_type(torch.float64)
        lower, upper = _fused_multiply_add(e, i, step, first, f64), _fused_multiply_add(e, counted, -step, final, f64)
        return e.cast(_where(e, half, lower, upper), element)  # truncated toward zero, as C++ converts
    # The ends as the kernel holds them: rounded to the dtype (a half type's through f32); 0-d
    # tensors of the dtype round each step as c10's scalar types do (the count too: `Half / int64_t`).
    through = torch.float32 if dtype.itemsize < 4 else dtype
    first, final = (torch.tensor(float(v), dtype=torch.float64).to(through).to(dtype) for v in (start, end))
    step = float((final - first) / torch.tensor(max(steps - 1, 1), dtype=dtype))
    if dtype == torch.float32:  # the kernel's `start + step * i` is one fused multiply-add
        lower = _fused_multiply_add(e, i, step, float(first), element)
        upper = _fused_multiply_add(e, counted, -step, float(final), element)
        return _where(e, half, lower, upper)
    # bf16 and f16 (c10's operators round each product and sum) and f64 (`_fused_multiply_add`)
    lower = e.binary(fusion.AddOp, e.binary(fusion.MulOp, e.cast(i, element), step, element), float(first), element)
    product = e.binary(fusion.MulOp, e.cast(counted, element), step, element)
    return _where(e, half, lower, e.binary(fusion.SubOp, float(final), product, element))


def _eye(e: Emitter, node: Node, *args, **kwargs) -> SSAValue:
    """`torch.eye(n, m)`: where the row's iota equals the column's (torch's decomposition compares uint8 ones)."""
    val = node.meta["val"]
    shape = tuple(val.shape)
    rows, columns = iota(e, shape, 0, I64), iota(e, shape, 1, I64)
    same = e.typed(lambda t: fusion.CompareOp("eq", rows, columns, t), [rows, columns], shape, IntegerType(1))
    return e.cast(same, element_type(val.dtype, node))


def _triangle(keep_below: bool) -> Builder:
    """tril/triu: the elements with `column - row <= diagonal` (tril) or `>= diagonal` (triu), else 0."""

    def build(e: Emitter, node: Node, x: SSAValue, diagonal: int = 0) -> SSAValue:
        shape = shape_of(x)
        if len(shape) < 2:
            raise e.error(f"{node.target} needs a tensor of rank 2 or more")
        rows, columns = shape[-2:]
        offset = e.binary(fusion.SubOp, iota(e, (rows, columns), 1, I64), iota(e, (rows, columns), 0, I64), I64)
        bound = e.broadcast_to(e.constant(diagonal, I64), (rows, columns))
        predicate = "le" if keep_below else "ge"
        mask = e.typed(
            lambda t: fusion.CompareOp(predicate, offset, bound, t), [offset, bound], (rows, columns), IntegerType(1)
        )
        mask = e.broadcast_to(mask, shape, x)
        zero = e.broadcast_to(e.constant(0, element_of(x)), shape, x)
        return e.typed(lambda t: fusion.WhereOp(mask, x, zero, t), [mask, x, zero], shape, element_of(x))

    return build


def _cumsum(e: Emitter, node: Node, x: SSAValue, dim: int, *, dtype=None) -> SSAValue:
    x = e.cast(x, out_element(node))
    if not shape_of(x):
        return x
    dim = _axis(x, dim)
    return e.typed(lambda t: fusion.CumsumOp(x, dim, t), [x], shape_of(x), element_of(x))


def _cumprod(e: Emitter, node: Node, x: SSAValue, dim: int, *, dtype=None) -> SSAValue:
    x = e.cast(x, out_element(node))
    if not shape_of(x):
        return x
    dim = _axis(x, dim)
    return e.typed(lambda t: fusion.CumprodOp(x, dim, t), [x], shape_of(x), element_of(x))


def _prod(e: Emitter, node: Node, x: SSAValue, dim: int | None = None, keepdim: bool = False, *, dtype=None):
    """prod.dim_int(x, dim, keepdim) and prod.default(x): `fusion.prod` along each axis in turn."""
    x = e.cast(x, out_element(node))
    shape = shape_of(x)
    axes = list(range(len(shape))) if dim is None else [_axis(x, dim)]
    for axis in reversed(axes):
        kept = tuple(n for d, n in enumerate(shape_of(x)) if d != axis)
        x = e.typed(lambda t, v=x, a=axis: fusion.ProdOp(v, a, t), [x], kept, element_of(x))
    return e.unsqueeze(x, axes) if keepdim and axes else x


def arg_reduce(e: Emitter, kind: type[fusion.ArgReductionFusionOp], x: SSAValue, dim: int | None, keepdim: bool):
    if element_of(x) == IntegerType(1):  # booleans: as numbers, whose first maximum is torch's
        x = e.cast(x, I32)
    shape = shape_of(x)
    if dim is None:
        x = e.reshape(x, (math.prod(shape),), "the flattened operand") if len(shape) != 1 else x
        result = e.typed(lambda t: kind(x, 0, t), [x], (), I64)
        return e.unsqueeze(result, list(range(len(shape)))) if keepdim and shape else result
    if not shape:
        return e.emit(fusion.FullOp(0, TensorType(I64, ())))
    dim = _axis(x, dim)
    kept = tuple(n for d, n in enumerate(shape) if d != dim)
    result = e.typed(lambda t: kind(x, dim, t), [x], kept, I64)
    return e.unsqueeze(result, [dim]) if keepdim else result


def _arg(kind: type[fusion.ArgReductionFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, x: SSAValue, dim: int | None = None, keepdim: bool = False) -> SSAValue:
        return arg_reduce(e, kind, x, dim, keepdim)

    return build


def _extreme_with_index(values: type[fusion.ReductionFusionOp], indices: type[fusion.ArgReductionFusionOp]) -> Builder:
    """`x.max(dim)` / `x.min(dim)`: (the reduction, the arg-reduction)."""

    def build(e: Emitter, node: Node, x: SSAValue, dim: int, keepdim: bool = False) -> tuple[SSAValue, SSAValue]:
        if not shape_of(x):
            return x, arg_reduce(e, indices, x, dim, keepdim)
        return e.reduce(values, x, [_axis(x, dim)], keepdim), arg_reduce(e, indices, x, dim, keepdim)

    return build


def topk(e: Emitter, x: SSAValue, k: int, dim: int, largest: bool) -> tuple[SSAValue, SSAValue]:
    if not shape_of(x):
        return x, e.emit(fusion.FullOp(0, TensorType(I64, ())))
    dim = _axis(x, dim)
    shape = list(shape_of(x))
    shape[dim] = k
    indices = e.typed(lambda t: fusion.TopkOp(x, k, dim, largest, t), [x], tuple(shape), I64)
    return gather(e, x, dim, indices), indices


def _topk(e: Emitter, node: Node, x: SSAValue, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    return topk(e, x, k, dim, largest)


def _sort(e: Emitter, node: Node, x: SSAValue, *args, **kwargs):
    """sort.default(x, dim, descending) and sort.stable(x, *, stable, dim, descending)."""
    positional = list(args) if node.target == aten.sort.default else []
    dim = positional[0] if positional else -1
    descending = positional[1] if len(positional) > 1 else False
    dim = kwargs.get("dim", dim)
    descending = kwargs.get("descending", descending)
    n = shape_of(x)[_axis(x, dim)] if shape_of(x) else 1
    return topk(e, x, n, dim, descending)


def _kth_smallest(e: Emitter, x: SSAValue, k: int, dim: int, keepdim: bool) -> tuple[SSAValue, SSAValue]:
    """The k-th smallest value along `dim` (0-based) and its index: the `k + 1` smallest by `fusion.topk`, the last."""
    if not shape_of(x):
        return x, e.emit(fusion.FullOp(0, TensorType(I64, ())))
    dim = _axis(x, dim)
    values, indices = topk(e, x, k + 1, dim, largest=False)
    shape = list(shape_of(values))
    offsets = [k if d == dim else 0 for d in range(len(shape))]
    shape[dim] = 1
    picked = [
        e.typed(lambda t, v=v: fusion.SliceOp(v, offsets, [1] * len(shape), t), [v], tuple(shape), element_of(v))
        for v in (values, indices)
    ]
    return tuple(p if keepdim else e.squeeze(p, [dim]) for p in picked)  # type: ignore[return-value]


def _median(e: Emitter, node: Node, x: SSAValue, dim: int | None = None, keepdim: bool = False):
    """
    `x.median(dim)`: the lower median, `(n - 1) // 2`-th smallest (and its index); `x.median()` of
    all values. A row with a NaN gives its first NaN and that NaN's index, as torch's kernel does
    (`fusion.topk` orders NaN last, as `sort` and `kthvalue` do).
    """
    if dim is None:
        flat = e.reshape(x, (math.prod(shape_of(x)),), "the flattened operand") if len(shape_of(x)) != 1 else x
        value = _kth_smallest(e, flat, (shape_of(flat)[0] - 1) // 2, 0, keepdim=True)
        return e.squeeze(_first_nan(e, flat, 0, *value)[0], [0])
    if not shape_of(x):
        return _kth_smallest(e, x, 0, dim, keepdim)
    dim = _axis(x, dim)
    value, index = _first_nan(e, x, dim, *_kth_smallest(e, x, (shape_of(x)[dim] - 1) // 2, dim, keepdim=True))
    return (value, index) if keepdim else (e.squeeze(value, [dim]), e.squeeze(index, [dim]))


def _nanmedian(e: Emitter, node: Node, x: SSAValue, dim: int | None = None, keepdim: bool = False):
    """
    `x.nanmedian(dim)`: the lower median of each row's values that are not NaN (NaN where all are),
    and an index of it: the rows sorted ascending by `fusion.topk` (NaN last), read at
    `max((m - 1) // 2, 0)` with m the row's count of numbers. (Which index a tie gives is torch's
    kernel's choice, as for `median`.)
    """
    if not is_float(element_of(x)):
        return _median(e, node, x, dim, keepdim)
    flat = dim is None
    if flat:
        x = e.reshape(x, (math.prod(shape_of(x)),), "the flattened operand") if len(shape_of(x)) != 1 else x
        dim = 0
    if not shape_of(x):
        return _kth_smallest(e, x, 0, dim, keepdim)
    dim = _axis(x, dim)
    n = shape_of(x)[dim]
    values, indices = topk(e, x, n, dim, largest=False)
    nan = e.cast(e.typed(lambda t: fusion.CompareOp("ne", x, x, t), [x, x], shape_of(x), IntegerType(1)), I64)
    numbers = e.binary(fusion.SubOp, n, e.reduce(fusion.SumOp, nan, [dim], keepdim=True), I64)
    at = e.binary(fusion.FloorDivOp, e.binary(fusion.SubOp, numbers, 1, I64), 2, I64)
    at = e.binary(fusion.MaximumOp, at, 0, I64)
    value, index = gather(e, values, dim, at), gather(e, indices, dim, at)
    if flat:
        return e.squeeze(value, [0])
    return (value, index) if keepdim else (e.squeeze(value, [dim]), e.squeeze(index, [dim]))


def _first_nan(e: Emitter, x: SSAValue, dim: int, value: SSAValue, index: SSAValue) -> tuple[SSAValue, SSAValue]:
    """
    `value` and `index` (x's rank, extent 1 along `dim`), or where x's row along `dim` has a NaN,
    its first NaN and that NaN's index.
    """
    if not is_float(element_of(x)) or not shape_of(x)[dim]:
        return value, index
    nan = e.typed(lambda t: fusion.CompareOp("ne", x, x, t), [x, x], shape_of(x), IntegerType(1))
    first = arg_reduce(e, fusion.ArgMaxOp, nan, dim, keepdim=True)  # the first True: the first NaN, else 0
    has = gather(e, nan, dim, first)
    picked = (gather(e, x, dim, first), first)
    return tuple(  # type: ignore[return-value]
        e.typed(lambda t, a=a, b=b: fusion.WhereOp(has, a, b, t), [has, a, b], shape_of(b), element_of(b))
        for a, b in zip(picked, (value, index))
    )


def _kthvalue(e: Emitter, node: Node, x: SSAValue, k: int, dim: int = -1, keepdim: bool = False):
    return _kth_smallest(e, x, k - 1, dim, keepdim)


def _scatter_hits(e: Emitter, x: SSAValue, dim: int, index: SSAValue, src: SSAValue | None, what: str):
    """
    For `x.scatter*(dim, index, src)`: the mask [..., J, C, ...] of which index entry j (along
    `dim`) writes which position c of `x` along `dim` (the positions' axis right after `dim`), and
    `dim` made non-negative. The index must have x's shape off `dim` (torch's smaller index, which
    writes a leading block only, is refused) and src, as torch requires, at least the index's.
    """
    index = _index_operand(e, index)
    dim = _axis(x, dim)
    shape, wanted = shape_of(x), shape_of(index)
    if len(shape) != len(wanted) or any(w != n for d, (w, n) in enumerate(zip(wanted, shape)) if d != dim):
        raise e.error(
            f"{what}: the index {list(wanted)} must have the shape of x {list(shape)} off dim {dim} (a smaller "
            "index writes a leading block only, which the fusion dialect does not express)"
        )
    if src is not None and (len(shape_of(src)) != len(wanted) or any(a < b for a, b in zip(shape_of(src), wanted))):
        raise e.error(f"{what}: src {list(shape_of(src))} is smaller than the index {list(wanted)}")
    # An entry out of [0, extent) would name no position and be dropped where torch raises: a gather
    # of zeros at the entries (torch's gather raises on them) added to the index, one pass over it.
    index = e.cast(index, I64)
    zeros = e.broadcast_to(e.constant(0, I64), shape)
    index = e.binary(fusion.AddOp, index, gather(e, zeros, dim, index), I64)
    spread = (*wanted[: dim + 1], shape[dim], *wanted[dim + 1 :])
    at = e.broadcast_to(e.unsqueeze(index, [dim + 1]), spread)
    where = iota(e, spread, dim + 1, I64)
    mask = e.typed(lambda t: fusion.CompareOp("eq", at, where, t), [at, where], spread, IntegerType(1))
    return mask, dim


def scatter(e: Emitter, x: SSAValue, dim: int, index: SSAValue, src: SSAValue | float) -> SSAValue:
    """
    `x.scatter(dim, index, src)`: each position of x that an index entry names takes that entry's
    src value (where several name it, the last along `dim`, as torch's CPU kernel leaves it); the
    others keep x. As a mask over (entry, position), the last entry per position, and a gather.
    """
    tensor = src if isinstance(src, SSAValue) else None
    mask, dim = _scatter_hits(e, x, dim, index, tensor, "scatter")
    spread, shape = shape_of(mask), shape_of(x)
    # Entry j+1 where it names the position, else 0; the largest per position is the last writer.
    ordinal = e.binary(fusion.AddOp, iota(e, spread, dim, I64), 1, I64)
    zero = e.broadcast_to(e.constant(0, I64), spread)
    named = e.typed(lambda t: fusion.WhereOp(mask, ordinal, zero, t), [mask, ordinal, zero], spread, I64)
    last = e.reduce(fusion.MaxOp, named, [dim], keepdim=False)  # [..., C, ...]: x's shape
    none = e.broadcast_to(e.constant(0, I64), shape)
    written = e.typed(lambda t: fusion.CompareOp("gt", last, none, t), [last, none], shape, IntegerType(1))
    if tensor is not None:
        entry = e.binary(fusion.MaximumOp, e.binary(fusion.SubOp, last, 1, I64), 0, I64)
        value = gather(e, e.cast(tensor, element_of(x)), dim, entry)
    else:
        value = e.broadcast_to(e.constant(src, element_of(x)), shape)  # type: ignore[arg-type]
    return e.typed(lambda t: fusion.WhereOp(written, value, x, t), [written, value, x], shape, element_of(x))


def _scatter(e: Emitter, node: Node, x: SSAValue, dim: int, index: SSAValue, src, *, reduce=None) -> SSAValue:
    """scatter.src / scatter.value (`reduce=` is scatter.reduce's, which the table does not map)."""
    return scatter(e, x, dim, index, src)


def _past_the_end(e: Emitter, index: SSAValue, extent: int, linear: SSAValue, end: int) -> SSAValue:
    """`linear`, with `end` where the I64 `index` is out of [0, extent)."""
    shape = shape_of(index)
    past = e.broadcast_to(e.constant(end, I64), shape)
    for predicate, bound in (("lt", 0), ("ge", extent)):
        limit = e.broadcast_to(e.constant(bound, I64), shape)
        hit = e.typed(
            lambda t, p=predicate, b=limit: fusion.CompareOp(p, index, b, t), [index, limit], shape, IntegerType(1)
        )
        linear = e.typed(lambda t, h=hit, v=linear: fusion.WhereOp(h, past, v, t), [hit, past, linear], shape, I64)
    return linear


def _laid_out(x: SSAValue) -> bool:
    """Whether x's type streams or shards an axis (a layout the ops after it keep)."""
    return isinstance(x.type, TensorType) and any(kind != "serial" for kind in layout_of(x.type).kinds)


def _scatter_add_by_mask(e: Emitter, x: SSAValue, dim: int, index: SSAValue, src: SSAValue) -> SSAValue:
    """x + the `fusion.sum` over index entries of src where an entry names the position: memory index x extent."""
    mask, dim = _scatter_hits(e, x, dim, index, src, "scatter_add")
    spread = shape_of(mask)
    spread_src = e.broadcast_to(e.unsqueeze(src, [dim + 1]), spread)
    zero = e.broadcast_to(e.constant(0, element_of(x)), spread)
    parts = e.typed(
        lambda t: fusion.WhereOp(mask, spread_src, zero, t), [mask, spread_src, zero], spread, element_of(x)
    )
    return e.binary(fusion.AddOp, x, e.reduce(fusion.SumOp, parts, [dim], keepdim=False), element_of(x))


def _scatter_add(e: Emitter, node: Node, x: SSAValue, dim: int, index: SSAValue, src: SSAValue) -> SSAValue:
    """
    `x.scatter_add(dim, index, src)`: x plus, at the position each index entry names along `dim`
    (its own coordinates elsewhere), that entry's src value. One `fusion.index_add` over x
    flattened, at the entries' row-major positions: memory linear in the index (an MoE's
    dispatch of tokens x hidden entries), where a mask of entries against positions is not.
    Torch's shapes: the index no larger than x off `dim` nor than src anywhere; src's leading
    block of the index's shape is added.
    """
    index = _index_operand(e, index)
    dim = _axis(x, dim)
    shape, entries = shape_of(x), shape_of(index)
    if len(shape) != len(entries) or any(w > n for d, (w, n) in enumerate(zip(entries, shape)) if d != dim):
        raise e.error(f"scatter_add: the index {list(entries)} must be no larger than x {list(shape)} off dim {dim}")
    if len(shape_of(src)) != len(entries) or any(a < b for a, b in zip(shape_of(src), entries)):
        raise e.error(f"scatter_add: src {list(shape_of(src))} is smaller than the index {list(entries)}")
    total = math.prod(entries)
    if total == 0:
        return x
    src = e.cast(src, element_of(x))
    if shape_of(src) != entries:  # torch reads the leading block of src of the index's shape
        zeros, ones = [0] * len(entries), [1] * len(entries)
        src = e.typed(lambda t: fusion.SliceOp(src, zeros, ones, t), [src], entries, element_of(x))
    if _laid_out(x) and entries == (*shape[:dim], entries[dim], *shape[dim + 1 :]):
        # Flattened, x would lose its stream or device axes: the mask of entries against positions.
        return _scatter_add_by_mask(e, x, dim, index, src)
    index = e.cast(index, I64)
    inner = math.prod(shape[dim + 1 :])
    linear = index if inner == 1 else e.binary(fusion.MulOp, index, inner, I64)
    for axis in range(len(shape)):
        stride = math.prod(shape[axis + 1 :])
        if axis != dim and entries[axis] > 1:
            coordinate = iota(e, entries, axis, I64)
            term = coordinate if stride == 1 else e.binary(fusion.MulOp, coordinate, stride, I64)
            linear = e.binary(fusion.AddOp, linear, term, I64)
    flat = (math.prod(shape),)
    # An index out of [0, extent) is torch's error: moved past the end, where index_add raises it
    # too, rather than to another row's position.
    linear = _past_the_end(e, index, shape[dim], linear, flat[0])
    target = e.reshape(x, flat, "scatter_add") if shape != flat else x
    if entries != (total,):
        linear = e.reshape(linear, (total,), "the flattened index")
        src = e.reshape(src, (total,), "the flattened src")
    result = index_add(e, target, 0, linear, src)
    return e.reshape(result, shape, "scatter_add") if shape != flat else result


def _scatter_reduce(
    e: Emitter, node: Node, x: SSAValue, dim: int, index: SSAValue, src: SSAValue, reduce: str, *, include_self=True
) -> SSAValue:
    """
    `x.scatter_reduce(dim, index, src, reduce)` (a GNN's aggregation, PyG's `scatter(..., reduce=)`):
    "sum" and "mean" add the entries with `scatter_add` (one `fusion.index_add`) and count them;
    "amax", "amin" and "prod" reduce src over the mask of which entry names which position
    (`fusion.compare` of the index with an iota, index size x the extent of `dim`). A position no
    entry names keeps x; `include_self` says whether x's value joins the reduction.
    """
    element = element_of(x)
    if not is_float(element):
        raise e.error(f"{node.target} of {node.meta['val'].dtype} tensors: fusion computes it on floats only")
    src = e.cast(src, element)
    shape = shape_of(x)
    zeros = e.broadcast_to(e.constant(0, element), shape)
    ones = e.broadcast_to(e.constant(1, element), shape_of(index))
    counts = _scatter_add(e, node, zeros, dim, index, ones)
    none = e.broadcast_to(e.constant(0, element), shape)
    hit = e.typed(lambda t: fusion.CompareOp("gt", counts, none, t), [counts, none], shape, IntegerType(1))
    if reduce in ("sum", "mean"):
        total = _scatter_add(e, node, zeros, dim, index, src)
        if include_self:
            total = e.binary(fusion.AddOp, total, x, element)
            counts = e.binary(fusion.AddOp, counts, 1.0, element)
        if reduce == "mean":
            total = e.binary(fusion.DivOp, total, e.binary(fusion.MaximumOp, counts, 1.0, element), element)
    elif reduce in ("amax", "amin", "prod"):
        mask, dim = _scatter_hits(e, x, dim, index, src, f"scatter_reduce({reduce!r})")
        spread = shape_of(mask)
        entries = shape_of(index)
        src = e.typed(lambda t: fusion.SliceOp(src, [0] * len(entries), [1] * len(entries), t), [src], entries, element)
        spread_src = e.broadcast_to(e.unsqueeze(src, [dim + 1]), spread)
        neutral = {"amax": float("-inf"), "amin": float("inf"), "prod": 1.0}[reduce]
        fill = e.broadcast_to(e.constant(neutral, element), spread)
        parts = e.typed(lambda t: fusion.WhereOp(mask, spread_src, fill, t), [mask, spread_src, fill], spread, element)
        if reduce == "prod":  # fusion.prod runs along one axis, not a list of them
            kept = tuple(n for d, n in enumerate(spread) if d != dim)
            total = e.typed(lambda t: fusion.ProdOp(parts, dim, t), [parts], kept, element)
        else:
            total = e.reduce(fusion.MaxOp if reduce == "amax" else fusion.MinOp, parts, [dim], keepdim=False)
        if include_self:
            both = {"amax": fusion.MaximumOp, "amin": fusion.MinimumOp, "prod": fusion.MulOp}[reduce]
            total = e.binary(both, total, x, element)
    else:
        raise e.error(f"{node.target}: reduce={reduce!r} is not supported")
    return e.typed(lambda t: fusion.WhereOp(hit, total, x, t), [hit, total, x], shape, element)


INDEXING_TABLE: dict[torch._ops.OpOverload, Builder] = {
    aten.scatter.src: _scatter,
    aten.scatter.value: _scatter,
    aten.scatter_add.default: _scatter_add,
    aten.scatter_reduce.two: _scatter_reduce,
    aten.index_add.default: _index_add,
    aten.gather.default: _gather,
    aten.index_select.default: _index_select,
    aten.embedding.default: _embedding,
    aten.index.Tensor: _index,
    aten.flip.default: _flip,
    aten.diagonal_scatter.default: _diagonal_scatter,
    aten.diagonal.default: _diagonal,
    aten.eye.default: _eye,
    aten.eye.m: _eye,
    aten.arange.default: _arange,
    aten.arange.start: _arange,
    aten.arange.start_step: _arange,
    aten.linspace.default: _linspace,
    aten.tril.default: _triangle(keep_below=True),
    aten.triu.default: _triangle(keep_below=False),
    aten.cumsum.default: _cumsum,
    aten.cumprod.default: _cumprod,
    aten.prod.dim_int: _prod,
    aten.prod.default: _prod,
    aten.argmax.default: _arg(fusion.ArgMaxOp),
    aten.argmin.default: _arg(fusion.ArgMinOp),
    aten.max.dim: _extreme_with_index(fusion.MaxOp, fusion.ArgMaxOp),
    aten.min.dim: _extreme_with_index(fusion.MinOp, fusion.ArgMinOp),
    aten.topk.default: _topk,
    aten.sort.default: _sort,
    aten.median.dim: _median,
    aten.median.default: _median,
    aten.kthvalue.default: _kthvalue,
    aten.nanmedian.dim: _nanmedian,
    aten.nanmedian.default: _nanmedian,
    aten.sort.stable: _sort,
}
