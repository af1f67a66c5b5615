"""
`fusion-decompose-resharding`: a computing op whose operands are sharded differently from its
result (e.g. `matmul(A[didx, ...], B) -> C[...]`, the all-gather + GEMM of tensor parallelism)
gets a resharding `fusion.set` on each such operand, so that the op itself computes locally and
every resharding is a pure communication (nvFuser's DecomposeReshardings, "insert before").

An op whose result is sharded along an axis that no operand axis maps to (a softmax, scan or flip
along it, a reshape that merges or splits it, a slice or concat of it, attention's sequence axis)
cannot compute a device's shard from the same shard of its operands: each result index reads the
whole axis. It computes the replicated result from replicated operands, and a `fusion.set` after
it keeps each device's shard (a scatter: no communication) ("insert after").

The new set's result keeps the operand's shape; its axes are `didx` where they feed the result's
`didx` axis (`serial` where that is a broadcast of extent 1: every device reads the one index),
`stream` where they feed the result's stream axis (so the communication runs chunk by chunk in
the same host loop as the op), `serial` otherwise.

Cost: linear in the module: one sweep of the walker (`apply_recursively=False`) visits each op
once, in time proportional to its operands and their rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from hir.dialects import fusion
from hir.dialects.parallel_encoding import DIDX, SERIAL, STREAM, ParallelAttr, is_uneven, layout_of
from hir.dialects.shape_rules import operand_axis_to_result_axis
from hir.dialects.syntax import array_values
from hir.passes.sharding import is_broadcast_into_didx, is_communication, is_partial_sum, resharded_operands


def local_operand_type(op: fusion.FusionOp, k: int) -> TensorType:
    """The layout operand k must have for `op` to compute locally."""
    operand = op.operands[k]
    assert isinstance(operand.type, TensorType)
    result = layout_of(op.results[0].type)
    kinds: list[str] = []
    chunks: list[int] = []
    for axis in range(len(operand.type.get_shape())):
        mapped = operand_axis_to_result_axis(op.axis_map(), k, axis)
        if mapped is not None and mapped == result.didx_axis:
            # A broadcast axis stays whole: sharded, its one index would be the first device's alone.
            kinds.append(SERIAL if is_broadcast_into_didx(op, k, axis) else DIDX)
        elif mapped is not None and mapped == result.stream_axis:
            kinds.append(STREAM)
            chunks.append(result.stream_chunks or 0)
            continue
        else:
            kinds.append(SERIAL)
        chunks.append(0)
    mesh = result.mesh or layout_of(operand.type).mesh
    encoding = ParallelAttr(kinds, chunks, mesh) if (mesh or set(kinds) != {SERIAL}) else None
    if encoding is None:
        return TensorType(operand.type.element_type, operand.type.get_shape())
    return TensorType(operand.type.element_type, operand.type.get_shape(), encoding)


class ReshardOperandsFirst(RewritePattern):
    """
    op(x_sharded, ...) -> op(fusion.set(x_sharded) -> x_local, ...)

    A value that several ops of one block need resharded the same way is resharded once, by the
    set inserted for the first of them (it comes before the others): one communication, not one
    per consumer.
    """

    def __init__(self) -> None:
        self.inserted: dict[tuple[SSAValue, TensorType, Block], fusion.SetOp] = {}

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fusion.FusionOp, rewriter: PatternRewriter) -> None:
        if is_communication(op):
            return
        op = _computed_whole(op, rewriter)
        flagged = resharded_operands(op)
        if not flagged:
            return
        operands: list[SSAValue] = list(op.operands)
        block = op.parent_block()
        assert block is not None
        for k in flagged:
            target = local_operand_type(op, k)
            key = (operands[k], target, block)
            if (earlier := self.inserted.get(key)) is not None:
                operands[k] = earlier.result
                continue
            reshard = fusion.SetOp(operands[k], target)
            reshard.location = op.location  # its diagnostics name the op it was inserted for
            if operands[k].name_hint:
                reshard.result.name_hint = f"{operands[k].name_hint}_gathered"
            rewriter.insert(reshard, InsertPoint.before(op))  # op may be a copy (_computed_whole)
            self.inserted[key] = reshard
            operands[k] = reshard.result
        op.operands = operands
        rewriter.notify_op_modified(op)


def _computed_whole(op: fusion.FusionOp, rewriter: PatternRewriter) -> fusion.FusionOp:
    """
    `op` itself, or, where its result's didx axis comes from no operand axis, a copy of it that
    computes the replicated result, followed by the set that scatters it to `op`'s layout.
    A broadcast's new axis and a generator's (no operands) hold the same values at every index,
    or values of their own: each device computes its shard, as they are.
    """
    result = op.results[0]
    t = result.type
    assert isinstance(t, TensorType)
    layout = layout_of(t)
    didx = layout.didx_axis
    if didx is None or not op.operands or isinstance(op, fusion.ExpandOp) or op.axis_map()[didx]:
        return op
    assert isinstance(t.encoding, ParallelAttr)
    kinds = [SERIAL if k == DIDX else k for k in layout.kinds]
    chunks = [n.data for n in t.encoding.chunks.data]
    whole = TensorType(t.element_type, t.get_shape(), ParallelAttr(kinds, chunks, layout.mesh))
    computed = type(op).create(
        operands=list(op.operands),
        result_types=[whole],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    computed.location = op.location
    scatter = fusion.SetOp(computed.results[0], t)
    scatter.location = op.location
    if result.name_hint:
        computed.results[0].name_hint = f"{result.name_hint}_whole"
        scatter.result.name_hint = result.name_hint
    rewriter.replace_op(op, [computed, scatter], [scatter.result])
    return computed


class SplitMeshChangeOfUnevenAxis(RewritePattern):
    """
    set(x: didx on M) -> didx on M' of another size, any mesh change of a didx axis whose extent
    is not its mesh's size that the lowering does not take in one set (nvFuser's pipelines between
    meshes of different sizes), or a mesh change that also moves the didx axis, becomes the chain
    the lowering takes: the all-gather on M, the
    replicated value moved to M' (a broadcast, or nothing on a sub-mesh), the scatter on M'.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fusion.SetOp, rewriter: PatternRewriter) -> None:
        src_type, dst_type = op.operands[0].type, op.results[0].type
        if not isinstance(src_type, TensorType) or not isinstance(dst_type, TensorType):
            return
        src, dst = layout_of(src_type), layout_of(dst_type)
        if not src.mesh or not dst.mesh or list(src.mesh) == list(dst.mesh) or STREAM in (*src.kinds, *dst.kinds):
            return
        # Two changes in one set (the mesh and the sharded axis: nvFuser's one change per
        # communication) are the same chain.
        axis_moves = None not in (src.didx_axis, dst.didx_axis) and src.didx_axis != dst.didx_axis
        if not (is_uneven(src_type) or is_uneven(dst_type) or axis_moves):
            return
        if src.didx_axis is None and dst.didx_axis is None:
            return
        same_size_move = src.didx_axis == dst.didx_axis and len(src.mesh) == len(dst.mesh)
        inside = set(dst.mesh) <= set(src.mesh) and None in (src.didx_axis, dst.didx_axis)
        if same_size_move or inside:
            return  # lowered as it is (send / receive pairs, a gather to or scatter on a sub-mesh)
        shape = src_type.get_shape()
        if DYNAMIC_INDEX in shape:
            return  # the lowering reports a resharding of a dynamic extent
        value = op.operands[0]
        steps: list[tuple[TensorType, str]] = []
        if src.didx_axis is not None:
            whole = ParallelAttr([SERIAL] * len(shape), None, src.mesh)
            steps.append((TensorType(src_type.element_type, shape, whole), "gathered"))
        moved = ParallelAttr([SERIAL] * len(shape), None, dst.mesh)
        steps.append((TensorType(src_type.element_type, shape, moved), "moved"))
        if dst.didx_axis is not None:
            steps.append((dst_type, "scattered"))
        for k, (t, name) in enumerate(steps):
            step = fusion.SetOp(value, t)
            step.location = op.location  # a refusal of a step names the user's set
            if k == len(steps) - 1:
                step.result.name_hint = op.results[0].name_hint
            elif op.operands[0].name_hint:
                step.result.name_hint = f"{op.operands[0].name_hint}_{name}"
            rewriter.insert_op(step, InsertPoint.before(op))
            value = step.result
        rewriter.replace_matched_op([], [value])


