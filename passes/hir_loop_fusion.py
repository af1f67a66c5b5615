"""
`hir-loop-fusion`: merges adjacent `hir.stream_for` loops over the same iteration space when it is
legal.

convert-fusion-to-hir gives every stream-parallel op its own `hir.stream_for`. Two consecutive
loops L1, L2 with the same bounds, the same number of streams and the same caller stream fuse
into one, which runs L2's work after L1's in iteration i, on the same worker stream: iteration i of
L2 then starts right after iteration i of L1 instead of after all of L1's iterations. Legal when
every buffer one loop writes and the other accesses is, in both loops, only accessed through the
same view (`hir.alias_select`/`hir.alias_chunk` of the same axis and chunk count) at the induction
variable: then iteration i of L2 only touches what iteration i of L1 touched, which precedes it on
the same stream. The ops between the loops must be hoistable above L1 (allocations, constants,
index arithmetic). The fork and join of the fused loop are those of `hir.stream_for`: all forks
before any iteration, so fusion never moves a fork sync into the pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import MemoryEffectKind, get_effects, is_side_effect_free

from hir.dialects import hir


def work(loop: hir.StreamForOp) -> list[Operation]:
    """The loop body without its `hir.yield`."""
    return [op for op in loop.body.block.ops if not isinstance(op, hir.YieldOp)]


def equivalent(a: SSAValue, b: SSAValue) -> bool:
    """Whether two index values are equal at run time: the same value, equal constants, or num_streams."""
    if a is b:
        return True
    x, y = a.owner, b.owner
    if isinstance(x, arith.ConstantOp) and isinstance(y, arith.ConstantOp):
        return x.value == y.value
    return isinstance(x, hir.NumStreamsOp) and isinstance(y, hir.NumStreamsOp)


def same_iterations(a: hir.StreamForOp, b: hir.StreamForOp) -> bool:
    """Same indices on the same worker streams, forked from and joined into the same stream."""
    pairs = ((a.lb, b.lb), (a.ub, b.ub), (a.step, b.step), (a.num_streams, b.num_streams))
    return all(equivalent(x, y) for x, y in pairs) and a.main is b.main and a.peel_first == b.peel_first


# -- ops between two loops ------------------------------------------------------------------------


def is_hoistable(op: Operation, first: hir.StreamForOp) -> bool:
    """
    Whether `op`, found between `first` and the next stream loop, may move above `first`.
    Its operands are then defined above too: SSA puts them above `first` or among earlier
    in-between ops, which move first.
    """
    if isinstance(op, hir.AllocateOp | hir.NumStreamsOp | arith.ConstantOp):
        return True
    if isinstance(op, hir.GetCurrentStreamOp):
        # After `first` the current stream is the caller's again; before it, it must be too.
        return current_stream_is(first.main, first)
    return is_arith(op)


def is_arith(op: Operation) -> bool:
    """
    arith ops only compute values. (xDSL gives divisions no effects trait, as dividing by zero is
    undefined, but they touch no buffer and no stream either.)
    """
    return op.dialect_name() == "arith" and not op.regions


def current_stream_is(stream: SSAValue, before: Operation) -> bool:
    """
    Whether the current stream right before `before` is `stream`: `stream` was read in the same
    block and nothing between changes the current stream for good. A `hir.stream_for` that
    returns to `stream` leaves it current (or, running no iteration, untouched).
    """
    reader = stream.owner
    if not isinstance(reader, hir.GetCurrentStreamOp) or reader.parent_block() is not before.parent_block():
        return False
    op = before.prev_op
    while op is not reader:
        if op is None:
            return False  # `reader` comes after `before`
        if may_set_current_stream(op) and not (isinstance(op, hir.StreamForOp) and op.main is stream):
            return False
        op = op.prev_op
    return True


def may_set_current_stream(op: Operation) -> bool:
    effects = get_effects(op)
    if effects is None:
        return True
    return any(e.kind == MemoryEffectKind.WRITE and isinstance(e.resource, hir.CurrentStream) for e in effects)


def next_loop(first: hir.StreamForOp) -> tuple[list[Operation], hir.StreamForOp] | None:
    """The hoistable ops after `first` and the stream loop they lead to, if any."""
    between: list[Operation] = []
    op = first.next_op
    while op is not None:
        if isinstance(op, hir.StreamForOp):
            return between, op
        if not is_hoistable(op, first):
            return None
        between.append(op)
        op = op.next_op
    return None


# -- dependence analysis --------------------------------------------------------------------------


@dataclass(frozen=True)
class Slice:
    """The part of a buffer iteration i touches: index i of `axis`, or chunk i of `chunks`."""

    view: str
    axis: int
    chunks: int | None


@dataclass(frozen=True)
class Access:
    buffer: SSAValue
    """The root buffer: a function argument or a `hir.allocate`."""
    part: Slice | None
    """None: the whole buffer (or a part that depends on something else than the iteration)."""
    writes: bool


def root_buffer(value: SSAValue) -> SSAValue | None:
    """The buffer `value` is a view of; None when it may alias buffers we cannot tell apart."""
    while isinstance(view := value.owner, hir.AliasSelectOp | hir.AliasChunkOp):
        value = view.buffer
    if isinstance(value.owner, hir.AllocateOp):
        return value
    if isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), func.FuncOp):
        return value  # function arguments do not alias each other (the runtime checks outputs)
    return None


def iteration_slice(value: SSAValue, loop: hir.StreamForOp) -> Slice | None:
    """The slice when `value` is a view of a root buffer at `loop`'s induction variable."""
    view = value.owner
    if not isinstance(view, hir.AliasSelectOp | hir.AliasChunkOp):
        return None
    if view.parent_op() is not loop or view.index is not loop.induction_var:
        return None
    if root_buffer(view.buffer) is not view.buffer:
        return None  # a view of a view: which part of the root it is depends on the outer view
    chunks = view.chunks_value if isinstance(view, hir.AliasChunkOp) else None
    return Slice(view.name, view.axis_value, chunks)


