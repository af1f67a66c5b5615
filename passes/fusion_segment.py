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

Cost: O(n log n) for a run of n ops and their e use-def edges, plus the cycle checks. Every op is
a group once and every merge removes a group, so there are fewer than n merges; a merge appends
the smaller group's ops and neighbour sets to the larger's (union by size: an op or edge moves
O(log n) times), and the heap holds one entry per edge plus one per re-keyed or re-asked pair.
The cycle check before a merge only visits the groups that lie between the two in a topological
order of the group DAG that every merge keeps up to date (Pearce and Kelly): none on a chain,
and in a mix the few groups of the stretch between producer and consumer. A pair refused for a
path through a third group is asked again only when one of its groups grows.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, f64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from hir.dialects import fusion
from hir.dialects.parallel_encoding import layout_of
from hir.dialects.shape_rules import Slicing
from hir.passes.convert_fusion_to_hir import makes_uneven_chunks
from hir.passes.fold_permutes import fold_permutes
from hir.passes.sharding import is_resharding
from hir.passes.stream_axes import operand_slicings
from hir.pipeline import one_of

# -- groups and merge predicates ------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Group:
    """A set of fusion ops that would run as one kernel, as a merge predicate sees it."""

    has_resharding: bool
    """Some op is resharding (`is_resharding`)."""
    has_standalone: bool
    """Some op is a standalone host op (`is_standalone_host_op`; resharding ops included)."""
    only_views: bool
    """Every op only reshapes or permutes its operand (`is_view_op`): a GEMM reads it as a strided view."""
    has_contraction: bool
    """Some op is a matmul or a linear."""
    _run: Sequence[fusion.FusionOp] = field(repr=False)
    _positions: list[int] = field(repr=False)
    """The ops as positions in `_run`, in any order: the first `_count` items of a list that later
    merges only extend, so that a merge never copies the larger group."""
    _count: int = field(repr=False)

    @staticmethod
    def of_run(run: Sequence[fusion.FusionOp], positions: list[int]) -> Group:
        """The group of the ops at `positions` of `run`."""
        ops = [run[i] for i in positions]
        return Group(
            any(is_resharding(op) for op in ops),
            any(is_standalone_host_op(op) for op in ops),
            all(is_view_op(op) for op in ops),
            any(isinstance(op, CONTRACTIONS) for op in ops),
            run,
            positions,
            len(positions),
        )

    @cached_property
    def ops(self) -> tuple[fusion.FusionOp, ...]:
        """
        The group's ops, in program order (sorted when first asked: the built-in policies ask only
        for groups of views or with a GEMM).
        """
        return tuple(self._run[i] for i in sorted(self._positions[: self._count]))


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


CONTRACTIONS = (fusion.MatmulOp, fusion.LinearOp)

VIEW_OPS = (fusion.ReshapeOp, fusion.PermuteOp)


def is_view_op(op: fusion.FusionOp) -> bool:
    """An op that only reshapes or permutes: torch reads its result as a view where the strides allow."""
    return isinstance(op, VIEW_OPS) and not is_resharding(op)


def views_into_contraction(producer: Group, consumer: Group) -> bool:
    """
    Reshapes and permutes that only a GEMM reads join its launch: the GEMM reads them as strided
    views (a transposed operand costs cuBLAS nothing), where as a launch of their own they would
    be copied into a buffer. Views that something else reads too keep their own launch, and so do
    the views of a GEMM whose result is communicated: the pipelines split such a GEMM by chunk or
    destination, a launch of that one op.
    """
    if not (producer.only_views and consumer.has_contraction) or consumer.has_resharding:
        return False
    members = {*producer.ops, *consumer.ops}
    if any(use.operation not in members for op in producer.ops for r in op.results for use in r.uses):
        return False
    return not any(_communicated(op) for op in consumer.ops)


