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

Cost: linear in the module. The walker visits every op once: one sweep is a fixpoint, so it
does not sweep again. A loop that could not absorb its successor when visited cannot later either:
fusions further down only grow that successor's accesses, and the ops they hoist in between are
hoistable ones. A loop `first` that absorbs its successors keeps a summary of its buffer accesses
(`LoopAccesses`: per root buffer, the slices accessed and whether it is written), so each merge
costs the size of the absorbed loop, not of the grown one; the ops between two loops are looked at
once per attempt; and whether the caller stream is current before each loop comes from one forward
sweep of every block (`loops_forked_from_current_stream`), not a walk back per question.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass, field

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


def is_hoistable(op: Operation, first: hir.StreamForOp, forked_from_current: Set[hir.StreamForOp]) -> bool:
    """
    Whether `op`, found between `first` and the next stream loop, may move above `first`.
    Its operands are then defined above too: SSA puts them above `first` or among earlier
    in-between ops, which move first. `forked_from_current`: the loops whose caller stream is
    current right before them (`loops_forked_from_current_stream`).
    """
    if isinstance(op, hir.AllocateOp | hir.NumStreamsOp | arith.ConstantOp):
        return True
    if isinstance(op, hir.GetCurrentStreamOp):
        # After `first` the current stream is the caller's again; before it, it must be too.
        return first in forked_from_current
    return is_arith(op)


def is_arith(op: Operation) -> bool:
    """
    arith ops only compute values. (xDSL gives divisions no effects trait, as dividing by zero is
    undefined, but they touch no buffer and no stream either.)
    """
    return op.dialect_name() == "arith" and not op.regions


def loops_forked_from_current_stream(module: ModuleOp) -> set[hir.StreamForOp]:
    """
    The stream loops whose caller stream is the current stream right before them: it was read
    by a `hir.get_current_stream` earlier in the same block and nothing between changes the
    current stream for good (a `hir.stream_for` that returns to it leaves it current, or, running
    no iteration, untouched). One forward sweep per block, tracking the values known to be the
    current stream. Fusion keeps the answers true: it moves only ops that set no stream above a
    loop, and erases only loops that return to the stream their predecessor returns to.
    """
    found: set[hir.StreamForOp] = set()
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                if not any(isinstance(inner, hir.StreamForOp) for inner in block.ops):
                    continue  # launch bodies and most loop bodies: nothing to find, skip the effects
                current: set[SSAValue] = set()
                for inner in block.ops:
                    if isinstance(inner, hir.StreamForOp):
                        forked_from_current = inner.main in current
                        if forked_from_current:
                            found.add(inner)
                        current = {inner.main} if forked_from_current else set()
                    elif may_set_current_stream(inner):
                        current = set()
                    elif isinstance(inner, hir.GetCurrentStreamOp):
                        current.add(inner.result)
    return found


def may_set_current_stream(op: Operation) -> bool:
    effects = get_effects(op)
    if effects is None:
        return True
    return any(e.kind == MemoryEffectKind.WRITE and isinstance(e.resource, hir.CurrentStream) for e in effects)


def next_loop(
    first: hir.StreamForOp, forked_from_current: Set[hir.StreamForOp]
) -> tuple[list[Operation], hir.StreamForOp] | None:
    """The hoistable ops after `first` and the stream loop they lead to, if any."""
    between: list[Operation] = []
    op = first.next_op
    while op is not None:
        if isinstance(op, hir.StreamForOp):
            return between, op
        if not is_hoistable(op, first, forked_from_current):
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
    if isinstance(view, hir.AliasChunkOp) and not is_one_index_chunk(view):
        return Slice(view.name, view.axis_value, view.chunks_value)
    return Slice(hir.AliasSelectOp.name, view.axis_value, None)


def is_one_index_chunk(view: hir.AliasChunkOp) -> bool:
    """
    Whether chunk i is index i: as many chunks as the axis has indices (a producer written index by
    index and a consumer that reads it by chunks after a merging reshape touch the same memory).
    """
    base = view.buffer.type
    assert isinstance(base, MemRefType)
    return base.get_shape()[view.axis_value] == view.chunks_value


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


