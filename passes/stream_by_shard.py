"""
`overlap=by-shard` of `fusion-stream-overlap`: a function whose stream axes all have extent 1
(rows in one chunk, the `[S=1, D, M/D, K]` form of a tensor-parallel block) has nothing to
pipeline as written: its stream loop runs once, so the all-gather is one collective before the
GEMMs. Moving each stream axis onto the axis after it (the D blocks of rows) makes the loop iterate
over the devices' shards instead:

    [didx, stream, serial, ...] of extent [D, 1, D, ...]  ->  [didx, serial, stream, ...]
    [stream, didx, ...]         of extent [1, D, ...]     ->  [serial, didx, ...]

The all-gather of the rows becomes a broadcast of shard i in iteration i, and the reduce-scatter a
reduce to device i of the partials of its rows: the copy-engine backend lowers both as pushes
rotated by rank (passes/copy_engine.py, passes/copy_engine_shard_reduce.py), the whole block
pipelined shard by shard. Stream axes are a schedule, not part of a value: the results are the same.

A function with a stream axis of another extent, one with nothing after it to move onto, one
with an all-reduce (a partial sum whose result is not sharded), or one with an op that cannot
compute its result slice by slice along the moved axis (a matmul operand of rank >= 3 iterated on
its M axis: torch.matmul would read a batch axis as M, the check convert-fusion-to-hir makes) is
left as written.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException, VerifyException

from hir.dialects import fusion
from hir.dialects.parallel_encoding import DIDX, SERIAL, STREAM, ParallelAttr, layout_of
from hir.dialects.shape_rules import Slicing
from hir.passes.convert_fusion_to_hir import FunctionConverter, sliced_tensor_type
from hir.passes.sharding import is_partial_sum
from hir.passes.stream_axes import operand_slicings


def values_of(function: func.FuncOp) -> list[SSAValue]:
    """Every value of the function: its arguments, the results of its ops and their regions' arguments."""
    values: list[SSAValue] = list(function.body.block.args)
    for op in function.body.walk():
        values += op.results
        for region in op.regions:
            for block in region.blocks:
                values += block.args
    return values


def shard_typed(t: Attribute) -> Attribute | None:
    """`t` with its stream axis moved onto the axis after it; `t` without a stream axis; None if it cannot move."""
    if not isinstance(t, TensorType) or not isinstance(enc := t.encoding, ParallelAttr) or enc.stream_axis is None:
        return t
    axis, shape, kinds = enc.stream_axis, t.get_shape(), list(enc.axis_kinds)
    if shape[axis] != 1 or (enc.stream_chunks or 1) != 1 or axis + 1 >= len(shape):
        return None
    if kinds[axis + 1] == DIDX:
        kinds[axis] = SERIAL
    elif kinds[axis + 1] == SERIAL and shape[axis + 1] > 1:
        kinds[axis], kinds[axis + 1] = SERIAL, STREAM
    else:
        return None
    return TensorType(t.element_type, shape, ParallelAttr(kinds, None, enc.mesh_ids))


def can_pipeline_by_shard(function: func.FuncOp) -> bool:
    """
    Whether every stream axis of the function has extent 1 and can move (and there is one),
    every partial sum over the devices is a reduce-scatter (an all-reduce pipelined by shard
    would reduce blocks along an inner axis, which the collectives do not take), and every op
    whose result's stream axis moves computes its result slice by slice along the new axis.
    """
    for op in function.body.walk():
        if is_partial_sum(op) and (moved_to := shard_typed(op.results[0].type)) is not None:
            if isinstance(moved_to, TensorType) and layout_of(moved_to).stream_axis is not None:
                return False
    moved = False
    for value in values_of(function):
        new = shard_typed(value.type)
        if new is None:
            return False
        if new is not value.type and isinstance(op := value.owner, fusion.FusionOp) and not slices_along(op, new):
            return False
        moved |= new is not value.type
    return moved


def slices_along(op: fusion.FusionOp, result_type: Attribute) -> bool:
    """
    Whether `op` computes one slice of its result along `result_type`'s stream axis (if it has one)
    from its operands' slices, as convert-fusion-to-hir checks when it builds the loop's launch.
    """
    layout = layout_of(result_type)
    if layout.stream_axis is None:
        return True
    result_slicing = Slicing((layout.stream_axis,), layout.stream_chunks)
    try:
        slicings = operand_slicings(op, result_slicing)
        sliced = Block(arg_types=[sliced_tensor_type(o.type, s) for o, s in zip(op.operands, slicings)])
        FunctionConverter.clone_for_iteration(op, list(sliced.args), slicings, result_slicing, False)
    except (PassFailedException, VerifyException):
        return False
    return True


def pipeline_by_shard(function: func.FuncOp) -> None:
    """Moves every stream axis onto the axis after it, in place (`can_pipeline_by_shard` must hold)."""
    for value in values_of(function):
        new = shard_typed(value.type)
        assert new is not None
        if new is not value.type:
            Rewriter.replace_value_with_new_type(value, new)
    function.update_function_type()
