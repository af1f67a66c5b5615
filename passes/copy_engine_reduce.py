"""
The copy-engine backend of `hir-lower-communication` for the row-parallel half of a tensor-parallel
layer: a partial sum over the devices (a `fusion.sum` over the didx axis) inside a stream loop,
whose input one launch of the same iteration computes: GEMM + reduce-scatter, and matmul +
all-reduce. One NCCL collective per chunk takes SMs from the GEMMs and pays a collective's
latency; here the transfers are copies the copy engines carry over NVLink, and the only SM work
besides the GEMM is one add per received partial:

    before the loop:  %rank, the comm stream and a reduction stream forked from the caller's
                      stream, the symmetric receive buffer (one slot per peer and iteration);
                      a loop of one iteration with the release at the start forks no comm
                      stream: its first peer's step is peeled, and the comm stream's first work
                      is the wait for that GEMM, the release barrier, the push
    iteration i, on its worker stream:
      for t = 1 .. D-1: the producer (the GEMM) on the rows destined for device
                      (rank + t) mod D, found through its axis map (split along the axis that
                      becomes the result's didx axis), into its partial buffer; the comm stream
                      waits for it and pushes that partial into slot t-1 of the destination's
                      receive buffer (a copy into a peer view)
      then:           the producer on this device's own rows; on the comm stream a barrier
                      (every device has pushed its partials of chunk i); the reduction stream
                      waits for the comm stream and the worker and writes
                      output = own partial + the received partials
    all-reduce:       that reduce-scatter over D blocks of the output chunk (along its outermost
                      axis the devices divide), then an all-gather of the reduced blocks by
                      copy engine: the comm stream waits for the reduction and pushes this
                      device's block into slot t-1 of device (rank + t) mod D's symmetric
                      gather buffer, barrier, and the reduction stream copies each received
                      block into place
    after the loop:   the caller's stream waits for the reduction stream

The own partial is written into the producer's partial buffer and the first add writes the output
(`output = own + received`): the same memory traffic as computing it into the output and adding in
place (`output += received`), with no rewrite of the op that changes ranks. The adds run on their
own stream so that with several chunks they overlap the next chunk's GEMMs even on one compute
stream. `chunks` splits the own GEMM and its adds into that many pieces, each add starting when
its piece is computed (0: one piece). A reduce-scatter's receive buffers are released for the
next run by a barrier on the comm stream at the start (`release=start`, the default: the first
push waits for a GEMM anyway) or on the caller's stream at the end (`release=end`); see
`symmetric_memory`. An all-reduce needs neither: its own all-gather barriers order every read
(`_release`).

A partial sum outside a stream loop, whose input no launch of the iteration computes, or whose
partial or output chunk has a dynamic shape (the uneven chunks of a stream axis that does not
divide its extent: the symmetric slots need one static block shape) keeps the NCCL lowering. One
that matches but cannot be split evenly (an all-reduce whose output chunk has no axis the devices
divide, `chunks` that divide no axis, a producer of several ops) is an error at the op: the
backend was asked for and cannot do what it promises.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import MemoryEffectKind, get_effects
from xdsl.utils.exceptions import PassFailedException

from hir.diagnostics import located
from hir.dialects import fusion, hir
from hir.dialects.parallel_encoding import layout_of
from hir.passes.symmetric_memory import (
    CommStreams,
    NotSplittable,
    Piece,
    add_launch,
    copy_launch,
    fork_comm_streams,
    index_constant,
    locate,
    named,
    only_used_in,
    ops_after,
    same_view,
    single_op,
    split_launch,
    view_root,
)

DEFAULT_PIECES = 1
"""Pieces of the own GEMM + add when `chunks` is 0: one, the configuration measured so far."""


@dataclass
class PartialSum:
    """A partial sum over the devices in a stream loop and the launch that computes its input."""

    launch: hir.LaunchOp
    """The resharding launch: `fusion.sum` over the didx axis of the partial."""
    producer: hir.LaunchOp
    summed_axis: int
    """Axis of the partial (local extent 1) that the sum reduces."""
    scatter_axis: int | None
    """Axis of the output that is sharded (reduce-scatter), None for an all-reduce."""
    mesh: tuple[int, ...]

    @property
    def partial(self) -> SSAValue:
        return self.producer.outs[0]

    @property
    def output(self) -> SSAValue:
        return self.launch.outs[0]


def reduce_over_copy_engine(function: func.FuncOp, chunks: int = 0, release: str = "auto") -> bool:
    """Rewrites the partial sums of every top-level `hir.stream_for` of `function`; True if any was."""
    changed = False
    for loop in [op for op in function.body.block.ops if isinstance(op, hir.StreamForOp)]:
        if any(isinstance(op, hir.BroadcastOp) and op.root is loop.induction_var for op in loop.body.block.ops):
            continue  # a loop over the devices' shards, which the all-gather lowering rotates by rank
        sums = [s for op in list(loop.body.block.ops) if (s := match_partial_sum(op, loop)) is not None]
        if sums:
            _rewrite_loop(function, loop, sums, chunks, _release(sums, release))
            changed = True
    return changed


def _release(sums: list[PartialSum], release: str) -> str:
    """
    `auto`: `start` when the loop reduce-scatters; nothing for all-reduces alone, whose all-gather
    barriers already order every read of a receive buffer before the peers' next pushes: a run's
    first push waits for a GEMM, which waits for the caller's stream, which waited at the end of
    the previous run for the reduction stream, which passed the last all-gather barrier after
    the peer's last reads; and the pushes into the gather buffers follow the first
    reduce-scatter barrier, which every device passes only after its caller's stream at entry.
    """
    if release != "auto":
        return release
    return "start" if any(ps.scatter_axis is not None for ps in sums) else "none"


def match_partial_sum(op: Operation, loop: hir.StreamForOp) -> PartialSum | None:
    """`op` as a partial sum this backend lowers, or None (the NCCL lowering takes it)."""
    if not isinstance(op, hir.LaunchOp) or not op.is_resharding or len(op.ins) != 1 or len(op.outs) != 1:
        return None
    body = [o for o in op.body.block.ops if not isinstance(o, hir.YieldOp)]
    if len(body) != 1 or not isinstance(total := body[0], fusion.SumOp):
        return None
    source, result = layout_of(total.x.type), layout_of(total.result.type)
    if source.didx_axis is None or total.axes != (source.didx_axis,):
        return None
    if source.mesh and result.mesh and source.mesh != result.mesh:
        return None  # two sharding changes: the NCCL lowering reports it
    mesh = result.mesh or source.mesh
    if len(mesh) < 2:
        return None
    if _dynamic(op.ins[0]) or _dynamic(op.outs[0]):
        return None  # uneven stream chunks: the NCCL lowering handles dynamic extents
    producer = _producer(op, loop)
    if producer is None:
        return None
    return PartialSum(op, producer, source.didx_axis, result.didx_axis, tuple(mesh))


def _dynamic(value: SSAValue) -> bool:
    return isinstance(value.type, MemRefType) and DYNAMIC_INDEX in value.type.get_shape()


def _producer(launch: hir.LaunchOp, loop: hir.StreamForOp) -> hir.LaunchOp | None:
    """The launch of this iteration that writes the sum's input, when nothing else touches its buffer."""
    partial = launch.ins[0]
    view = partial.owner
    if not isinstance(view, hir.AliasSelectOp | hir.AliasChunkOp) or view.index is not loop.induction_var:
        return None
    root = view_root(partial)
    if not isinstance(root.owner, hir.AllocateOp) or root.owner.parent_op() is loop or not only_used_in(root, loop):
        return None
    users: list[Operation] = []
    for use in root.uses:
        if not isinstance(use.operation, hir.AliasSelectOp | hir.AliasChunkOp):
            return None
        if not same_view(use.operation.result, partial):
            return None
        users += [u.operation for u in use.operation.result.uses]
    writers = [u for u in users if u is not launch]
    if len(writers) != 1 or not isinstance(producer := writers[0], hir.LaunchOp) or producer.is_resharding:
        return None
    if producer.parent_block() is not loop.body.block or not producer.is_before_in_block(launch):
        return None
    if (
        len(producer.outs) != 1
        or not same_view(producer.outs[0], partial)
        or any(same_view(v, partial) for v in producer.ins)
    ):
        return None
    return producer