def residual_into_contraction(producer: Group, consumer: Group) -> bool:
    """
    A residual add of a GEMM's result joins the GEMM's launch, which runs both as one GEMM that
    accumulates into the residual (`torch.addmm`'s beta = 1): the add is no kernel of its own,
    and the GEMM's result no buffer. Only a linear without bias or a matmul of 2-D weights whose
    one reader is an add, itself no communication, of a tensor of the same type from outside the
    launch.
    """
    if producer.has_resharding or consumer.has_resharding or not producer.has_contraction or len(consumer.ops) != 1:
        return False
    (add,) = consumer.ops
    gemm = next((op for op in producer.ops if isinstance(op, CONTRACTIONS)), None)
    if gemm is None or not _adds_to(add, gemm):
        return False
    members = set(producer.ops)
    residual = add.rhs if add.lhs is gemm.results[0] else add.lhs
    if residual.owner in members:
        return False
    # Nothing else leaves the producer: its other ops are the views the GEMM reads.
    return all(use.operation in members for op in producer.ops if op is not gemm for r in op.results for use in r.uses)


def _adds_to(add: Operation, gemm: Operation) -> bool:
    """
    Whether `add` is an add of `gemm`'s result, its only reader, to a tensor of the same type, and
    `gemm` one that `addmm` runs (a linear without bias or a matmul of 2-D weights).
    """
    if not isinstance(add, fusion.AddOp) or add.lhs.type != add.rhs.type or add.lhs.type != add.result.type:
        return False
    result = gemm.results[0]
    return (
        fusion.accumulates_rows(gemm)
        and [use.operation for use in result.uses] == [add]
        and (add.lhs is result) != (add.rhs is result)
    )


def kept_for_a_contraction(group: Group) -> bool:
    """
    Views that only GEMMs read: they wait for their GEMM (`views_into_contraction`) rather than
    join their producer, whose launch would then copy the viewed (transposed) tensor out.
    """
    if not group.only_views:
        return False
    members = set(group.ops)
    readers = [use.operation for op in group.ops for r in op.results for use in r.uses if use.operation not in members]
    return bool(readers) and all(_gemm_kept_local(r) for r in readers)


def _gemm_kept_local(op: Operation) -> bool:
    """A matmul or linear whose result no communication reads: views may join its launch."""
    return isinstance(op, CONTRACTIONS) and not _communicated(op)


def _communicated(op: Operation) -> bool:
    """Whether a resharding op (a communication) reads a result of `op`."""
    return any(
        isinstance(use.operation, fusion.FusionOp) and is_resharding(use.operation)
        for r in op.results
        for use in r.uses
    )


def merge_unless_standalone(producer: Group, consumer: Group) -> bool:
    """
    Policy `standalone-host-ops`: standalone host ops stay single, the others fuse; the views only
    a GEMM reads join the GEMM (`views_into_contraction`), not their producer.
    """
    if views_into_contraction(producer, consumer):
        return True
    if producer.has_standalone or consumer.has_standalone:
        return False
    if kept_for_a_contraction(consumer):  # only views that nothing else reads may grow into them
        members = set(consumer.ops)
        return producer.only_views and all(
            use.operation in members for op in producer.ops for r in op.results for use in r.uses
        )
    return True


def merge_with_gemm_epilogues(producer: Group, consumer: Group) -> bool:
    """
    Policy `gemm-epilogues`: as `standalone-host-ops`, and a residual add of a GEMM's result joins
    the GEMM's launch (`residual_into_contraction`), which the runtime runs as one `addmm`.
    """
    return residual_into_contraction(producer, consumer) or merge_unless_standalone(producer, consumer)


def merge_unless_resharding(producer: Group, consumer: Group) -> bool:
    """Policy `resharding-only`: everything fuses except resharding ops."""
    return not (producer.has_resharding or consumer.has_resharding)


