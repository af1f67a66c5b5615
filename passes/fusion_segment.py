"""
`fusion-segment`: group fusion ops into segments (kernels) with a pluggable merge predicate.

    hir-opt in.mlir -p fusion-segment                                   # policy standalone-host-ops
    hir-opt in.mlir -p 'fusion-segment{policy=resharding-only}'

A group of two or more ops becomes a `fusion.segment` (one kernel); a group of one op stays a bare
op (a standalone host op: an ATen call or a communication).

Python API:

    segment_module(module, should_merge) -> list[SegmentOp]      every func.func of a module
    segment_function(func_op, should_merge) -> list[SegmentOp]   one function
    FusionSegmentPass(policy="resharding-only")                   a named policy, as a ModulePass
    FusionSegmentPass.with_predicate(should_merge)                any callable, as a ModulePass

`should_merge(producer, consumer) -> bool` receives two `Group`s, where `consumer` uses a value
that `producer` defines; `Group.ops` lists the group's fusion ops in program order (`has_resharding`
and `has_standalone` summarize them). Each pair is asked at most once, and the predicate must be
deterministic for the result to be. `POLICIES` maps the policy names to the built-in predicates.

The predicate only proposes. Rules it cannot override:
  - a resharding op (`passes.sharding.is_resharding`: an operand it cannot consume locally)
    is never merged with anything: it becomes a communication;
  - the ops of a group are stream-compatible (`stream_compatible`): no result is stream-parallel,
    or all are and, on every producer->consumer edge inside the group, the consumer's stream axis
    comes through its `axis_map()` from the producer's stream axis, with the same chunk count;
    otherwise one host loop could not run the segment;
  - merges keep the group graph acyclic: two groups with a path between them through a third
    group are never merged.

Scope: the pass works on the maximal runs of consecutive fusion ops in each block of every
`func.func`. Any other op (a constant, a hir op, `func.return`, an existing `fusion.segment`)
ends a run and stays where it is, so no fusion op moves across an op with side effects; fusion
ops nested in a region (a segment, a `hir.launch`) are never touched. Running the pass again
with a built-in policy changes nothing.

Algorithm, per run:
  1. one group per op;
  2. merge the first producer/consumer pair of groups, ordered by (the producer's first op, the
     consumer's first op), that the rules and the predicate accept; repeat until none is left;
  3. emit the groups in Kahn topological order (ties: the first op's position), each group of
     two or more ops as a `fusion.segment` of clones (inputs in first-use order, results in
     program order) and each single op as itself.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from hir.dialects import fusion
from hir.dialects.parallel_encoding import layout_of
from hir.passes.sharding import is_resharding

# -- groups and merge predicates ------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Group:
    """A set of fusion ops that would run as one kernel, as a merge predicate sees it."""

    ops: tuple[fusion.FusionOp, ...]
    """The group's ops, in program order."""
    has_resharding: bool
    """Some op is resharding (`is_resharding`)."""
    has_standalone: bool
    """Some op is a standalone host op (`is_standalone_host_op`; resharding ops included)."""

    @staticmethod
    def of(ops: Sequence[fusion.FusionOp]) -> Group:
        return Group(
            tuple(ops),
            any(is_resharding(op) for op in ops),
            any(is_standalone_host_op(op) for op in ops),
        )

    def union(self, other: Group, ops: tuple[fusion.FusionOp, ...]) -> Group:
        """The merged group (`ops`: both groups' ops in program order), without rescanning them."""
        return Group(ops, self.has_resharding or other.has_resharding, self.has_standalone or other.has_standalone)


ShouldMerge = Callable[[Group, Group], bool]
"""`should_merge(producer, consumer)`: whether two adjacent groups may become one kernel."""

STANDALONE_HOST_OPS: tuple[type[fusion.FusionOp], ...] = (
    fusion.SetOp,
    fusion.AddOp,
    fusion.SubOp,
    fusion.MulOp,
    fusion.DivOp,
    fusion.MaximumOp,
    fusion.PowOp,
    fusion.CompareOp,
    fusion.SumOp,
    fusion.MaxOp,
    fusion.MinOp,
    fusion.MeanOp,
    fusion.MatmulOp,
    fusion.LinearOp,
)
"""Ops the host runs by themselves (an ATen call), as nvFuser's `isLowerableAsStandaloneHostOp`."""


def is_standalone_host_op(op: fusion.FusionOp) -> bool:
    return isinstance(op, STANDALONE_HOST_OPS) or is_resharding(op)