@dataclass
class _Plan:
    """How one partial sum is lowered: the axes, the block of the output this device reduces, the pieces."""

    sum: PartialSum
    destination_axis: int
    """Axis of the partial split over the destinations."""
    output_axis: int
    """The same axis in the output: its didx axis (reduce-scatter) or the axis cut into blocks (all-reduce)."""
    block_shape: tuple[int, ...]
    pieces: int
    piece_axis: int
    """Axis of the partial (and, less the summed axis, of the block) cut into `pieces`."""


def _error(ps: PartialSum, what: str) -> PassFailedException:
    kind = "reduce-scatter" if ps.scatter_axis is not None else "all-reduce"
    return PassFailedException(located(ps.launch, f"the copy-engine {kind} {what}; lower it with backend=nccl"))


def _plan(ps: PartialSum, chunks: int) -> _Plan:
    devices = len(ps.mesh)
    output_type = ps.output.type
    assert isinstance(output_type, MemRefType)
    output_shape = list(output_type.get_shape())  # static: match_partial_sum leaves dynamic ones to NCCL
    if ps.scatter_axis is not None:
        output_axis = ps.scatter_axis
        block_shape = output_shape
    else:
        axes = [a for a, extent in enumerate(output_shape) if extent > 1 and extent % devices == 0]
        if not axes:
            raise _error(
                ps,
                f"cuts the output chunk into one block per device, but the {devices} devices of mesh "
                f"{list(ps.mesh)} divide no axis of {output_type} evenly",
            )
        output_axis = axes[0]
        block_shape = list(output_shape)
        block_shape[output_axis] //= devices
    s = ps.summed_axis
    destination_axis = output_axis + (output_axis >= s)
    try:
        single_op(ps.producer)
    except NotSplittable as reason:
        raise _error(ps, f"splits the partial's producer by destination, but {reason}") from None
    # Axes of the partial after the destination cut, as the block sees them (the summed one dropped).
    partial_type = ps.partial.type
    assert isinstance(partial_type, MemRefType)
    cut = list(partial_type.get_shape())
    cut[destination_axis] //= devices
    if [e for a, e in enumerate(cut) if a != s] != list(block_shape):
        raise _error(ps, f"needs the partial {partial_type} to be the output {output_type} with one more axis")
    candidates = [a for a in range(len(cut)) if a != s and cut[a] > 1]
    pieces = chunks or DEFAULT_PIECES
    if pieces == 1:
        return _Plan(ps, destination_axis, output_axis, tuple(block_shape), 1, candidates[0] if candidates else 0)
    dividing = [a for a in candidates if cut[a] % pieces == 0]
    if not dividing:
        raise _error(
            ps,
            f"cuts the own GEMM and its adds into chunks={pieces} pieces, which divide no axis of the "
            f"block {'x'.join(map(str, block_shape))}",
        )
    return _Plan(ps, destination_axis, output_axis, tuple(block_shape), pieces, dividing[0])