def merge_unless_contraction(producer: Group, consumer: Group) -> bool:
    """
    Policy `contractions-standalone`: matmuls and linears stay single launches (the GEMMs that the
    communication pipelines split by chunk or destination), everything else fuses: the elementwise
    chains an imported activation decomposes into become one launch.
    """
    if views_into_contraction(producer, consumer):
        return True
    return merge_unless_resharding(producer, consumer) and not (producer.has_contraction or consumer.has_contraction)


def merge_contractions_with_epilogues(producer: Group, consumer: Group) -> bool:
    """
    Policy `contractions-with-epilogues`: as `contractions-standalone`, and a residual add of a
    GEMM's f32 or f64 result joins the GEMM's launch (`residual_into_contraction`, one `addmm`);
    such an add joins nothing else first, which would leave its GEMM to write a buffer of its own. Views that
    only GEMMs read wait for their GEMM, as in `standalone-host-ops` (`kept_for_a_contraction`).
    """
    if residual_into_contraction(producer, consumer) and _rounds_as_eager(consumer.ops[0]):
        return True
    if _residual_of_a_gemm(producer) or _residual_of_a_gemm(consumer):
        return False
    if views_into_contraction(producer, consumer):
        return True
    if producer.has_resharding or consumer.has_resharding or producer.has_contraction or consumer.has_contraction:
        return False
    if kept_for_a_contraction(consumer):  # views only GEMMs read wait for them, as in `standalone-host-ops`
        members = set(consumer.ops)
        return producer.only_views and all(
            use.operation in members for op in producer.ops for r in op.results for use in r.uses
        )
    return True


def _rounds_as_eager(add: Operation) -> bool:
    """
    Whether an add joined to its GEMM's `addmm` rounds as eager's GEMM then add do, within f32's
    precision: an f32 or f64 one. A bf16 or f16 sum rounded once differs from eager's, rounded
    twice, by an ulp of the half type (1e-3 relative in f16), so those adds stay apart.
    """
    return isinstance(add.results[0].type, TensorType) and add.results[0].type.element_type in (f32, f64)


def _residual_of_a_gemm(group: Group) -> bool:
    """A group of one add that reads a GEMM's result, its only use, as `residual_into_contraction` takes it."""
    if group._count != 1:
        return False
    (add,) = group.ops
    return _rounds_as_eager(add) and any(
        isinstance(value.owner, CONTRACTIONS) and _adds_to(add, value.owner) for value in add.operands
    )