def merge_unless_standalone(producer: Group, consumer: Group) -> bool:
    """Policy `standalone-host-ops`: standalone host ops stay single, the others fuse."""
    return not (producer.has_standalone or consumer.has_standalone)


def merge_unless_resharding(producer: Group, consumer: Group) -> bool:
    """Policy `resharding-only`: everything fuses except resharding ops."""
    return not (producer.has_resharding or consumer.has_resharding)


DEFAULT_POLICY = "standalone-host-ops"
POLICIES: dict[str, ShouldMerge] = {
    DEFAULT_POLICY: merge_unless_standalone,
    "resharding-only": merge_unless_resharding,
}


# -- hard legality rules --------------------------------------------------------------------------


def is_streamed(op: Operation) -> bool:
    return layout_of(op.results[0].type).stream_axis is not None


def stream_compatible(ops: Sequence[fusion.FusionOp]) -> bool:
    """
    Whether one host loop can run all of `ops`: none of their results is stream-parallel, or all
    are and every producer->consumer edge among them maps the stream axes onto each other with
    the same chunk count.
    """
    streamed = [is_streamed(op) for op in ops]
    if not any(streamed):
        return True
    if not all(streamed):
        return False
    members = set(ops)
    for consumer in ops:
        for k, operand in enumerate(consumer.operands):
            producer = operand.owner
            if producer in members and not stream_axes_correspond(producer, consumer, k):
                return False
    return True


def stream_axes_correspond(producer: Operation, consumer: Operation, operand_index: int) -> bool:
    """Whether the consumer's result stream axis comes, through its axis map, from the producer's."""
    assert isinstance(consumer, fusion.FusionOp)
    produced = layout_of(producer.results[0].type)
    consumed = layout_of(consumer.results[0].type)
    if produced.stream_chunks != consumed.stream_chunks:
        return False
    assert produced.stream_axis is not None
    assert consumed.stream_axis is not None
    sources = consumer.axis_map()[consumed.stream_axis]
    return (operand_index, produced.stream_axis) in sources


# -- the partition of one run into groups ---------------------------------------------------------


@dataclass(eq=False)
class _Node:
    """A group under construction, a node of the group DAG."""

    uid: int
    positions: tuple[int, ...]
    """The group's ops as positions in the run, ascending."""
    group: Group
    streamed: bool
    """All results are stream-parallel (else none is: the stream rule holds inside every group)."""
    producers: set[_Node] = field(default_factory=set)
    consumers: set[_Node] = field(default_factory=set)
    alive: bool = True

    @property
    def first(self) -> int:
        return self.positions[0]


class _Partition:
    """The groups of one run of fusion ops and the DAG their use-def edges form, kept up to date."""

    def __init__(self, ops: list[fusion.FusionOp]):
        self.ops = ops
        self.position: dict[Operation, int] = {op: i for i, op in enumerate(ops)}
        self.node_at = [_Node(i, (i,), Group.of([op]), is_streamed(op)) for i, op in enumerate(ops)]
        self.next_uid = len(ops)
        for consumer, op in zip(self.node_at, ops):
            for operand in op.operands:
                if (j := self.position.get(operand.owner)) is not None:
                    consumer.producers.add(self.node_at[j])
                    self.node_at[j].consumers.add(consumer)

    def nodes(self) -> list[_Node]:
        """The current groups, ordered by their first op."""
        return sorted({n.uid: n for n in self.node_at}.values(), key=lambda n: n.first)

    def reaches_indirectly(self, source: _Node, target: _Node) -> bool:
        """Whether a path source -> X -> ... -> target passes through some third group X."""
        stack = [n for n in source.consumers if n is not target]
        visited = set(stack)
        while stack:
            for successor in stack.pop().consumers:
                if successor is target:
                    return True
                if successor not in visited:
                    visited.add(successor)
                    stack.append(successor)
        return False

    def streams_fit(self, a: _Node, b: _Node) -> bool:
        """The stream rule for a | b, given that it holds for a and for b: check the edges between them."""
        if a.streamed != b.streamed:
            return False
        if not a.streamed:
            return True
        return all(stream_axes_correspond(p, c, k) for p, c, k in self.edges_between(a, b))

    def edges_between(self, a: _Node, b: _Node) -> Iterator[tuple[Operation, Operation, int]]:
        """(producer, consumer, operand index) of the use-def edges between a and b, either way."""
        small, large = sorted((a, b), key=lambda n: len(n.positions))  # walk the smaller group
        for i in small.positions:
            op = self.ops[i]
            for k, operand in enumerate(op.operands):
                if self.node_of(operand.owner) is large:
                    yield operand.owner, op, k
            for use in op.results[0].uses:
                if self.node_of(use.operation) is large:
                    yield op, use.operation, use.index

    def node_of(self, op: Operation | Block) -> _Node | None:
        """The group of an op of the run, None for anything else."""
        j = self.position.get(op) if isinstance(op, Operation) else None
        return None if j is None else self.node_at[j]

    def may_merge(self, producer: _Node, consumer: _Node, should_merge: ShouldMerge) -> bool:
        """The hard rules (resharding ops stay alone, streams fit), then the predicate, then acyclicity."""
        if producer.group.has_resharding or consumer.group.has_resharding:
            return False
        if not self.streams_fit(producer, consumer):
            return False
        if not should_merge(producer.group, consumer.group):
            return False
        return not self.reaches_indirectly(producer, consumer)

    def merge(self, a: _Node, b: _Node) -> _Node:
        positions = tuple(sorted(a.positions + b.positions))
        group = a.group.union(b.group, tuple(self.ops[i] for i in positions))
        merged = _Node(self.next_uid, positions, group, a.streamed)
        self.next_uid += 1
        merged.producers = (a.producers | b.producers) - {a, b}
        merged.consumers = (a.consumers | b.consumers) - {a, b}
        for old in (a, b):
            old.alive = False
            for p in old.producers:
                p.consumers.discard(old)
            for c in old.consumers:
                c.producers.discard(old)
        for p in merged.producers:
            p.consumers.add(merged)
        for c in merged.consumers:
            c.producers.add(merged)
        for i in positions:
            self.node_at[i] = merged
        return merged


