"""
The local pieces of a resharding: copies between buffers of this device (a launch of
`fusion.set` or `fusion.permute` on local tensors) and the contiguous temporaries that let a
collective work on data whose communicated axis is not outermost in memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import MemRefType, NoneAttr, TensorType
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


def temporary(like: SSAValue, shape: Sequence[int], name: str) -> hir.AllocateOp:
    assert isinstance(like.type, MemRefType)
    alloc = hir.AllocateOp(MemRefType(like.type.element_type, list(shape)))
    alloc.result.name_hint = name
    return alloc


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
