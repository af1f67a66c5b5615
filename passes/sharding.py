"""
Which operands of a fusion op are sharded differently from what the op can compute locally.

An op computes locally (every device works on its own shard, no communication) when, through
the op's axis map, each operand's `didx` axis becomes the result's `didx` axis, every operand axis
feeding the result's `didx` axis is itself sharded (or a broadcast of extent 1, which must then
be replicated: sharded, its one index would be the first device's alone), and the meshes agree.
Otherwise the op *reshards*: a `fusion.set` or a `fusion.sum` over the `didx` axis is then a
communication (all-gather, all-reduce, reduce-scatter, ...); any other op first gets its
operands resharded by `fusion-decompose-resharding`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from hir.dialects import fusion
from hir.dialects.parallel_encoding import Layout, layout_of
from hir.dialects.shape_rules import operand_axis_to_result_axis
from hir.dialects.syntax import array_values


def meshes_differ(a: Layout, b: Layout) -> bool:
    """A tensor without a mesh lives wherever the program runs: it agrees with any mesh."""
    return bool(a.mesh) and bool(b.mesh) and a.mesh != b.mesh


def is_broadcast_into_didx(op: fusion.FusionOp, k: int, axis: int) -> bool:
    """
    Whether operand k's `axis`, which feeds the result's didx axis, is broadcast along it: extent
    1 against a result axis of another extent, so that every result index reads its one index.
    Such an axis is replicated, not sharded, wherever the op computes locally.
    """
    operand, result = op.operands[k].type, op.results[0].type
    assert isinstance(operand, TensorType)
    assert isinstance(result, TensorType)
    didx = layout_of(result).didx_axis
    assert didx is not None
    return operand.get_shape()[axis] == 1 and result.get_shape()[didx] != 1


def resharded_operands(op: fusion.FusionOp) -> list[int]:
    """Indices of the operands whose sharding the op cannot consume locally."""
    result = layout_of(op.results[0].type)
    layouts = [layout_of(operand.type) for operand in op.operands]
    if result.didx_axis is None and all(
        layout.didx_axis is None and not meshes_differ(layout, result) for layout in layouts
    ):
        return []  # nothing sharded, one mesh: every program on one device (most of them) ends here
    axis_map = op.axis_map()
    flagged: set[int] = set()
    for k, layout in enumerate(layouts):
        if meshes_differ(layout, result):
            flagged.add(k)
        if layout.didx_axis is not None:
            # Also when the sharded axis maps to no result axis (a max over it, a contraction
            # over a sharded K) and the result is replicated: each device has only its shard of
            # what the op reduces, so the operand is gathered first. Only a sum over the didx
            # axis reduces the shards themselves (a partial sum: `is_communication`).
            mapped = operand_axis_to_result_axis(axis_map, k, layout.didx_axis)
            if mapped is None or mapped != result.didx_axis:
                flagged.add(k)
    if result.didx_axis is not None:
        result_type = op.results[0].type
        assert isinstance(result_type, TensorType)
        # An extent-1 operand axis is broadcast to every device's shard, unless the result's
        # didx axis has that one index too: then only the first device holds it (one index over
        # several devices), and the others hold none.
        one_index = result_type.get_shape()[result.didx_axis] == 1 and len(result.mesh) > 1
        for k, axis in axis_map[result.didx_axis]:
            operand = op.operands[k]
            assert isinstance(operand.type, TensorType)
            layout = layout_of(operand.type)
            if layout.didx_axis == axis:
                # Sharded, that broadcast index is the first device's alone (chunks of ceil(1/D)),
                # but every device holding result indices reads it: the operand is gathered.
                if is_broadcast_into_didx(op, k, axis) and len(layout.mesh) > 1:
                    flagged.add(k)
            elif operand.type.get_shape()[axis] != 1 or one_index:
                flagged.add(k)
    return sorted(flagged)


def is_resharding(op: Operation) -> bool:
    return isinstance(op, fusion.FusionOp) and bool(resharded_operands(op))


def is_partial_sum(op: fusion.FusionOp) -> bool:
    """A `fusion.sum` over its operand's didx axis: each device holds a partial sum."""
    if not isinstance(op, fusion.SumOp):
        return False
    didx = layout_of(op.x.type).didx_axis
    return didx is not None and didx in array_values(op.dims)


def is_communication(op: Operation) -> bool:
    """A resharding that is itself a communication (no compute besides a local partial reduction)."""
    if isinstance(op, fusion.SetOp):
        return is_resharding(op)
    return isinstance(op, fusion.SumOp) and is_partial_sum(op)
