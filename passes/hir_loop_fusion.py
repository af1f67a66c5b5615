"""
`hir-loop-fusion`: merges adjacent stream loops over the same iteration space when it is legal.

convert-fusion-to-hir gives every stream-parallel op its own *pair* of loops (DESIGN.md section 4):

    hir.for %i = %lb to %ub step %st {            // fork: every worker stream waits for %main
      %k = arith.remui %i, %n ; %s = hir.stream %k ; hir.set_current_stream %s ; hir.synchronize %main
    }
    hir.for %j = %lb to %ub step %st {            // main: prologue, work, epilogue
      %k2 = arith.remui %j, %n ; %s2 = hir.stream %k2 ; hir.set_current_stream %s2
      <work: views, launches, communications>
      hir.set_current_stream %main ; hir.synchronize %s2
    }

Two consecutive pairs P1, P2 over the same bounds fuse into one pair: P1's fork, and P1's main loop
running P2's work after its own on the same stream, before the epilogue. Legal when every buffer
one main loop writes and the other accesses is, in both loops, only accessed through the same
view (`hir.alias_select`/`hir.alias_chunk` of the same axis and chunk count) at the induction
variable: then iteration i of P2 only touches what iteration i of P1 touched, which precedes it on
the same stream. The ops between the pairs must be hoistable above P1 (allocations, constants,
index arithmetic). The fork loops merge with their main loops (P2's fork is dropped), so the fork
syncs stay out of the main loop. Anything that does not have this shape is left alone.
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

# -- recognizing (fork, main) loop pairs ----------------------------------------------------------


@dataclass(frozen=True)
class StreamPrologue:
    """`%k = arith.remui %iv, %n ; %s = hir.stream %k ; hir.set_current_stream %s`."""

    remui: arith.RemUIOp
    stream: hir.StreamOp
    set_stream: hir.SetCurrentStreamOp

    @property
    def num_streams(self) -> SSAValue:
        return self.remui.rhs


@dataclass(frozen=True)
class StreamLoopPair:
    """A fork loop and the main loop right after it, as stream lowering emits them."""

    fork: hir.ForOp
    main: hir.ForOp
    prologue: StreamPrologue
    """The main loop's prologue."""
    epilogue: tuple[hir.SetCurrentStreamOp, hir.SynchronizeOp]
    """The main loop's epilogue: back to the caller's stream, which waits for the worker."""

    @property
    def caller_stream(self) -> SSAValue:
        return self.epilogue[0].stream

    @property
    def work(self) -> list[Operation]:
        """The main loop's ops between prologue and epilogue."""
        ops = body_ops(self.main)
        return ops[3:-2]


def body_ops(loop: hir.ForOp) -> list[Operation]:
    """The loop body without its `hir.yield`."""
    return [op for op in loop.body.block.ops if not isinstance(op, hir.YieldOp)]


def match_prologue(ops: Sequence[Operation], iv: SSAValue) -> StreamPrologue | None:
    if len(ops) < 3:
        return None
    remui, stream, set_stream = ops[:3]
    if not (isinstance(remui, arith.RemUIOp) and remui.lhs is iv):
        return None
    if not (isinstance(stream, hir.StreamOp) and stream.index is remui.result):
        return None
    if not (isinstance(set_stream, hir.SetCurrentStreamOp) and set_stream.stream is stream.result):
        return None
    return StreamPrologue(remui, stream, set_stream)


def match_fork(loop: hir.ForOp) -> tuple[StreamPrologue, SSAValue] | None:
    """The fork loop's prologue and the stream its workers wait for."""
    ops = body_ops(loop)
    prologue = match_prologue(ops, loop.induction_var)
    if prologue is None or len(ops) != 4:
        return None
    sync = ops[3]
    if not isinstance(sync, hir.SynchronizeOp) or sync.stream is prologue.stream.result:
        return None
    return prologue, sync.stream


def match_main(
    loop: hir.ForOp, caller: SSAValue
) -> tuple[StreamPrologue, hir.SetCurrentStreamOp, hir.SynchronizeOp] | None:
    ops = body_ops(loop)
    prologue = match_prologue(ops, loop.induction_var)
    if prologue is None or len(ops) < 5:
        return None
    back, sync = ops[-2:]
    if not (isinstance(back, hir.SetCurrentStreamOp) and back.stream is caller):
        return None
    if not (isinstance(sync, hir.SynchronizeOp) and sync.stream is prologue.stream.result):
        return None
    return prologue, back, sync


def match_pair(fork: Operation) -> StreamLoopPair | None:
    """The pair whose fork loop is `fork`, or None if `fork` does not start one."""
    if not isinstance(fork, hir.ForOp) or not isinstance(main := fork.next_op, hir.ForOp):
        return None
    if (forked := match_fork(fork)) is None:
        return None
    fork_prologue, caller = forked
    if (matched := match_main(main, caller)) is None:
        return None
    prologue, back, sync = matched
    # Both loops must map iterations to the same streams, or the fork would sync the wrong ones.
    if not (same_bounds(fork, main) and equivalent(fork_prologue.num_streams, prologue.num_streams)):
        return None
    return StreamLoopPair(fork, main, prologue, (back, sync))