_Candidate = tuple[int, int, int, int, _Node, _Node]


def _candidate(producer: _Node, consumer: _Node) -> _Candidate:
    # Ordered by the first ops' positions; the uids make every key unique, so nodes are never compared.
    return (producer.first, consumer.first, producer.uid, consumer.uid, producer, consumer)


def _merge_to_fixpoint(partition: _Partition, should_merge: ShouldMerge) -> None:
    """
    Repeatedly merges the first acceptable producer/consumer pair, in the order of (producer's
    first op, consumer's first op). A pair is asked once: a rejected pair stays rejected, since
    merging other groups only adds paths between two groups, never removes one.
    """
    candidates = [_candidate(p, c) for p in partition.nodes() for c in p.consumers]
    heapq.heapify(candidates)
    while candidates:
        *_, producer, consumer = heapq.heappop(candidates)
        if not (producer.alive and consumer.alive) or not partition.may_merge(producer, consumer, should_merge):
            continue
        merged = partition.merge(producer, consumer)
        for p in merged.producers:
            heapq.heappush(candidates, _candidate(p, merged))
        for c in merged.consumers:
            heapq.heappush(candidates, _candidate(merged, c))


def partition_run(ops: list[fusion.FusionOp], should_merge: ShouldMerge) -> list[list[fusion.FusionOp]]:
    """Groups a run of fusion ops (in program order); returns the groups in emission order."""
    partition = _Partition(ops)
    _merge_to_fixpoint(partition, should_merge)
    return [list(node.group.ops) for node in _topological_order(partition)]


def _topological_order(partition: _Partition) -> list[_Node]:
    """Kahn's algorithm over the group DAG; among ready groups, the earliest first op goes first."""
    nodes = partition.nodes()
    indegree = {n: len(n.producers) for n in nodes}
    ready = [(n.first, n) for n in nodes if indegree[n] == 0]
    heapq.heapify(ready)
    order: list[_Node] = []
    while ready:
        _, node = heapq.heappop(ready)
        order.append(node)
        for c in node.consumers:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, (c.first, c))
    assert len(order) == len(nodes), "fusion-segment made a cyclic group graph"
    return order


# -- materialization ------------------------------------------------------------------------------


def segment_inputs(ops: Sequence[Operation]) -> list[SSAValue]:
    """Values the ops use but do not define, in first-use order."""
    members = set(ops)
    inputs: dict[SSAValue, None] = {}
    for op in ops:
        for operand in op.operands:
            if operand.owner not in members:
                inputs.setdefault(operand)
    return list(inputs)


def segment_outputs(ops: Sequence[Operation]) -> list[SSAValue]:
    """Values the ops define and something else uses (a later op, func.return), in program order."""
    members = set(ops)
    return [r for op in ops for r in op.results if any(use.operation not in members for use in r.uses)]


