"""
`hir-ring-intermediates`: an intermediate that lives inside one iteration of a `hir.stream_for`
is allocated as a ring of chunk-sized slots, one per stream, instead of whole.

convert-fusion-to-hir allocates every stream-parallel value whole before its loop, and each
iteration writes and reads its own slice. When nothing outside the loop touches the buffer, only
the iterations in flight at once need memory: iteration i runs on pool stream `i mod n`, after
every earlier iteration of that stream, so it may reuse the slot of iteration i - n. The buffer

    %t = hir.allocate() : memref<64x32xf32>
    hir.stream_for %i = %c0 to %c64 step %c1 streams(%s) of %n from %main {
      %v = hir.alias_select %t[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
      ...
    }

becomes

    %slots = arith.minui %n, %c64 : index
    %t = hir.allocate(%slots) : memref<?x32xf32>
    hir.stream_for %i = %c0 to %c64 step %c1 streams(%s) of %n from %main {
      %slot = arith.remui %i, %n : index
      %v = hir.alias_select %t[%slot] axis 0 : memref<?x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
      ...
    }

A buffer becomes a ring only when that reuse is provably ordered; it stays whole otherwise:

- it is a non-symmetric `hir.allocate` in the loop's block, used only by views at the loop's
  induction variable directly in the body (and `hir.deallocate` after the loop): a value that
  is returned, read by another loop or by anything outside stays whole;
- all its views take the same slice (`alias_select` of one axis, or `alias_chunk` of one axis
  and chunk count): iteration i touches only its own slice, so nothing flows between iterations
  (no reduction across iterations);
- each iteration writes its slice before reading it;
- every access is made while the worker `%s` is the current stream (not after a switch to a
  comm stream), by a `hir.launch`, or by a communication whose `hir.wait` follows on `%s` in the
  same iteration: then all of iteration i's accesses are ordered before iteration i + n's on `%s`.

Cost: linear in the module. One walk finds the loops. Each loop looks only at the allocations its
body views (not at every op of its block: a function of many loops made that quadratic) and walks
its body once (`accesses_in_order`). Each block's ops are numbered once: the numbers order the
allocations and tell whether a free follows its loop without walking the ops between the two.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import MemoryEffectKind, get_effects

from hir.dialects import hir
from hir.dialects.hir.buffers import i64_attr, select_result_type
from hir.dialects.type_cache import cache_by_identity

View = hir.AliasSelectOp | hir.AliasChunkOp


@dataclass(frozen=True)
class Slice:
    """What a view takes of its buffer: index i of `axis`, or chunk i of `chunks` along it."""

    chunked: bool
    axis: int
    chunks: int


def slice_of(view: View) -> Slice:
    if isinstance(view, hir.AliasChunkOp):
        return Slice(True, view.axis_value, view.chunks_value)
    return Slice(False, view.axis_value, 1)


@dataclass
class Ring:
    """A whole allocation that may become a ring, with its views in the loop and its frees after it."""

    allocation: hir.AllocateOp
    views: list[View]
    frees: list[hir.DeallocateOp]


# -- which allocations qualify --------------------------------------------------------------------


def candidate(allocation: hir.AllocateOp, loop: hir.StreamForOp, position: dict[Operation, int]) -> Ring | None:
    """
    The allocation's views and frees, when every use is one of them (same slice everywhere).
    `position`: the index of each op of the loop's block.
    """
    if allocation.symmetric is not None or allocation.parent_block() is not loop.parent_block():
        return None
    views: list[View] = []
    frees: list[hir.DeallocateOp] = []
    for use in allocation.result.uses:
        user = use.operation
        if isinstance(user, View) and user.parent_op() is loop and user.index is loop.induction_var:
            views.append(user)
        elif isinstance(user, hir.DeallocateOp) and freed_after(user, loop, position):
            frees.append(user)
        else:
            return None  # escapes: returned, another loop, a whole-buffer access, a view of another index
    if not views or len({slice_of(v) for v in views}) != 1 or not even_chunks(allocation, slice_of(views[0])):
        return None
    if any(use.operation.parent_op() is not loop for v in views for use in v.result.uses):
        return None  # a view used inside a nested region: its accesses are not checked here
    return Ring(allocation, views, frees)


def even_chunks(allocation: hir.AllocateOp, part: Slice) -> bool:
    """
    Every iteration's slice has one shape. Uneven chunks (ceil(extent/chunks), the last ones
    shorter) have a different extent per iteration, which a slot of one type cannot hold; a
    dynamic extent may be uneven at run time.
    """
    if not part.chunked:
        return True
    base = allocation.result.type
    assert isinstance(base, MemRefType)
    extent = base.get_shape()[part.axis]
    return extent != DYNAMIC_INDEX and extent % part.chunks == 0


def freed_after(free: hir.DeallocateOp, loop: hir.StreamForOp, position: dict[Operation, int]) -> bool:
    # By the block's numbering, not `is_before_in_block`, which walks the ops between the two:
    # a block of many loops whose buffers are all freed at its end made that quadratic.
    return free.parent_block() is loop.parent_block() and position[loop] < position[free]


def accesses_in_order(loop: hir.StreamForOp, rings: list[Ring]) -> list[Ring]:
    """
    The rings whose every access is on the worker stream (or a communication waited for on it)
    and whose first access writes without reading. Walks the body once, tracking the current
    stream and the communications not yet waited for.
    """
    view_of: dict[SSAValue, Ring] = {v.result: r for r in rings for v in r.views}
    ok = {id(r): True for r in rings}
    written: set[int] = set()
    on_worker = True
    unwaited: dict[SSAValue, list[Ring]] = {}  # a communication's work -> the rings it accesses
    for op in loop.body.block.ops:
        if isinstance(op, hir.SetCurrentStreamOp):
            on_worker = op.stream is loop.worker
            continue
        if isinstance(op, hir.WaitOp) and on_worker:
            unwaited.pop(op.work, None)
            continue
        touched = [(operand, view_of[operand]) for operand in op.operands if operand in view_of]
        if not touched:
            continue
        if not on_worker or not isinstance(op, hir.LaunchOp | hir.CommunicationOp):
            for _, ring in touched:
                ok[id(ring)] = False
            continue
        reads, writes = effects_on(op)
        for operand, ring in touched:
            if id(ring) not in written and (operand in reads or operand not in writes):
                ok[id(ring)] = False  # read before written in the iteration
            written.add(id(ring))
        if isinstance(op, hir.CommunicationOp):
            unwaited.setdefault(op.result, []).extend(r for _, r in touched)
    for pending in unwaited.values():
        for ring in pending:
            ok[id(ring)] = False  # its transfer may still run when iteration i + n reuses the slot
    return [r for r in rings if ok[id(r)]]


def effects_on(op: Operation) -> tuple[set[SSAValue], set[SSAValue]]:
    """The buffers `op` reads and writes, from its declared effects (unknown: reads and writes all)."""
    effects = get_effects(op)
    if effects is None:
        operands = set(op.operands)
        return operands, operands
    reads = {e.value for e in effects if e.kind == MemoryEffectKind.READ and isinstance(e.value, SSAValue)}
    writes = {e.value for e in effects if e.kind == MemoryEffectKind.WRITE and isinstance(e.value, SSAValue)}
    return reads, writes


# -- the rewrite ----------------------------------------------------------------------------------


def slot_count(loop: hir.StreamForOp) -> tuple[list[Operation], SSAValue]:
    """
    `min(n, ub)` when the iterations are 0 <= lb <= i < ub (then i mod n < ub as well), else `n`:
    never more slots than the loop has iterations from 0.
    """
    lb, step = constant(loop.lb), constant(loop.step)
    if lb is None or step is None or lb < 0 or step < 1:
        return [], loop.num_streams
    fewest = arith.MinUIOp(loop.num_streams, loop.ub)
    fewest.result.name_hint = "slots"
    return [fewest], fewest.result


def constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def dynamic_view_sizes(ring: Ring) -> list[SSAValue]:
    """
    The values of the view's dynamic extents: the allocation's, less the selected axis's (a
    chunked axis is static, `even_chunks`).
    """
    base = ring.allocation.result.type
    assert isinstance(base, MemRefType)
    axis = slice_of(ring.views[0]).axis
    dynamic_axes = [i for i, extent in enumerate(base.get_shape()) if extent == DYNAMIC_INDEX]
    return [size for i, size in zip(dynamic_axes, ring.allocation.dynamic_sizes, strict=True) if i != axis]


@cache_by_identity(maxsize=1024)  # built once per view type
def ring_buffer_type(view_type: MemRefType) -> MemRefType:
    """A contiguous buffer of a dynamic number of slots, each the shape of the view."""
    return MemRefType(view_type.element_type, [DYNAMIC_INDEX, *view_type.get_shape()])


def make_ring(ring: Ring, loop: hir.StreamForOp, slots: SSAValue, slot: SSAValue) -> None:
    """Allocates the ring right before the loop and points every view and free at it."""
    allocation = ring.allocation
    view_type = ring.views[0].result.type
    assert isinstance(view_type, MemRefType)
    sizes = dynamic_view_sizes(ring)
    ring_type = ring_buffer_type(view_type)
    new = hir.AllocateOp(ring_type, [slots, *sizes])
    new.result.name_hint = allocation.result.name_hint
    new.location = allocation.location
    Rewriter.insert_op(new, InsertPoint.before(loop))
    slot_type = select_result_type(ring_type, 0)
    for view in ring.views:
        if isinstance(view, hir.AliasSelectOp) and view.result.type == slot_type:
            view.operands = [new.result, slot]  # the same view, of the ring: no new op to build
            view.properties["axis"] = i64_attr(0)
            continue
        select = hir.AliasSelectOp(new.result, slot, 0)
        select.result.name_hint = view.result.name_hint
        select.location = view.location
        Rewriter.replace_op(view, select)
    for free in ring.frees:
        free.operands = [new.result]
    Rewriter.erase_op(allocation)


def ring_intermediates(loop: hir.StreamForOp, position: dict[Operation, int]) -> None:
    """`position`: the index of each op of the loop's block, for visiting the allocations in block order."""
    block = loop.parent_block()
    views = [op for op in loop.body.block.ops if isinstance(op, View)]
    viewed = {v.buffer.owner for v in views if isinstance(v.buffer.owner, hir.AllocateOp)}
    allocations = sorted((a for a in viewed if a.parent_block() is block), key=position.__getitem__)
    rings = [r for a in allocations if (r := candidate(a, loop, position)) is not None]
    rings = accesses_in_order(loop, rings)
    if not rings:
        return
    count_ops, slots = slot_count(loop)
    Rewriter.insert_op(count_ops, InsertPoint.before(loop))
    slot = arith.RemUIOp(loop.induction_var, loop.num_streams)
    slot.result.name_hint = "slot"
    first = loop.body.block.first_op
    assert first is not None
    Rewriter.insert_op(slot, InsertPoint.before(first))
    for ring in rings:
        make_ring(ring, loop, slots, slot.result)


class RingIntermediatesPass(ModulePass):
    """
    Allocates each intermediate that lives inside one iteration of a `hir.stream_for` as a ring of one slot per stream.
    Slot `i mod num_streams` holds iteration i's chunk, where the iterations that share a slot are
    provably ordered on one stream (module docstring).
    """

    name = "hir-ring-intermediates"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Each loop looks only at the allocations its body views (not at every op of its block:
        # that made a function of many loops quadratic); positions are numbered once per block.
        positions: dict[Block, dict[Operation, int]] = {}
        for loop in [o for o in op.walk() if isinstance(o, hir.StreamForOp)]:
            block = loop.parent_block()
            assert block is not None
            if block not in positions:
                positions[block] = {o: i for i, o in enumerate(block.ops)}
            ring_intermediates(loop, positions[block])
