"""
The copy-engine backend of `hir-lower-communication` (`backend=copy-engine`): a host loop over the
devices' shards (didx -> stream: iteration i needs device i's shard, lowered to
`hir.broadcast ... root %i`) becomes peer-to-peer *pushes* into symmetric memory, which the GPU's
copy engines carry over NVLink without taking SMs from the compute, instead of a collective kernel:

    before the loops:  %rank = hir.device_index; the slot buffer becomes symmetric; a dedicated
                       comm stream (pool stream num_streams) forks from the caller's stream
    in the loop:       iteration i works on device d = (i + rank) mod D, so every device starts
                       with its own shard at once (nvFuser's offset_stream_indexing_by_rank),
                       and that first iteration is peeled so its GEMM is enqueued first;
                       if d != rank: on the comm stream, copy the local shard into slot `rank`
                       of device (rank - i) mod D's symmetric buffer (a copy-engine write over
                       NVLink), hir.barrier (every device has received shard d), and the worker
                       stream waits for the comm stream; consumers read slot d, or the local
                       shard itself when d == rank (no copy at all)
    at the end:        the caller's stream waits for the comm stream, then hir.barrier, so no
                       device writes into a peer's buffer again while the peer may still read it

Pushing rather than pulling avoids staging the shard into symmetric memory first: that local copy
runs on SMs and would queue behind the first GEMM.

Rotating iterations is only valid for one-sided transfers: with NCCL every device must post the
broadcasts with the same roots in the same order, so the nccl backend keeps `root %i`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, TensorType, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from hir.dialects import fusion, hir
from hir.dialects.hir.buffers import select_result_type
from hir.dialects.shape_rules import operand_axis_to_result_axis
from hir.passes.copy_engine_shard_reduce import (
    ShardReduction,
    receive_buffer,
    rewrite_shard_reduction,
    shard_reduction_of,
)
from hir.passes.symmetric_memory import (
    byte_width,
    copy_launch,
    fork_comm_streams,
    index_constant,
    only_used_in,
    ops_after,
    same_view,
)


def exchange_shards_over_copy_engine(function: func.FuncOp, chunks: int = 0, release: str = "auto") -> bool:
    """
    Rewrites every didx -> stream broadcast loop (a `hir.stream_for`) of `function`; True if any
    was. `chunks` splits each remote shard into that many pushes, each consumed as soon as it
    lands (0: chosen from the sizes, see `auto_chunks`). `release` places the barrier that frees
    the slots for the next run (`auto`: `end`, measured better here; see `symmetric_memory`).
    """
    changed = False
    for loop in [op for op in function.body.block.ops if isinstance(op, hir.StreamForOp)]:
        changed |= _rewrite_loop(function, loop, chunks, "end" if release == "auto" else release)
    return changed


CHUNK_BYTES = 32 * 2**20
MAX_CHUNKS = 4
LINK_BYTES_PER_S = 370e9
"""A push over NVLink between 2x H200 (NV18): 32 MiB in about 0.09 ms (docs/benchmarks.md)."""
GEMM_FLOPS_PER_S = 790e12
"""A bf16 GEMM on one H200: 16384x4096x8192 in about 1.39 ms."""
ONE_PUSH_MARGIN = 1.33


def auto_chunks(shard: MemRefType, consumer_flops: int = 0) -> int:
    """
    Pushes per shard. One when the consumer's GEMM on the local shard outlasts the push of a
    shard by ONE_PUSH_MARGIN: the remote GEMM then finds its shard landed, and every extra push
    only adds a barrier (on 2x H200, 1 push beat 4 on 128 MiB shards with N = 4096). Otherwise
    pushes of about CHUNK_BYTES, at most MAX_CHUNKS, dividing the outer extent, so that the remote
    GEMM starts after the first one lands (2 and 4 beat 1 on 128-268 MiB shards with N <= 2048).
    The estimate uses the rates of `LINK_BYTES_PER_S` and `GEMM_FLOPS_PER_S`. A 0-d shard (the
    slot of a 1-D value) has no axis to cut: one push.
    """
    if not shard.get_shape():
        return 1
    extent = shard.get_shape()[0]
    size = extent * _row_bytes(shard)
    if consumer_flops / GEMM_FLOPS_PER_S >= ONE_PUSH_MARGIN * size / LINK_BYTES_PER_S:
        return 1
    wanted = max(1, min(MAX_CHUNKS, size // CHUNK_BYTES))
    while wanted > 1 and extent % wanted:
        wanted -= 1
    return wanted


def consumer_flops(op: fusion.FusionOp) -> int:
    """
    Multiply-adds x 2 of `op` on its whole operands: each result element takes one multiply-add
    per element of the axes of operand #0 that map to no result axis (a matmul's K), so 2 per
    element for an elementwise op.
    """
    mapped = {a for sources in op.axis_map() for k, a in sources if k == 0}
    first = op.operands[0].type
    result = op.results[0].type
    assert isinstance(first, TensorType)
    assert isinstance(result, TensorType)
    if DYNAMIC_INDEX in first.get_shape() or DYNAMIC_INDEX in result.get_shape():
        return 0
    contracted = 1
    for a, extent in enumerate(first.get_shape()):
        if a not in mapped:
            contracted *= extent
    elements = 1
    for extent in result.get_shape():
        elements *= extent
    return 2 * elements * contracted


def _row_bytes(t: MemRefType) -> int:
    count = 1
    for extent in t.get_shape()[1:]:
        count *= extent
    return count * byte_width(t)


@dataclass
class ShardExchange:
    """One broadcast of the loop: its local shard, its slot view `G[i]` and the slot buffer G."""

    broadcast: hir.BroadcastOp
    slot_view: hir.AliasSelectOp
    slots: SSAValue
    symmetric_type: MemRefType
    """The symmetric buffer that replaces G: G's own type, or [D, *shard] where a slot of G is
    not laid out as the local shard is (G is used only in the loop, so its layout is free)."""
    axis: int
    """The slot axis of the symmetric buffer."""


def shard_exchange_of(broadcast: hir.BroadcastOp, loop: hir.StreamForOp) -> ShardExchange | None:
    view = broadcast.output.owner
    if not isinstance(view, hir.AliasSelectOp) or view.index is not loop.induction_var:
        return None
    slots = view.buffer
    if not isinstance(slots.owner, hir.AllocateOp) or slots.owner.parent_block() is loop.body.block:
        return None
    assert isinstance(slots.type, MemRefType)
    if DYNAMIC_INDEX in slots.type.get_shape():
        return None
    if not only_used_in(slots, loop):
        return None  # the gathered buffer is needed after the loop: keep every slot written
    views = [use.operation for use in slots.uses]
    if any(not isinstance(v, hir.AliasSelectOp) or not same_view(v.result, broadcast.output) for v in views):
        return None  # another access to the slots (a chunk of the same rows, say) would read nothing
    if broadcast.input.type == broadcast.output.type:
        return ShardExchange(broadcast, view, slots, slots.type, view.axis_value)
    # The slots as the outermost axis: a slot is then laid out as a contiguous shard.
    shard = broadcast.input.type
    assert isinstance(shard, MemRefType)
    packed = MemRefType(shard.element_type, [slots.type.get_shape()[view.axis_value], *shard.get_shape()])
    if select_result_type(packed, 0) != shard:
        return None
    return ShardExchange(broadcast, view, slots, packed, 0)


def shard_exchanges(
    loop: hir.StreamForOp, reductions: list[ShardReduction] | None = None
) -> tuple[tuple[int, ...], list[ShardExchange]] | None:
    """
    The mesh and the broadcasts by shard (`root %i`) of a didx -> stream loop, when a backend may
    rotate its iterations by rank, else None: every collective of the body is such a broadcast
    (rotating would post any other out of step with the peers), all on one mesh, each into a
    slot `G[i]` of a buffer used only in the loop. With a `reductions` list, sums by shard
    (`hir.reduce sum ... root %i`, the reduce-scatter of the same pipeline) may be there too, or
    alone (no broadcast: the loop of a row-parallel GEMM whose input is already whole on every
    device): they are appended to it.
    """
    body = loop.body.block
    broadcasts = [op for op in body.ops if isinstance(op, hir.BroadcastOp) and op.root is loop.induction_var]
    sums = [s for op in body.ops if (s := shard_reduction_of(op, loop)) is not None] if reductions is not None else []
    if not broadcasts and not sums:
        return None  # a loop by shard of sums alone (a row-parallel GEMM after per-device work) is lowered too
    summed = {s.reduce for s in sums}
    if any(isinstance(op, hir.CommunicationOp) and op not in broadcasts and op not in summed for op in body.ops):
        return None
    exchanges = [shard_exchange_of(b, loop) for b in broadcasts]
    meshes = {b.mesh_ids for b in broadcasts} | {s.reduce.mesh_ids for s in sums}
    if len(meshes) != 1 or any(e is None for e in exchanges):
        return None
    layouts = {(e.slots, e.symmetric_type) for e in exchanges if e is not None}
    if len(layouts) != len({slots for slots, _ in layouts}):
        return None  # broadcasts into one slot buffer that want it laid out differently
    if reductions is not None:
        reductions += sums
    return meshes.pop(), [e for e in exchanges if e is not None]


def rotate_by_rank(loop: hir.StreamForOp, rank: SSAValue) -> SSAValue:
    """
    Iteration i of `loop` works on device d = (i + rank) mod ub instead of i, so every device
    starts with its own shard (nvFuser's offset_stream_indexing_by_rank): `d` at the start of the
    body, and every use of the induction variable in the body after it reads d.
    """
    iv, body = loop.induction_var, loop.body.block
    total = arith.AddiOp(iv, rank)
    device = arith.RemUIOp(total.result, loop.ub)
    device.result.name_hint = "d"
    Rewriter.insert_op([total, device], InsertPoint.at_start(body))
    for op in ops_after(device, body):  # the work
        if iv in op.operands:
            op.operands = [device.result if o is iv else o for o in op.operands]
    return device.result


def _rewrite_loop(function: func.FuncOp, loop: hir.StreamForOp, chunks: int, release: str) -> bool:
    reductions: list[ShardReduction] = []
    if (found := shard_exchanges(loop, reductions)) is None:
        return False
    mesh, exchanges = found

    # Before the loop: this device's index, the comm stream (forked from the caller's stream
    # before the worker streams are), and symmetric slot buffers in place of the plain ones.
    symmetric: dict[SSAValue, SSAValue] = {}
    buffers: list[Operation] = []
    for exchange in exchanges:
        if exchange.slots not in symmetric:
            buffer = hir.AllocateOp(exchange.symmetric_type, symmetric=True)
            buffer.result.name_hint = f"{exchange.slots.name_hint or 'slots'}_symmetric"
            buffers.append(buffer)
            symmetric[exchange.slots] = buffer.result
    received = [receive_buffer(r, len(mesh)) for r in reductions]
    streams = fork_comm_streams(loop, mesh, release, [*buffers, *received], reduce=bool(reductions))
    rank, comm = streams.rank, streams.comm
    if not exchanges and streams.reduce is not None:
        # No broadcast, so no worker waits for the comm stream: the pushes must follow the release
        # barrier at the start (release=start) by themselves, or a peer's pushes of this run could
        # overwrite partials this device still adds up from the previous one.
        wait = [hir.SetCurrentStreamOp(streams.reduce), hir.SynchronizeOp(comm), hir.SetCurrentStreamOp(loop.main)]
        for op in wait:
            op.location = loop.location
        Rewriter.insert_op(wait, InsertPoint.before(loop))

    # In the loop: work on device d = (i + rank) mod D; push to device (rank - i) mod D.
    iv, trips = loop.induction_var, loop.ub
    device = rotate_by_rank(loop, rank)
    ahead = arith.AddiOp(rank, trips)
    behind = arith.SubiOp(ahead.result, iv)
    target = arith.RemUIOp(behind.result, trips)
    target.result.name_hint = "to"
    Rewriter.insert_op([ahead, behind, target], InsertPoint.after(device.owner))  # type: ignore[arg-type]

    for exchange in exchanges:
        _rewrite_broadcast(
            exchange,
            symmetric[exchange.slots],
            device,
            target.result,
            rank,
            comm,
            loop,
            chunks,
        )
    for reduction, buffer in zip(reductions, received):
        rewrite_shard_reduction(reduction, buffer.result, loop, streams, device, mesh)
    for old in symmetric:
        if not old.uses:
            Rewriter.erase_op(old.owner)  # type: ignore[arg-type]

    # Enqueue the first iteration's GEMM, on the local shard, as straight-line code right after the fork.
    loop.properties["peel_first"] = UnitAttr()

    # At the end: wait for the comm stream, and (release=end) meet once more, so no device pushes
    # into a peer's buffer (in its next run) while the peer may still read it.
    ret = function.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    end: list[Operation] = [hir.SynchronizeOp(comm)]
    if release == "end":
        end.append(hir.BarrierOp(mesh))
    Rewriter.insert_op(end, InsertPoint.before(ret))
    return True


def _rewrite_broadcast(
    exchange: ShardExchange,
    symmetric: SSAValue,
    device: SSAValue,
    target: SSAValue,
    rank: SSAValue,
    comm: SSAValue,
    loop: hir.StreamForOp,
    chunks: int,
) -> None:
    broadcast, view = exchange.broadcast, exchange.slot_view
    axis = exchange.axis
    mesh = broadcast.mesh_ids
    remote = arith.CmpiOp(device, rank, "ne")
    remote.result.name_hint = "remote"
    peer = hir.PeerViewOp(symmetric, target, mesh)
    peer_slot = hir.AliasSelectOp(peer.result, rank, axis)
    received = hir.AliasSelectOp(symmetric, device, axis)
    received.result.name_hint = "received"
    assert isinstance(broadcast.input.type, MemRefType)
    count = chunks or auto_chunks(broadcast.input.type, _consumer_flops(broadcast, loop))
    if count > 1 and (plan := _chunk_plan(broadcast, loop, count)) is not None:
        _rewrite_chunked(broadcast, view, plan, remote, peer, peer_slot, received, comm, loop, count)
        return
    then = Block()
    then.add_ops(
        [
            hir.SetCurrentStreamOp(comm),
            peer,
            peer_slot,
            copy_launch(broadcast.input, peer_slot.result),
            hir.BarrierOp(mesh),
            hir.SetCurrentStreamOp(loop.worker),
            hir.SynchronizeOp(comm),
            scf.YieldOp(),
        ]
    )
    push = scf.IfOp(remote.result, [], Region(then))
    shard = arith.SelectOp(remote.result, received.result, broadcast.input)
    shard.result.name_hint = "shard"
    Rewriter.insert_op([remote, push, received, shard], InsertPoint.before(broadcast))

    read_shard_instead(broadcast, view, loop, shard.result)


def read_shard_instead(
    broadcast: hir.BroadcastOp, view: hir.AliasSelectOp, loop: hir.StreamForOp, shard: SSAValue
) -> None:
    """
    Readers of the broadcast's slot read `shard` (the received one, or the local one in place),
    nested ones too (another slot's chunked rewrite may already have moved the consumer into an
    `scf.if`); then the broadcast goes.
    """
    body = loop.body.block
    for later in list(ops_after(broadcast, body)):
        for reader in later.walk():
            if any(same_view(o, broadcast.output) for o in reader.operands):
                reader.operands = [shard if same_view(o, broadcast.output) else o for o in reader.operands]
    erase_broadcast(broadcast, view, body)


def _consumer_flops(broadcast: hir.BroadcastOp, loop: hir.StreamForOp) -> int:
    """The work of the one single-op launch that reads the slot (0 when there is no such reader)."""
    readers = [
        op for op in ops_after(broadcast, loop.body.block) if any(same_view(o, broadcast.output) for o in op.operands)
    ]
    if len(readers) != 1 or not isinstance(readers[0], hir.LaunchOp):
        return 0
    ops = [o for o in readers[0].body.block.ops if isinstance(o, fusion.FusionOp)]
    return consumer_flops(ops[0]) if len(ops) == 1 else 0


@dataclass
class _ChunkPlan:
    """How the single consumer launch of a slot splits into chunks: the axis of each operand and of the result."""

    reader: hir.LaunchOp
    operand_axes: list[int | None]
    result_axis: int


def _chunk_plan(broadcast: hir.BroadcastOp, loop: hir.StreamForOp, count: int) -> _ChunkPlan | None:
    """Chunk the slot's outer axis; the consumer must be one launch of one fusion op that maps it."""
    body = loop.body.block
    readers = [op for op in ops_after(broadcast, body) if any(same_view(o, broadcast.output) for o in op.operands)]
    if len(readers) != 1 or not isinstance(reader := readers[0], hir.LaunchOp) or len(reader.outs) != 1:
        return None
    ops = [o for o in reader.body.block.ops if not isinstance(o, hir.YieldOp)]
    if len(ops) != 1 or not isinstance(op := ops[0], fusion.FusionOp):
        return None
    args = list(reader.body.block.args)
    slot_args = [args[i] for i, v in enumerate(reader.ins) if same_view(v, broadcast.output)]
    if len(slot_args) != 1 or slot_args[0] not in op.operands:
        return None
    k = list(op.operands).index(slot_args[0])
    result_axis = operand_axis_to_result_axis(op.axis_map(), k, 0)
    if result_axis is None:
        return None
    sources = dict(op.axis_map()[result_axis])
    operand_axes: list[int | None] = []
    for j, operand in enumerate(op.operands):
        a = sources.get(j)
        assert isinstance(operand.type, TensorType)
        if a is not None and (operand.type.get_shape()[a] % count or operand.type.get_shape()[a] == DYNAMIC_INDEX):
            return None
        operand_axes.append(a)
    out_type = reader.outs[0].type
    assert isinstance(out_type, MemRefType)
    if out_type.get_shape()[result_axis] % count:
        return None
    return _ChunkPlan(reader, operand_axes, result_axis)


def _chunked_launch(plan: _ChunkPlan, ins: list[SSAValue], out: SSAValue) -> hir.LaunchOp:
    """The plan's consumer launch on chunk views `ins` -> `out` (same op, chunk-sized types)."""
    op = next(o for o in plan.reader.body.block.ops if isinstance(o, fusion.FusionOp))
    block = Block(arg_types=[hir.tensor_type_of(v.type) for v in ins])  # type: ignore[arg-type]
    args = dict(zip(plan.reader.body.block.args, block.args))
    assert isinstance(out.type, MemRefType)
    clone = type(op).create(
        operands=[args[o] for o in op.operands],
        result_types=[hir.tensor_type_of(out.type)],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    block.add_ops([clone, hir.YieldOp(clone.results[0])])
    launch = hir.LaunchOp(ins, [out], Region(block))
    launch.location = plan.reader.location
    return launch


def _rewrite_chunked(
    broadcast: hir.BroadcastOp,
    view: hir.AliasSelectOp,
    plan: _ChunkPlan,
    remote: arith.CmpiOp,
    peer: hir.PeerViewOp,
    peer_slot: hir.AliasSelectOp,
    received: hir.AliasSelectOp,
    comm: SSAValue,
    loop: hir.StreamForOp,
    count: int,
) -> None:
    """
    Remote iteration: `count` pushes of the shard's outer chunks, each followed by a barrier and
    by the consumer on that chunk (so it starts when its chunk lands); local iteration: the
    consumer on the local shard, whole.
    """
    reader = plan.reader
    region_args = list(reader.body.block.args)
    op = next(o for o in reader.body.block.ops if isinstance(o, fusion.FusionOp))
    zero, step, trips = index_constant(0), index_constant(1), index_constant(count)
    body = Block(arg_types=[IndexType()])
    c = body.args[0]
    c.name_hint = "chunk"
    source_chunk = hir.AliasChunkOp(broadcast.input, c, 0, count)
    target_chunk = hir.AliasChunkOp(peer_slot.result, c, 0, count)
    body.add_ops(
        [
            hir.SetCurrentStreamOp(comm),
            source_chunk,
            target_chunk,
            copy_launch(source_chunk.result, target_chunk.result),
            hir.BarrierOp(broadcast.mesh_ids),
            hir.SetCurrentStreamOp(loop.worker),
            hir.SynchronizeOp(comm),
        ]
    )
    chunk_ins: list[SSAValue] = []
    for value, arg in zip(reader.ins, region_args):
        source = received.result if same_view(value, broadcast.output) else value
        axis = plan.operand_axes[list(op.operands).index(arg)] if arg in op.operands else None
        if axis is None:
            chunk_ins.append(source)
            continue
        chunk = hir.AliasChunkOp(source, c, axis, count)
        body.add_op(chunk)
        chunk_ins.append(chunk.result)
    out_chunk = hir.AliasChunkOp(reader.outs[0], c, plan.result_axis, count)
    body.add_ops([out_chunk, _chunked_launch(plan, chunk_ins, out_chunk.result)])
    pushes = hir.ForOp(zero.result, trips.result, step.result, body)

    then = Block()
    then.add_ops([peer, peer_slot, received, pushes, scf.YieldOp()])
    local = Block()
    local_ins = [broadcast.input if same_view(v, broadcast.output) else v for v in reader.ins]
    local.add_ops([_chunked_launch(plan, local_ins, reader.outs[0]), scf.YieldOp()])
    branch = scf.IfOp(remote.result, [], Region(then), Region(local))
    Rewriter.insert_op([remote, zero, step, trips, branch], InsertPoint.before(reader))
    Rewriter.erase_op(reader)
    erase_broadcast(broadcast, view, loop.body.block)


def erase_broadcast(broadcast: hir.BroadcastOp, view: hir.AliasSelectOp, body: Block) -> None:
    """Drops the replaced broadcast, its waits, and the views of the old slot buffer left unused."""
    for wait in [use.operation for use in broadcast.result.uses]:
        Rewriter.erase_op(wait)
    Rewriter.erase_op(broadcast)
    for other in [o for o in body.ops if isinstance(o, hir.AliasSelectOp) and o.buffer is view.buffer]:
        if not other.result.uses:
            Rewriter.erase_op(other)