def _slots(plan: _Plan, loop: hir.StreamForOp, name: str) -> hir.AllocateOp:
    """A symmetric buffer of one slot per peer and iteration: [iterations, D-1, *block]."""
    assert isinstance(plan.sum.output.type, MemRefType)
    trips = loop.ub
    static = trips.owner.value.value.data if isinstance(trips.owner, arith.ConstantOp) else DYNAMIC_INDEX  # type: ignore[union-attr]
    shape = [static, len(plan.sum.mesh) - 1, *plan.block_shape]
    buffer = hir.AllocateOp(
        MemRefType(plan.sum.output.type.element_type, shape), [trips] if static == DYNAMIC_INDEX else [], symmetric=True
    )
    return named(buffer, name)


def _rewrite_loop(
    function: func.FuncOp, loop: hir.StreamForOp, sums: list[PartialSum], chunks: int, release: str
) -> None:
    plans = [_plan(ps, chunks) for ps in sums]
    for plan in plans:
        _check_movable(plan, loop)
    received = [_slots(plan, loop, "received") for plan in plans]
    gathered = [_slots(plan, loop, "gathered") if plan.sum.scatter_axis is None else None for plan in plans]
    buffers: list[Operation] = [*received, *[g for g in gathered if g is not None]]
    meshes = {plan.sum.mesh for plan in plans}
    mesh = meshes.pop() if len(meshes) == 1 else None
    if mesh is None:
        raise _error(sums[0], "lowers the partial sums of one loop on one mesh, but this loop has several")
    # A loop of one iteration releases at its first push (see `_rewrite_sum`): the comm stream's
    # first work is then a wait for the first GEMM, so the host launches that GEMM before the fork.
    at_first_push = release == "start" and loop.single_iteration() is not None
    streams = fork_comm_streams(loop, mesh, release, buffers, reduce=True, fork=not at_first_push)
    for k, (plan, recv, gather) in enumerate(zip(plans, received, gathered)):
        release_here = at_first_push and k == 0
        _rewrite_sum(plan, loop, streams, recv.result, gather.result if gather is not None else None, release_here)
    assert streams.reduce is not None
    join = hir.SynchronizeOp(streams.reduce)  # before anything after the loop reads the outputs
    join.location = loop.location
    Rewriter.insert_op(join, InsertPoint.after(loop))
    if release == "end":
        ret = function.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        barrier = hir.BarrierOp(mesh)
        barrier.location = loop.location
        Rewriter.insert_op(barrier, InsertPoint.before(ret))