class SplitPartialSumOntoOtherMesh(RewritePattern):
    """
    sum(x: didx on M) over the didx axis -> didx on M' with other devices (a reduce-scatter onto a
    sub-mesh or another mesh) becomes the sum into a value replicated on M (an all-reduce), then
    the set that takes each device of M' its shard (a local slice, after a broadcast when M' has
    devices M lacks).
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fusion.SumOp, rewriter: PatternRewriter) -> None:
        if not is_partial_sum(op):
            return
        src_type, dst_type = op.x.type, op.results[0].type
        if not isinstance(src_type, TensorType) or not isinstance(dst_type, TensorType):
            return
        src, dst = layout_of(src_type), layout_of(dst_type)
        if dst.didx_axis is None or not src.mesh or not dst.mesh or set(src.mesh) == set(dst.mesh):
            return
        if DYNAMIC_INDEX in dst_type.get_shape():
            return  # the lowering reports it, at the op
        shape = dst_type.get_shape()
        assert isinstance(dst_type.encoding, ParallelAttr)
        kinds = [SERIAL if k == DIDX else k for k in dst.kinds]  # a stream axis stays: per chunk
        chunks = [n.data for n in dst_type.encoding.chunks.data]
        whole = TensorType(dst_type.element_type, shape, ParallelAttr(kinds, chunks, src.mesh))
        total = fusion.SumOp(op.x, list(array_values(op.dims)), whole)
        total.location = op.location
        if op.results[0].name_hint:
            total.results[0].name_hint = f"{op.results[0].name_hint}_reduced"
        scatter = fusion.SetOp(total.results[0], dst_type)
        scatter.location = op.location
        scatter.result.name_hint = op.results[0].name_hint
        rewriter.replace_matched_op([total, scatter], [scatter.result])


@dataclass(frozen=True)
class DecomposeReshardingPass(ModulePass):
    """Makes every resharding a pure communication (a set, or a sum over the didx axis)."""

    name = "fusion-decompose-resharding"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ReshardOperandsFirst()], dce_enabled=False), apply_recursively=False
        ).rewrite_module(op)
        PatternRewriteWalker(SplitPartialSumOntoOtherMesh(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(SplitMeshChangeOfUnevenAxis(), apply_recursively=False).rewrite_module(op)
