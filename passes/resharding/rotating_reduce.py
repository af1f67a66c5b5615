"""
The reduce-based GEMM + reduce-scatter (nvFuser's reduce-based MM+RS, its PR #5923): a
`fusion.sum` over its operand's didx axis whose result is sharded along the operand's *stream*
axis, `Cu[didx(D), stream(D), M/D, N] -> C[didx(D), M/D, N]`. Chunk i of the stream axis holds
the partials of the rows that device mesh[i] keeps, so iteration i of the producer's stream loop
reduces its chunk to root mesh[i] (`hir.reduce`), and device mesh[i]'s output is complete after
iteration i: the reduction of each chunk overlaps with the GEMMs of the next ones.

`convert-fusion-to-hir` emits the loop (`rotating_reduce_of` says which sums qualify,
`reduce_step` is one iteration's ops), as it emits the broadcasts of a loop over the devices'
shards: the root is the loop's index, which no tensor type can say to `hir-lower-communication`.
Every device runs every iteration (SPMD); a device outside the mesh posts nothing.

A sum that does not qualify keeps the lowering of every partial sum (the loop computes every
chunk, then one `hir.reduce_scatter` after it): a `stream(N)` axis (a chunk then holds several
devices' rows), a mesh change, or a result stream axis.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Operation, SSAValue

from hir.dialects import fusion, hir
from hir.dialects.parallel_encoding import layout_of
from hir.dialects.syntax import array_values
from hir.passes.resharding.local_copies import axes_of, is_contiguous, sum_launch, temporary
from hir.passes.sharding import is_partial_sum
from hir.passes.symmetric_memory import index_constant


@dataclass(frozen=True)
class RotatingReduce:
    """How a qualifying sum's loop walks its operand."""

    stream_axis: int
    """The operand's stream axis, which becomes the result's didx axis (extent: the mesh size)."""
    result_axis: int
    """The result's didx axis."""
    dims: tuple[int, ...]
    """The axes the sum reduces, numbered in one iteration's chunk (the stream axis removed)."""
    mesh: tuple[int, ...]


def rotating_reduce_of(op: fusion.FusionOp) -> RotatingReduce | None:
    """The plan when `op` is a partial sum whose result's didx axis is its operand's stream axis."""
    if not isinstance(op, fusion.SumOp) or not is_partial_sum(op):
        return None
    src, dst = layout_of(op.x.type), layout_of(op.result.type)
    s, b = src.stream_axis, dst.didx_axis
    if s is None or b is None or src.stream_chunks is not None or dst.stream_axis is not None:
        return None
    if src.mesh and dst.mesh and src.mesh != dst.mesh:
        return None
    mesh = tuple(dst.mesh or src.mesh)
    assert isinstance(op.x.type, TensorType)
    if tuple(op.axis_map()[b]) != ((0, s),) or op.x.type.get_shape()[s] != len(mesh):
        return None
    dims = tuple(d - (d > s) for d in array_values(op.dims))
    return RotatingReduce(s, b, dims, mesh)


def reduce_step(plan: RotatingReduce, chunk: SSAValue, target: SSAValue, i: SSAValue) -> list[Operation]:
    """
    Iteration i: this device's partial of chunk i (the rows device mesh[i] keeps) reduced into
    the output of root mesh[i], and waited for on the iteration's stream. When the sum reduces
    only the didx axis and the chunk is laid out as the output (the didx axis of extent 1 at the
    same place, contiguous), the chunk itself is the partial; otherwise a local sum writes it
    into a contiguous temporary, reduced into the output without its extent-1 didx axis.
    """
    assert isinstance(chunk.type, MemRefType)
    assert isinstance(target.type, MemRefType)
    ops: list[Operation] = []
    if not (len(plan.dims) == 1 and chunk.type.get_shape() == target.type.get_shape() and is_contiguous(chunk)):
        zero = index_constant(0)
        mine = hir.AliasSelectOp(target, zero.result, plan.result_axis)
        mine.result.name_hint = "mine"
        target = mine.result
        allocation, partial = temporary(axes_of(target), target, "partial")
        ops += [zero, mine, *allocation, sum_launch(chunk, partial, plan.dims)]
        chunk = partial
    reduce = hir.ReduceOp(chunk, target, i, plan.mesh, "sum")
    return [*ops, reduce, hir.WaitOp(reduce.result)]