def _check_movable(plan: _Plan, loop: hir.StreamForOp) -> None:
    """The producer's work moves to the sum's place: nothing in between may write what it reads."""
    producer, launch = plan.sum.producer, plan.sum.launch
    read = {view_root(v) for v in producer.ins}
    for op in ops_after(producer, loop.body.block):
        if op is launch:
            break
        if {view_root(v) for v in _written(op)} & read:
            raise _error(plan.sum, "moves the partial's producer to the sum, but an op in between writes its input")


def _used_later(ps: PartialSum) -> bool:
    """Whether an op after the sum in the iteration accesses the output's buffer."""
    root = view_root(ps.output)
    for op in ops_after(ps.launch, ps.launch.parent_block()):
        effects = get_effects(op)
        touched = (
            [v for v in op.operands if isinstance(v.type, MemRefType)]
            if effects is None
            else [e.value for e in effects if isinstance(e.value, SSAValue)]
        )
        if any(view_root(v) is root for v in touched):
            return True
    return False


def _written(op: Operation) -> list[SSAValue]:
    effects = get_effects(op)
    if effects is None:
        return [v for v in op.operands if isinstance(v.type, MemRefType)]
    return [e.value for e in effects if e.kind == MemoryEffectKind.WRITE and isinstance(e.value, SSAValue)]


def _index_block(name: str) -> Block:
    block = Block(arg_types=[IndexType()])
    block.args[0].name_hint = name
    return block


def _for(first: SSAValue, end: SSAValue, step: SSAValue, block: Block, ops: list[Operation]) -> hir.ForOp:
    block.add_ops(ops)
    return hir.ForOp(first, end, step, block)


