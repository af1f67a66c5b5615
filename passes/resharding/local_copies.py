"""
The local pieces of a resharding: copies between buffers of this device (a launch of
`fusion.set` or `fusion.permute` on local tensors) and the contiguous temporaries that let a
collective work on data whose communicated axis is not outermost in memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, AnyFloat, IndexType, IntegerAttr, MemRefType, NoneAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

from hir.dialects import fusion, hir
from hir.dialects.hir import contiguous_strides, memref_strides


def _tensor(t: MemRefType, shape: Sequence[int] | None = None) -> TensorType:
    return TensorType(t.element_type, list(shape if shape is not None else t.get_shape()))


def is_contiguous(buffer: SSAValue) -> bool:
    """A whole buffer, or a view whose strides are row-major on every axis longer than 1."""
    t = buffer.type
    assert isinstance(t, MemRefType)
    if isinstance(t.layout, NoneAttr):
        return True
    long_axes = [a for a, extent in enumerate(t.get_shape()) if extent != 1]
    strides = memref_strides(t)
    expected = contiguous_strides(t.get_shape())
    return all(strides[a] is not None and strides[a] == expected[a] for a in long_axes)


def outermost(buffer: SSAValue, axis: int) -> bool:
    """Whether a collective can concatenate or split `buffer` along `axis` as it is."""
    assert isinstance(buffer.type, MemRefType)
    return is_contiguous(buffer) and all(extent == 1 for extent in buffer.type.get_shape()[:axis])


def to_front(rank: int, axis: int) -> list[int]:
    """The permutation that moves `axis` first and keeps the others in order."""
    return [axis, *(a for a in range(rank) if a != axis)]


def inverse(perm: Sequence[int]) -> list[int]:
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return result


Extent = int | tuple[SSAValue, int]
"""A static extent, or the extent of a buffer's axis (read with `memref.dim` when it is dynamic)."""


def axes_of(buffer: SSAValue, order: Sequence[int] | None = None) -> list[Extent]:
    """The extents of `buffer`'s axes, in `order` (default: as they are)."""
    assert isinstance(buffer.type, MemRefType)
    return [(buffer, a) for a in (order if order is not None else range(len(buffer.type.get_shape())))]


def temporary(extents: Sequence[Extent], like: SSAValue, name: str) -> tuple[list[Operation], SSAValue]:
    """A contiguous buffer of `like`'s element type; dynamic extents (an uneven chunk's) read from their buffers."""
    assert isinstance(like.type, MemRefType)
    ops: list[Operation] = []
    shape: list[int] = []
    sizes: list[SSAValue] = []
    for extent in extents:
        if isinstance(extent, int):
            shape.append(extent)
            continue
        buffer, axis = extent
        assert isinstance(buffer.type, MemRefType)
        static = buffer.type.get_shape()[axis]
        shape.append(static)
        if static == DYNAMIC_INDEX:
            index = arith.ConstantOp(IntegerAttr(axis, IndexType()))
            dim = memref.DimOp(buffer, index.result)
            ops += [index, dim]
            sizes.append(dim.result)
    alloc = hir.AllocateOp(MemRefType(like.type.element_type, shape), sizes)
    alloc.result.name_hint = name
    return [*ops, alloc], alloc.result


def tensor_of(buffer: SSAValue) -> TensorType:
    """The tensor a launch region sees for `buffer` (`hir.tensor_type_of` of its type)."""
    assert isinstance(buffer.type, MemRefType)
    return hir.tensor_type_of(buffer.type)


def sum_launch(
    source: SSAValue, target: SSAValue, dims: Sequence[int], result_type: TensorType | None = None
) -> hir.LaunchOp:
    """
    A launch that sums `source` over `dims` into `target` on this device (a partial sum);
    `result_type`: the sum's, when the launch goes on to pad it (default: `target`'s).
    """
    block = Block(arg_types=[tensor_of(source)])
    block.args[0].name_hint = source.name_hint
    local = fusion.SumOp(block.args[0], list(dims), result_type or tensor_of(target))
    block.add_ops([local, hir.YieldOp(local.result)])
    return hir.LaunchOp([source], [target], Region(block))


def copy_launch(source: SSAValue, target: SSAValue, perm: Sequence[int] | None = None) -> hir.LaunchOp:
    """A launch that copies `source` into `target` on this device, permuting its axes by `perm`."""
    assert isinstance(source.type, MemRefType)
    assert isinstance(target.type, MemRefType)
    block = Block(arg_types=[_tensor(source.type)])
    block.args[0].name_hint = source.name_hint
    result_type = _tensor(target.type)
    if perm is None or list(perm) == sorted(perm):
        copy: Operation = fusion.SetOp(block.args[0], result_type)
    else:
        copy = fusion.PermuteOp(block.args[0], perm, result_type)
    block.add_ops([copy, hir.YieldOp(copy.results[0])])
    return hir.LaunchOp([source], [target], Region(block))


def zeros_after(
    value: SSAValue, axis: int, zeros: int, padded: TensorType | None = None
) -> tuple[list[Operation], SSAValue]:
    """
    The ops of a launch region that append `zeros` zero indices to `value` along `axis`, and the
    result, of type `padded` (needed when `value`'s extent there is `?`: this device's, which the
    padding brings to the static one).
    """
    t = value.type
    assert isinstance(t, TensorType)
    zero_shape = list(t.get_shape())
    zero_shape[axis] = zeros
    fill = fusion.FullOp(0.0 if isinstance(t.element_type, AnyFloat) else 0, TensorType(t.element_type, zero_shape))
    if padded is None:
        padded_shape = list(t.get_shape())
        padded_shape[axis] += zeros
        padded = TensorType(t.element_type, padded_shape)
    concat = fusion.ConcatOp([value, fill.result], axis, padded)
    return [fill, concat], concat.result


def pad_with_zeros(launch: hir.LaunchOp, axis: int, zeros: int) -> None:
    """
    Appends `zeros` zero indices along `axis` to what `launch` yields (its output is that much
    longer): the padding of an uneven shard to the equal pieces the transports take.
    """
    yield_op = launch.body.block.last_op
    assert isinstance(yield_op, hir.YieldOp)
    (value,) = yield_op.values
    ops, padded = zeros_after(value, axis, zeros)
    launch.body.block.insert_ops_before(ops, yield_op)
    yield_op.operands = [padded]


def first_indices_launch(
    source: SSAValue, target: SSAValue, axis: int, count: int, perm: Sequence[int] | None = None
) -> hir.LaunchOp:
    """
    A launch that copies the first `count` indices of `source` along `axis` into `target`, its
    axes permuted by `perm` (the way back from an axis-first temporary).
    """
    assert isinstance(source.type, MemRefType)
    assert isinstance(target.type, MemRefType)
    block = Block(arg_types=[_tensor(source.type)])
    block.args[0].name_hint = source.name_hint
    shape = list(source.type.get_shape())
    shape[axis] = count
    rank = len(shape)
    cut = fusion.SliceOp(block.args[0], [0] * rank, [1] * rank, _tensor(source.type, shape))
    ops: list[Operation] = [cut]
    result: SSAValue = cut.result
    if perm is not None and list(perm) != sorted(perm):
        ops.append(fusion.PermuteOp(result, perm, _tensor(target.type)))
        result = ops[-1].results[0]
    elif result.type != _tensor(target.type):
        # The target's type says `?` where this device's extent is `count`: the copy states it.
        ops.append(fusion.SetOp(result, _tensor(target.type)))
        result = ops[-1].results[0]
    block.add_ops([*ops, hir.YieldOp(result)])
    return hir.LaunchOp([source], [target], Region(block))