def build_segment(ops: Sequence[fusion.FusionOp]) -> fusion.SegmentOp:
    """A `fusion.segment` holding clones of `ops`; the originals are left in place."""
    inputs, outputs = segment_inputs(ops), segment_outputs(ops)
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for value, arg in zip(inputs, block.args):
        mapping[value] = arg
        arg.name_hint = value.name_hint
    for op in ops:
        block.add_op(op.clone(value_mapper=mapping))
    block.add_op(fusion.YieldOp(*[mapping[v] for v in outputs]))
    segment = fusion.SegmentOp(inputs, [v.type for v in outputs], Region(block))
    segment.location = ops[0].location
    for value, result in zip(outputs, segment.outs):
        result.name_hint = value.name_hint
    return segment


def _replace_by_segment(ops: Sequence[fusion.FusionOp], segment: fusion.SegmentOp) -> None:
    outputs = segment_outputs(ops)
    for value, result in zip(outputs, segment.outs):
        value.replace_all_uses_with(result)
    for op in reversed(ops):  # consumers first, so every erased op is unused by then
        Rewriter.erase_op(op)


def _emit_groups(groups: list[list[fusion.FusionOp]], where: InsertPoint) -> list[fusion.SegmentOp]:
    segments: list[fusion.SegmentOp] = []
    for ops in groups:
        if len(ops) == 1:
            ops[0].detach()
            Rewriter.insert_op(ops[0], where)
            continue
        segment = build_segment(ops)
        Rewriter.insert_op(segment, where)
        _replace_by_segment(ops, segment)
        segments.append(segment)
    return segments


def fusion_runs(block: Block) -> Iterator[list[fusion.FusionOp]]:
    """The maximal runs of consecutive fusion ops in a block."""
    run: list[fusion.FusionOp] = []
    for op in block.ops:
        if isinstance(op, fusion.FusionOp):
            run.append(op)
            continue
        if run:
            yield run
        run = []
    if run:
        yield run


def segment_run(ops: list[fusion.FusionOp], should_merge: ShouldMerge) -> list[fusion.SegmentOp]:
    """Segments one run of fusion ops in place; returns the segments it made."""
    block = ops[0].parent_block()
    assert block is not None
    after = ops[-1].next_op
    where = InsertPoint.before(after) if after is not None else InsertPoint.at_end(block)
    return _emit_groups(partition_run(ops, should_merge), where)


def segment_function(func_op: func.FuncOp, should_merge: ShouldMerge) -> list[fusion.SegmentOp]:
    """Segments every run of top-level fusion ops of a function; returns the segments made."""
    segments: list[fusion.SegmentOp] = []
    for block in func_op.body.blocks:
        for run in list(fusion_runs(block)):  # list first: segmenting rewrites the block
            if len(run) > 1:
                segments += segment_run(run, should_merge)
    return segments


def segment_module(module: ModuleOp, should_merge: ShouldMerge) -> list[fusion.SegmentOp]:
    segments: list[fusion.SegmentOp] = []
    for op in list(module.walk()):
        if isinstance(op, func.FuncOp):
            segments += segment_function(op, should_merge)
    return segments


# -- the passes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FusionSegmentPass(ModulePass):
    """
    Groups fusion ops into segments (kernels). `policy`: `standalone-host-ops` (set, binary,
    reduction, matmul, linear and resharding ops stay single, other ops fuse) or
    `resharding-only` (everything fuses except resharding ops).
    """

    name = "fusion-segment"

    policy: str = DEFAULT_POLICY

    @staticmethod
    def with_predicate(should_merge: ShouldMerge) -> CustomFusionSegmentPass:
        """The pass with any merge predicate instead of a named policy."""
        return CustomFusionSegmentPass(should_merge)

    def should_merge(self) -> ShouldMerge:
        if self.policy not in POLICIES:
            raise PassFailedException(
                f"fusion-segment: unknown policy '{self.policy}', expected one of: {', '.join(POLICIES)}"
            )
        return POLICIES[self.policy]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        segment_module(op, self.should_merge())


@dataclass(frozen=True)
class CustomFusionSegmentPass(ModulePass):
    """`fusion-segment` with a Python merge predicate (made by `FusionSegmentPass.with_predicate`)."""

    name = "fusion-segment"

    should_merge: ShouldMerge

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        segment_module(op, self.should_merge)