def _rewrite_sum(
    plan: _Plan,
    loop: hir.StreamForOp,
    streams: CommStreams,
    received: SSAValue,
    gathered: SSAValue | None,
    release_at_first_push: bool = False,
) -> None:
    """
    The partial sum's pipeline in place of its launch. With `release_at_first_push` (the comm
    stream not forked before the loop), the first peer's step is peeled out of the loop over the
    peers: its GEMM, then on the comm stream the wait for it, the release barrier, the push.
    """
    ps = plan.sum
    devices = len(ps.mesh)
    i, worker, rank, comm = loop.induction_var, loop.worker, streams.rank, streams.comm
    reduce = streams.reduce
    assert reduce is not None
    s = ps.summed_axis
    c0, c1, c_devices = index_constant(0), index_constant(1), index_constant(devices)
    ops: list[Operation] = [c0, c1, c_devices]

    # The partials destined for the peers, in rotated order, each pushed as soon as it is computed.
    def remote_step(t: SSAValue, release: bool) -> list[Operation]:
        total = arith.AddiOp(rank, t)
        destination = named(arith.RemUIOp(total.result, c_devices.result), "to")
        views, gemm = split_launch(ps.producer, [Piece(plan.destination_axis, destination.result, devices)], "to")
        peer = hir.PeerViewOp(received, destination.result, ps.mesh)
        peer_chunk = hir.AliasSelectOp(peer.result, i, 0)
        # Slot t-1 of the peer's receive buffer (slot 0 for the peeled first step).
        slot_index: list[Operation] = [] if t is c1.result else [arith.SubiOp(t, c1.result)]
        k = c0.result if t is c1.result else slot_index[0].results[0]
        slot = named(hir.AliasSelectOp(peer_chunk.result, k, 0), "slot")
        partial = named(hir.AliasSelectOp(gemm.outs[0], c0.result, s), "partial")  # without the summed axis
        wait = [hir.SetCurrentStreamOp(comm), hir.SynchronizeOp(worker)]
        if release:  # the peers' reads of the last run are done: see `_release`
            wait.append(hir.BarrierOp(ps.mesh))
        return [
            total,
            destination,
            *views,
            gemm,
            *wait,
            peer,
            peer_chunk,
            *slot_index,
            slot,
            partial,
            copy_launch(partial.result, slot.result),
            hir.SetCurrentStreamOp(worker),
        ]

    first = c1.result
    if release_at_first_push:
        ops += remote_step(c1.result, release=True)
        if devices > 2:
            second = index_constant(2)
            ops.append(second)
            first = second.result
    if not release_at_first_push or devices > 2:
        remote = _index_block("t")
        ops.append(_for(first, c_devices.result, c1.result, remote, remote_step(remote.args[0], release=False)))

    # Every device has pushed its partials of chunk i once the comm stream passes this barrier.
    ops += [hir.SetCurrentStreamOp(comm), hir.BarrierOp(ps.mesh), hir.SetCurrentStreamOp(reduce)]
    ops += [hir.SynchronizeOp(comm), hir.SetCurrentStreamOp(worker)]

    # This device's own partial, then on the reduction stream: block = own + received partials.
    block = ps.output
    if ps.scatter_axis is None:
        block_view = named(hir.AliasChunkOp(ps.output, rank, plan.output_axis, devices), "block")
        ops.append(block_view)
        block = block_view.result
    mine = hir.AliasSelectOp(received, i, 0)
    mine.result.name_hint = "received_i"
    ops.append(mine)
    ops += _own_and_adds(plan, worker, reduce, rank, block, mine.result, c0.result, c1.result)

    if gathered is not None:
        ops += _gather(plan, loop, streams, block, gathered, c0.result, c1.result, c_devices.result)
    if _used_later(ps):  # the worker reads or writes the output after the sum: it waits for the adds
        ops.append(hir.SynchronizeOp(reduce))

    locate(ops, ps.launch)
    Rewriter.insert_op(ops, InsertPoint.before(ps.launch))
    partial_view = ps.launch.ins[0]
    Rewriter.erase_op(ps.launch)
    Rewriter.erase_op(ps.producer)
    if isinstance(partial_view.owner, hir.AliasSelectOp | hir.AliasChunkOp) and not partial_view.uses:
        Rewriter.erase_op(partial_view.owner)