@dataclass
class LoopAccesses:
    """Every buffer access of a loop's work, per root buffer: the slices accessed, and whether written."""

    parts: dict[SSAValue, set[Slice | None]] = field(default_factory=dict)
    written: set[SSAValue] = field(default_factory=set)

    @staticmethod
    def of(loop: hir.StreamForOp) -> LoopAccesses | None:
        """The accesses of the loop's work; None if some op is not understood."""
        accesses = LoopAccesses()
        for op in work(loop):
            if isinstance(op, hir.LaunchOp | hir.CommunicationOp):
                if (found := buffer_accesses(op, loop)) is None:
                    return None
                for access in found:
                    accesses.parts.setdefault(access.buffer, set()).add(access.part)
                    if access.writes:
                        accesses.written.add(access.buffer)
            elif not (isinstance(op, _NEUTRAL_WORK) or is_arith(op) or is_side_effect_free(op)):
                return None  # stream switches, syncs, frees, calls, ...: keep the loops apart
        return accesses

    def independent_of(self, later: LoopAccesses) -> bool:
        """
        Whether iteration i of the `later` loop only depends on iteration i of this one: every
        buffer one writes and the other accesses is only ever accessed through one same-iteration
        slice. Costs the size of `later`.
        """
        for buffer, later_parts in later.parts.items():
            parts = self.parts.get(buffer)
            if parts is None or (buffer not in self.written and buffer not in later.written):
                continue  # not shared, or only read by both
            if None in parts or len(parts) != 1 or later_parts != parts:
                return False  # the whole buffer, or two different slices of it
        return True

    def absorb(self, later: LoopAccesses) -> None:
        """Adds the accesses of a loop fused after this one. Costs the size of `later`."""
        for buffer, later_parts in later.parts.items():
            self.parts.setdefault(buffer, set()).update(later_parts)
        self.written |= later.written


# -- the rewrite ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FusionPlan:
    hoisted: list[Operation]
    second: hir.StreamForOp
    second_accesses: LoopAccesses


def plan_fusion(
    first: hir.StreamForOp, first_accesses: LoopAccesses, forked_from_current: Set[hir.StreamForOp]
) -> FusionPlan | None:
    """How to fuse `first` (whose accesses are given) with the stream loop after it, or None when that is not legal."""
    if (found := next_loop(first, forked_from_current)) is None:
        return None
    hoisted, second = found
    if not same_iterations(first, second):
        return None
    second_accesses = LoopAccesses.of(second)
    if second_accesses is None or not first_accesses.independent_of(second_accesses):
        return None
    return FusionPlan(hoisted, second, second_accesses)


def move_before(ops: Iterable[Operation], anchor: Operation, rewriter: PatternRewriter) -> None:
    for op in ops:
        op.detach()
        rewriter.insert(op, InsertPoint.before(anchor))


def fuse(first: hir.StreamForOp, plan: FusionPlan, rewriter: PatternRewriter) -> None:
    """Hoists the in-between ops and runs the second loop's work after the first's, in the first loop."""
    second = plan.second
    move_before(plan.hoisted, first, rewriter)
    terminator = first.body.block.last_op
    assert terminator is not None
    move_before(work(second), terminator, rewriter)
    rewriter.replace_all_uses_with(second.induction_var, first.induction_var)
    rewriter.replace_all_uses_with(second.worker, first.worker)
    rewriter.erase(second)


@dataclass
class FuseStreamLoops(RewritePattern):
    """Fuses a `hir.stream_for` with the following ones, as long as that is legal."""

    forked_from_current: Set[hir.StreamForOp]
    """The loops whose caller stream is current right before them (`loops_forked_from_current_stream`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hir.StreamForOp, rewriter: PatternRewriter) -> None:
        if (accesses := LoopAccesses.of(op)) is None:
            return
        while (plan := plan_fusion(op, accesses, self.forked_from_current)) is not None:
            fuse(op, plan, rewriter)
            accesses.absorb(plan.second_accesses)


class HirLoopFusionPass(ModulePass):
    """
    Merges adjacent `hir.stream_for` loops over the same iteration space when dependence analysis
    on the buffers proves that iteration i of the second only needs iteration i of the first.
    """

    name = "hir-loop-fusion"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            FuseStreamLoops(loops_forked_from_current_stream(op)), apply_recursively=False
        ).rewrite_module(op)