DEFAULT_POLICY = "standalone-host-ops"
POLICIES: dict[str, ShouldMerge] = {
    DEFAULT_POLICY: merge_unless_standalone,
    "resharding-only": merge_unless_resharding,
    "contractions-standalone": merge_unless_contraction,
    "gemm-epilogues": merge_with_gemm_epilogues,
    "contractions-with-epilogues": merge_contractions_with_epilogues,
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


def stream_reads(op: fusion.FusionOp) -> dict[SSAValue, object]:
    """
    The slice of each operand that a stream loop over `op`'s declared stream axis takes (None:
    whole); an operand the loop cannot slice gets a marker of its own, equal to no other read.
    """
    layout = layout_of(op.results[0].type)
    assert layout.stream_axis is not None
    try:
        slicings = operand_slicings(op, Slicing((layout.stream_axis,), layout.stream_chunks))
    except PassFailedException:  # the op alone reports it when it is lowered
        return {operand: object() for operand in op.operands}
    reads: dict[SSAValue, object] = {}
    for operand, slicing in zip(op.operands, slicings):
        reads[operand] = slicing if reads.get(operand, slicing) == slicing else object()
    return reads


def stream_axes_correspond(producer: Operation, consumer: Operation, operand_index: int) -> bool:
    """Whether the consumer's result stream axis comes, through its axis map, from the producer's."""
    assert isinstance(consumer, fusion.FusionOp)
    produced = layout_of(producer.results[0].type)
    consumed = layout_of(consumer.results[0].type)
    if produced.stream_chunks != consumed.stream_chunks:
        return False
    assert produced.stream_axis is not None
    assert consumed.stream_axis is not None
    # An extent-1 stream axis broadcast into a longer (or an empty) one is another iteration space.
    produced_type, consumed_type = producer.results[0].type, consumer.results[0].type
    assert isinstance(produced_type, TensorType)
    assert isinstance(consumed_type, TensorType)
    if produced_type.get_shape()[produced.stream_axis] != consumed_type.get_shape()[consumed.stream_axis]:
        return False
    sources = consumer.axis_map()[consumed.stream_axis]
    return (operand_index, produced.stream_axis) in sources


# -- the partition of one run into groups ---------------------------------------------------------


@dataclass(eq=False)
class _Node:
    """A group under construction: a node of the group DAG, and a set of the union-find over the run's ops."""

    uid: int
    first: int
    """The position of the group's first op."""
    order: int
    """The group's place in a topological order of the group DAG, kept valid by every merge."""
    positions: list[int]
    """The group's ops as positions in the run, in any order (shared with `group`, see `Group`)."""
    group: Group
    streamed: bool
    """All results are stream-parallel (else none is: the stream rule holds inside every group)."""
    producers: set[_Node]
    consumers: set[_Node]
    """The neighbouring groups; entries may have been merged since (`_Partition.neighbours` resolves them)."""
    merged_into: _Node | None = None
    blocked: list[tuple[_Node, _Node]] = field(default_factory=list)
    """Pairs with this group refused for a path through a third group: asked again when it grows."""
    reads: dict[SSAValue, object] = field(default_factory=dict)
    """How the stream loop would slice each value the group's ops read (`stream_reads`)."""
    alone: bool = False
    """An op that makes its stream(N) axis in uneven chunks: it runs whole, so in no segment."""


class _Partition:
    """
    The groups of one run of fusion ops and the DAG their use-def edges form, kept up to date.

    What keeps a merge cheap: the ops of a group are a union-find set (the smaller group's
    positions are appended to the larger's list, nothing is relabelled), neighbour sets are
    united smaller into larger and resolved lazily, and the group DAG keeps a topological order
    (`_Node.order`) so that the search for a path through a third group only visits the groups
    ordered between the two (Pearce and Kelly's dynamic topological order).
    """

    def __init__(self, ops: list[fusion.FusionOp]):
        self.ops = ops
        self.position: dict[Operation, int] = {op: i for i, op in enumerate(ops)}
        self.node_at = [
            _Node(i, i, i, [i], Group.of_run(ops, [i]), is_streamed(op), set(), set()) for i, op in enumerate(ops)
        ]
        self.next_uid = len(ops)
        for node, op in zip(self.node_at, ops):
            if node.streamed:
                node.reads = stream_reads(op)
                node.alone = makes_uneven_chunks(op)
        for consumer, op in zip(self.node_at, ops):
            for operand in op.operands:
                if (j := self.position.get(operand.owner)) is not None:
                    consumer.producers.add(self.node_at[j])
                    self.node_at[j].consumers.add(consumer)

    def find(self, node: _Node) -> _Node:
        """The group `node` is part of now (with path compression)."""
        root = node
        while root.merged_into is not None:
            root = root.merged_into
        while node.merged_into is not None and node.merged_into is not root:
            node.merged_into, node = root, node.merged_into
        return root

    def nodes(self) -> list[_Node]:
        """The current groups, ordered by their first op."""
        return sorted({self.find(n) for n in self.node_at}, key=lambda n: n.first)

    def node_of(self, op: Operation | Block) -> _Node | None:
        """The group of an op of the run, None for anything else."""
        j = self.position.get(op) if isinstance(op, Operation) else None
        return None if j is None else self.find(self.node_at[j])

    def neighbours(self, node: _Node, producers: bool) -> set[_Node]:
        """The current groups feeding `node` (or fed by it); merged entries are replaced for good."""
        live = {self.find(n) for n in (node.producers if producers else node.consumers)}
        live.discard(node)
        if producers:
            node.producers = live
        else:
            node.consumers = live
        return live

    # -- the rules ----------------------------------------------------------------------------------

    def allowed(self, producer: _Node, consumer: _Node, should_merge: ShouldMerge) -> bool:
        """The hard rules (resharding ops stay alone, streams fit), then the predicate. Refusals are final."""
        if producer.group.has_resharding or consumer.group.has_resharding or producer.alone or consumer.alone:
            return False
        if not self.streams_fit(producer, consumer):
            return False
        return should_merge(producer.group, consumer.group)

    def streams_fit(self, a: _Node, b: _Node) -> bool:
        """The stream rule for a | b, given that it holds for a and for b: check the edges between them."""
        if a.streamed != b.streamed:
            return False
        if not a.streamed:
            return True
        if not all(stream_axes_correspond(p, c, k) for p, c, k in self.edges_between(a, b)):
            return False
        # One loop slices each value once: a value both groups read (e.g. `add(permute(%a), %a)`)
        # must be read on the same axis by both.
        small, large = sorted((a.reads, b.reads), key=len)
        return all(large.get(value, slicing) == slicing for value, slicing in small.items())

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

    def ancestors_between(self, producer: _Node, consumer: _Node) -> set[_Node] | None:
        """
        The groups that reach `consumer` other than through `producer` and come after `producer` in
        the topological order; None when `producer` feeds one of them (a path through a third
        group: merging would make a cycle). Every group on such a path comes after `producer`, so
        the search stops at the groups before it.
        """
        found: set[_Node] = set()
        stack = [consumer]
        while stack:
            node = stack.pop()
            for n in self.neighbours(node, producers=True):
                if n is producer:
                    if node is not consumer:
                        return None
                elif n.order > producer.order and n not in found:
                    found.add(n)
                    stack.append(n)
        return found

    def descendants_between(self, producer: _Node, consumer: _Node) -> set[_Node]:
        """The groups `producer` reaches other than through `consumer` that come before `consumer` in the order."""
        found: set[_Node] = set()
        stack = [producer]
        while stack:
            for n in self.neighbours(stack.pop(), producers=False):
                if n is not consumer and n.order < consumer.order and n not in found:
                    found.add(n)
                    stack.append(n)
        return found

    # -- merging ------------------------------------------------------------------------------------

    def merge(self, producer: _Node, consumer: _Node, ancestors: set[_Node]) -> _Node:
        """
        Merges a producer/consumer pair that `ancestors_between` accepted (`ancestors` is what it
        returned). Costs the smaller group's ops and neighbour sets, plus the groups between the
        two in the topological order when some must move.
        """
        descendants = self.descendants_between(producer, consumer) if ancestors else set()
        small, large = sorted((producer, consumer), key=lambda n: len(n.positions))
        positions = large.positions  # extended in place: earlier Groups of `large` keep their count
        positions.extend(small.positions)
        group = Group(
            producer.group.has_resharding or consumer.group.has_resharding,
            producer.group.has_standalone or consumer.group.has_standalone,
            producer.group.only_views and consumer.group.only_views,
            producer.group.has_contraction or consumer.group.has_contraction,
            self.ops,
            positions,
            len(positions),
        )
        merged = _Node(
            self.next_uid,
            min(producer.first, consumer.first),
            producer.order,
            positions,
            group,
            producer.streamed,
            _union(producer.producers, consumer.producers),
            _union(producer.consumers, consumer.consumers),
        )
        self.next_uid += 1
        if merged.streamed:  # the larger dict grows in place, as `positions` does
            merged.reads = large.reads
            merged.reads.update(small.reads)
        producer.merged_into = consumer.merged_into = merged
        if ancestors:
            self._reorder(producer, consumer, merged, ancestors, descendants)
        return merged

    @staticmethod
    def _reorder(
        producer: _Node, consumer: _Node, merged: _Node, ancestors: set[_Node], descendants: set[_Node]
    ) -> None:
        """
        A topological order after the merge (Pearce-Kelly): the consumer's other ancestors between
        the two move before the merged group, the producer's descendants between them after it,
        on the places all of them held. Without such ancestors the merged group takes the
        producer's place and nothing moves.
        """
        before = sorted(ancestors, key=lambda n: n.order)
        after = sorted(descendants, key=lambda n: n.order)
        places = sorted([n.order for n in (*before, *after)] + [producer.order, consumer.order])
        for node, place in zip(before, places):
            node.order = place
        merged.order = places[len(before)]
        for node, place in zip(after, places[len(places) - len(after) :]):
            node.order = place


def _union(a: set[_Node], b: set[_Node]) -> set[_Node]:
    """Adds the smaller set to the larger (which it returns, changed); stale entries are resolved later."""
    small, large = sorted((a, b), key=len)
    large |= small
    return large


_Candidate = tuple[int, int, int, int, _Node, _Node]


def _candidate(producer: _Node, consumer: _Node) -> _Candidate:
    # Ordered by the first ops' positions; the uids make every key unique, so nodes are never compared.
    return (producer.first, consumer.first, producer.uid, consumer.uid, producer, consumer)


def _merge_to_fixpoint(partition: _Partition, should_merge: ShouldMerge) -> None:
    """
    Repeatedly merges the first acceptable producer/consumer pair, in the order of (producer's
    first op, consumer's first op), until none is left.

    Each pair is asked once. A pair refused by the hard rules or the predicate stays refused
    when its groups grow (the rules and the built-in policies only refuse more for larger groups,
    and custom predicates must too), so it is not asked again. A pair refused for a path through a
    third group is asked again when one of its groups grows: the merge may have swallowed the
    path. A heap entry names the groups of its time; it stands for the groups they are part of
    now as long as its key still holds, and a merge pushes new entries only for the pairs whose
    key changes, those of the later of the two groups (the merged group's first op is the earlier
    group's), and for the blocked pairs of both.
    """
    candidates = [_candidate(p, c) for p in partition.nodes() for c in p.consumers]
    heapq.heapify(candidates)
    asked: set[tuple[_Node, _Node]] = set()
    while candidates:
        producer_first, consumer_first, _, _, producer, consumer = heapq.heappop(candidates)
        producer, consumer = partition.find(producer), partition.find(consumer)
        if producer is consumer or (producer.first, consumer.first) != (producer_first, consumer_first):
            continue  # merged already, or a key that no longer holds (a new entry has the new key)
        if (producer, consumer) in asked:
            continue
        asked.add((producer, consumer))
        if not partition.allowed(producer, consumer, should_merge):
            continue
        ancestors = partition.ancestors_between(producer, consumer)
        if ancestors is None:
            producer.blocked.append((producer, consumer))
            consumer.blocked.append((producer, consumer))
            continue
        later = consumer if producer.first < consumer.first else producer
        rekeyed = [
            *((p, True) for p in partition.neighbours(later, producers=True)),
            *((c, False) for c in partition.neighbours(later, producers=False)),
        ]
        blocked = producer.blocked + consumer.blocked
        merged = partition.merge(producer, consumer, ancestors)
        for node, is_producer in rekeyed:
            if node is not producer and node is not consumer:
                heapq.heappush(candidates, _candidate(node, merged) if is_producer else _candidate(merged, node))
        for p, c in blocked:
            p, c = partition.find(p), partition.find(c)
            if p is not c:
                heapq.heappush(candidates, _candidate(p, c))


def partition_run(ops: list[fusion.FusionOp], should_merge: ShouldMerge) -> list[list[fusion.FusionOp]]:
    """Groups a run of fusion ops (in program order); returns the groups in emission order."""
    partition = _Partition(ops)
    _merge_to_fixpoint(partition, should_merge)
    return [list(node.group.ops) for node in _topological_order(partition)]


def _topological_order(partition: _Partition) -> list[_Node]:
    """Kahn's algorithm over the group DAG; among ready groups, the earliest first op goes first."""
    nodes = partition.nodes()
    indegree = {n: len(partition.neighbours(n, producers=True)) for n in nodes}
    ready = [(n.first, n) for n in nodes if indegree[n] == 0]
    heapq.heapify(ready)
    order: list[_Node] = []
    while ready:
        _, node = heapq.heappop(ready)
        order.append(node)
        for c in partition.neighbours(node, producers=False):
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


def _leads_to_gemms(op: Operation, block: Block | None) -> bool:
    """`op` is a GEMM of `block` whose result is not communicated, or a view that only such GEMMs read."""
    if op.parent_block() is not block:
        return False
    if isinstance(op, CONTRACTIONS):
        return _gemm_kept_local(op)
    if not (isinstance(op, fusion.FusionOp) and is_view_op(op)):
        return False
    uses = op.results[0].uses
    return bool(uses) and all(_leads_to_gemms(use.operation, block) for use in uses)


def views_per_contraction(function: func.FuncOp) -> None:
    """
    A view (reshape, permute) that several ops read, a GEMM among them: each such GEMM (whose
    result is not communicated), or view chain that only leads to such GEMMs, reads a clone of
    its own, made just before it, which then joins the GEMM's launch (`views_into_contraction`).
    Shared, the view would be a launch of its own, copied into a buffer; a view costs torch
    nothing, so the clones cost nothing at run time. The other readers keep the original. A view
    of what a fusing op computes is not cloned: it joins that op's launch, whose buffer its
    readers share at no cost, where a clone would make the launch yield the unviewed result too.
    """
    for view in [op for block in function.body.blocks for op in block.ops if isinstance(op, VIEW_OPS)]:
        producer = view.operands[0].owner
        if not is_view_op(view) or (isinstance(producer, fusion.FusionOp) and not is_standalone_host_op(producer)):
            continue
        uses = list(view.results[0].uses)
        gemms = [use for use in uses if _leads_to_gemms(use.operation, view.parent_block())]
        if len(uses) < 2 or not gemms:
            continue
        if len(gemms) == len(uses):
            gemms = gemms[1:]  # the first GEMM keeps the original
        for use in gemms:
            clone = view.clone()
            Rewriter.insert_op(clone, InsertPoint.before(use.operation))
            use.operation.operands[use.index] = clone.results[0]


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
    reduction, matmul, linear and resharding ops stay single, other ops fuse),
    `resharding-only` (everything fuses except resharding ops), `contractions-standalone`
    (matmul, linear and resharding ops stay single, everything else fuses) or `gemm-epilogues`
    (`standalone-host-ops`, and a residual add joins the GEMM it reads).
    """

    name = "fusion-segment"

    policy: str = one_of(DEFAULT_POLICY, POLICIES)

    def __post_init__(self) -> None:
        # Checked when the pass is built, so a pipeline with a bad option fails before any input is read.
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy '{self.policy}', expected one of: {', '.join(POLICIES)}")

    @staticmethod
    def with_predicate(should_merge: ShouldMerge) -> CustomFusionSegmentPass:
        """The pass with any merge predicate instead of a named policy."""
        return CustomFusionSegmentPass(should_merge)

    def should_merge(self) -> ShouldMerge:
        return POLICIES[self.policy]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_permutes(op)  # a transpose transposed back copies nothing
        if self.policy != "resharding-only":  # the policies that join views to their GEMM
            for function in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
                views_per_contraction(function)
        segment_module(op, self.should_merge())


@dataclass(frozen=True)
class CustomFusionSegmentPass(ModulePass):
    """`fusion-segment` with a Python merge predicate (made by `FusionSegmentPass.with_predicate`)."""

    name = "fusion-segment"

    should_merge: ShouldMerge

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        segment_module(op, self.should_merge)