def _own_and_adds(
    plan: _Plan,
    worker: SSAValue,
    reduce: SSAValue,
    rank: SSAValue,
    block: SSAValue,
    received: SSAValue,
    c0: SSAValue,
    c1: SSAValue,
) -> list[Operation]:
    """The own partial on the worker (in pieces), each piece added up on the reduction stream."""
    ps = plan.sum
    devices = len(ps.mesh)
    own = Piece(plan.destination_axis, rank, devices)
    block_axis = plan.piece_axis - (plan.piece_axis > ps.summed_axis)

    def piece_ops(piece: Piece | None) -> list[Operation]:
        views, gemm = split_launch(ps.producer, [own] if piece is None else [own, piece], "own")
        ops: list[Operation] = [*views, gemm, hir.SetCurrentStreamOp(reduce), hir.SynchronizeOp(worker)]
        own_partial = named(hir.AliasSelectOp(gemm.outs[0], c0, ps.summed_axis), "own")
        ops.append(own_partial)
        out = block
        if piece is not None:
            chunk = hir.AliasChunkOp(block, piece.index, block_axis, piece.count)
            ops.append(chunk)
            out = chunk.result

        def slot(k: SSAValue) -> tuple[list[Operation], SSAValue]:
            view = named(hir.AliasSelectOp(received, k, 0), "arrived")
            if piece is None:
                return [view], view.result
            chunk = hir.AliasChunkOp(view.result, piece.index, block_axis, piece.count)
            return [view, chunk], chunk.result

        first, first_slot = slot(c0)
        ops += [*first, add_launch(own_partial.result, first_slot, out)]
        if devices > 2:  # the other received partials, added in place
            more = _index_block("k")
            rest, rest_slot = slot(more.args[0])
            last = index_constant(devices - 1)
            ops += [last, _for(c1, last.result, c1, more, [*rest, add_launch(out, rest_slot, out)])]
        ops.append(hir.SetCurrentStreamOp(worker))
        return ops

    if plan.pieces == 1:
        return piece_ops(None)
    count, step = index_constant(plan.pieces), index_constant(1)
    zero = index_constant(0)
    pieces = _index_block("piece")
    body = piece_ops(Piece(plan.piece_axis, pieces.args[0], plan.pieces))
    return [zero, count, step, _for(zero.result, count.result, step.result, pieces, body)]


def _gather(
    plan: _Plan,
    loop: hir.StreamForOp,
    streams: CommStreams,
    block: SSAValue,
    gathered: SSAValue,
    c0: SSAValue,
    c1: SSAValue,
    c_devices: SSAValue,
) -> list[Operation]:
    """All-reduce: push the reduced block to every peer, barrier, copy the peers' blocks into place."""
    ps = plan.sum
    devices = len(ps.mesh)
    i, worker, rank, comm, reduce = loop.induction_var, loop.worker, streams.rank, streams.comm, streams.reduce
    assert reduce is not None
    ops: list[Operation] = [hir.SetCurrentStreamOp(comm), hir.SynchronizeOp(reduce)]

    push = _index_block("t")
    t = push.args[0]
    total = arith.AddiOp(rank, t)
    destination = named(arith.RemUIOp(total.result, c_devices), "to")
    peer = hir.PeerViewOp(gathered, destination.result, ps.mesh)
    peer_chunk = hir.AliasSelectOp(peer.result, i, 0)
    slot_index = arith.SubiOp(t, c1)
    slot = named(hir.AliasSelectOp(peer_chunk.result, slot_index.result, 0), "slot")
    ops.append(
        _for(
            c1,
            c_devices,
            c1,
            push,
            [total, destination, peer, peer_chunk, slot_index, slot, copy_launch(block, slot.result)],
        )
    )
    ops += [hir.BarrierOp(ps.mesh), hir.SetCurrentStreamOp(reduce), hir.SynchronizeOp(comm)]

    place = _index_block("t")
    t = place.args[0]
    ahead = arith.AddiOp(rank, c_devices)
    behind = arith.SubiOp(ahead.result, t)
    source = named(arith.RemUIOp(behind.result, c_devices), "from")
    into = named(hir.AliasChunkOp(ps.output, source.result, plan.output_axis, devices), "into")
    mine = named(hir.AliasSelectOp(gathered, i, 0), "gathered_i")
    slot_index = arith.SubiOp(t, c1)
    arrived = named(hir.AliasSelectOp(mine.result, slot_index.result, 0), "arrived")
    ops.append(
        _for(
            c1,
            c_devices,
            c1,
            place,
            [ahead, behind, source, into, mine, slot_index, arrived, copy_launch(arrived.result, into.result)],
        )
    )
    ops.append(hir.SetCurrentStreamOp(worker))
    return ops