def access_of(value: SSAValue, loop: hir.StreamForOp, writes: bool) -> Access | None:
    if (root := root_buffer(value)) is None:
        return None
    return Access(root, iteration_slice(value, loop), writes)


def buffer_accesses(op: hir.LaunchOp | hir.CommunicationOp, loop: hir.StreamForOp) -> list[Access] | None:
    """What `op` reads and writes, from its declared effects; None if some buffer is unknown."""
    accesses: list[Access] = []
    for effect in op.effects():
        value = effect.value
        if not isinstance(value, SSAValue) or not isinstance(value.type, MemRefType):
            continue
        if (access := access_of(value, loop, effect.kind == MemoryEffectKind.WRITE)) is None:
            return None
        accesses.append(access)
    return accesses


# Work ops that touch no buffer and do not depend on which stream runs before them.
_NEUTRAL_WORK = (hir.AliasSelectOp, hir.AliasChunkOp, hir.AllocateOp, hir.WaitOp)


def loop_accesses(loop: hir.StreamForOp) -> list[Access] | None:
    """Every buffer access of the loop's work; None if some op is not understood."""
    accesses: list[Access] = []
    for op in work(loop):
        if isinstance(op, hir.LaunchOp | hir.CommunicationOp):
            if (found := buffer_accesses(op, loop)) is None:
                return None
            accesses += found
        elif not (isinstance(op, _NEUTRAL_WORK) or is_arith(op) or is_side_effect_free(op)):
            return None  # stream switches, syncs, frees, calls, ...: keep the loops apart
    return accesses


def independent(first: Sequence[Access], second: Sequence[Access]) -> bool:
    """
    Whether iteration i of the second loop only depends on iteration i of the first: every buffer
    one writes and the other accesses is only ever accessed through one same-iteration slice.
    """
    shared = (written(first) & accessed(second)) | (written(second) & accessed(first))
    for buffer in shared:
        parts = {a.part for a in (*first, *second) if a.buffer is buffer}
        if None in parts or len(parts) != 1:
            return False
    return True


def written(accesses: Iterable[Access]) -> set[SSAValue]:
    return {a.buffer for a in accesses if a.writes}


def accessed(accesses: Iterable[Access]) -> set[SSAValue]:
    return {a.buffer for a in accesses}


# -- the rewrite ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FusionPlan:
    first: hir.StreamForOp
    hoisted: list[Operation]
    second: hir.StreamForOp


def plan_fusion(first: hir.StreamForOp) -> FusionPlan | None:
    """How to fuse `first` with the stream loop after it, or None when that is not legal."""
    if (found := next_loop(first)) is None:
        return None
    hoisted, second = found
    if not same_iterations(first, second):
        return None
    first_accesses, second_accesses = loop_accesses(first), loop_accesses(second)
    if first_accesses is None or second_accesses is None:
        return None
    if not independent(first_accesses, second_accesses):
        return None
    return FusionPlan(first, hoisted, second)


def move_before(ops: Iterable[Operation], anchor: Operation, rewriter: PatternRewriter) -> None:
    for op in ops:
        op.detach()
        rewriter.insert(op, InsertPoint.before(anchor))


def fuse(plan: FusionPlan, rewriter: PatternRewriter) -> None:
    """Hoists the in-between ops and runs the second loop's work after the first's, in the first loop."""
    first, second = plan.first, plan.second
    move_before(plan.hoisted, first, rewriter)
    terminator = first.body.block.last_op
    assert terminator is not None
    move_before(work(second), terminator, rewriter)
    rewriter.replace_all_uses_with(second.induction_var, first.induction_var)
    rewriter.replace_all_uses_with(second.worker, first.worker)
    rewriter.erase(second)


class FuseStreamLoops(RewritePattern):
    """Fuses a `hir.stream_for` with the following ones, as long as that is legal."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hir.StreamForOp, rewriter: PatternRewriter) -> None:
        while (plan := plan_fusion(op)) is not None:
            fuse(plan, rewriter)


class HirLoopFusionPass(ModulePass):
    """
    Merges adjacent `hir.stream_for` loops over the same iteration space when dependence analysis
    on the buffers proves that iteration i of the second only needs iteration i of the first.
    """

    name = "hir-loop-fusion"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseStreamLoops()).rewrite_module(op)