def match_pair_ending_at(main: Operation) -> StreamLoopPair | None:
    prev = main.prev_op
    pair = match_pair(prev) if prev is not None else None
    return pair if pair is not None and pair.main is main else None


def equivalent(a: SSAValue, b: SSAValue) -> bool:
    """Whether two index values are equal at run time: the same value, equal constants, or num_streams."""
    if a is b:
        return True
    x, y = a.owner, b.owner
    if isinstance(x, arith.ConstantOp) and isinstance(y, arith.ConstantOp):
        return x.value == y.value
    return isinstance(x, hir.NumStreamsOp) and isinstance(y, hir.NumStreamsOp)


def same_bounds(a: hir.ForOp, b: hir.ForOp) -> bool:
    return all(equivalent(x, y) for x, y in ((a.lb, b.lb), (a.ub, b.ub), (a.step, b.step)))


# -- ops between two pairs ------------------------------------------------------------------------


def is_hoistable(op: Operation, first: StreamLoopPair) -> bool:
    """
    Whether `op`, found between `first` and the next pair, may move above `first`'s fork loop.
    Its operands are then defined above too: SSA puts them above `first` or among earlier
    in-between ops, which move first.
    """
    if isinstance(op, hir.AllocateOp | hir.NumStreamsOp | arith.ConstantOp):
        return True
    if isinstance(op, hir.GetCurrentStreamOp):
        # After `first` the current stream is the caller's again; before it, it must be too.
        return current_stream_is(first.caller_stream, first.fork)
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
    block and nothing between changes the current stream for good. A (fork, main) pair that
    returns to `stream` leaves it current (or, running no iteration, untouched).
    """
    reader = stream.owner
    if not isinstance(reader, hir.GetCurrentStreamOp) or reader.parent_block() is not before.parent_block():
        return False
    op = before.prev_op
    while op is not reader:
        if op is None:
            return False  # `reader` comes after `before`
        if (pair := match_pair_ending_at(op)) is not None and pair.caller_stream is stream:
            op = pair.fork.prev_op
            continue
        if may_set_current_stream(op):
            return False
        op = op.prev_op
    return True


def may_set_current_stream(op: Operation) -> bool:
    effects = get_effects(op)
    if effects is None:
        return True
    return any(e.kind == MemoryEffectKind.WRITE and isinstance(e.resource, hir.CurrentStream) for e in effects)


def next_pair(first: StreamLoopPair) -> tuple[list[Operation], StreamLoopPair] | None:
    """The hoistable ops after `first` and the pair they lead to, if any."""
    between: list[Operation] = []
    op = first.main.next_op
    while op is not None:
        if (pair := match_pair(op)) is not None:
            return between, pair
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


def iteration_slice(value: SSAValue, loop: hir.ForOp) -> Slice | None:
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


def access_of(value: SSAValue, loop: hir.ForOp, writes: bool) -> Access | None:
    if (root := root_buffer(value)) is None:
        return None
    return Access(root, iteration_slice(value, loop), writes)


def buffer_accesses(op: hir.LaunchOp | hir.CommunicationOp, loop: hir.ForOp) -> list[Access] | None:
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


def loop_accesses(pair: StreamLoopPair) -> list[Access] | None:
    """Every buffer access of the main loop's work; None if some op is not understood."""
    accesses: list[Access] = []
    for op in pair.work:
        if isinstance(op, hir.LaunchOp | hir.CommunicationOp):
            if (found := buffer_accesses(op, pair.main)) is None:
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
    first: StreamLoopPair
    hoisted: list[Operation]
    second: StreamLoopPair


def plan_fusion(first: StreamLoopPair) -> FusionPlan | None:
    """How to fuse `first` with the pair after it, or None when that is not legal."""
    if (found := next_pair(first)) is None:
        return None
    hoisted, second = found
    if not same_bounds(first.main, second.main):
        return None
    if first.caller_stream is not second.caller_stream:
        return None
    if not equivalent(first.prologue.num_streams, second.prologue.num_streams):
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
    """Hoists the in-between ops, drops the second fork, and runs the second work in the first main loop."""
    first, second = plan.first, plan.second
    move_before(plan.hoisted, first.fork, rewriter)
    rewriter.erase(second.fork)
    move_before(second.work, first.epilogue[0], rewriter)
    rewriter.replace_all_uses_with(second.main.induction_var, first.main.induction_var)
    rewriter.replace_all_uses_with(second.prologue.remui.result, first.prologue.remui.result)
    rewriter.replace_all_uses_with(second.prologue.stream.result, first.prologue.stream.result)
    rewriter.erase(second.main)  # only its prologue and epilogue are left


class FuseStreamLoopPairs(RewritePattern):
    """Fuses the pair starting at a fork loop with the following pairs, as long as that is legal."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hir.ForOp, rewriter: PatternRewriter) -> None:
        if (first := match_pair(op)) is None:
            return
        while (plan := plan_fusion(first)) is not None:
            fuse(plan, rewriter)
            # The fused main loop has the same prologue and epilogue ops: the pair is still valid.


class HirLoopFusionPass(ModulePass):
    """
    Merges adjacent (fork, main) stream loop pairs over the same iteration space when dependence
    analysis on the buffers proves that iteration i of the second only needs iteration i of the first.
    """

    name = "hir-loop-fusion"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseStreamLoopPairs()).rewrite_module(op)
