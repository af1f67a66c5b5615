"""
The ring backend (`backend=ring`) of a host loop over the devices' shards (didx -> stream:
iteration i needs device i's shard, lowered to `hir.broadcast ... root %i`): nvFuser's ring-based
all-gather + GEMM pipeline, where every device computes on the shard it holds while it passes the
shard on to its neighbour, so the GEMM on a shard starts as soon as it arrives.

    before the loop:  %rank = hir.device_index; a comm stream forked from the caller's stream
    in the loop:      iteration i works on device d = (i + rank) mod D, so every device starts
                      with its own shard (the copy-engine backend's rotation), and that first
                      iteration is peeled so its GEMM is enqueued first; in iteration i >= 1, on
                      the comm stream, one `hir.collective_permute` of offset D - 1 sends the
                      shard of iteration i - 1 (the local shard when i = 1, else slot
                      (d - 1) mod D) to the previous device and receives shard d into slot d from
                      the next device, which worked on it in iteration i - 1; the worker stream
                      waits for the comm stream; consumers read slot d, or the local shard in
                      place when d == rank
    at the end:       nothing: each iteration's worker waited for the comm stream after its
                      step, and the caller's stream joins the worker at the end of the iteration

Each device receives D - 1 shards in D - 1 steps, as the ring all-gather does, but consumes each
in its own iteration. All devices post the permutes in the same order, one per iteration, so the
rotation keeps the two-sided transfers matched. The permutes run in order on the comm stream: step
i sends what step i - 1 received, and every slot is written once a run, so no step overwrites a
slot still being read.

The loop must count 0 .. D - 1 by 1 (the loop over the didx axis that convert-fusion-to-hir
makes); any other loop keeps its broadcasts, as do the cases the copy-engine backend leaves
(`shard_exchanges`).
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from hir.dialects import hir
from hir.dialects.hir.base import constant_index
from hir.passes.copy_engine import ShardExchange, read_shard_instead, rotate_by_rank, shard_exchanges
from hir.passes.symmetric_memory import fork_comm_streams, index_constant


def exchange_shards_over_ring(function: func.FuncOp) -> bool:
    """
    Rewrites every didx -> stream broadcast loop (a `hir.stream_for`) of `function`, as the
    copy-engine backend does (convert-fusion-to-hir makes those broadcasts); True if any was.
    """
    changed = False
    for loop in [op for op in function.body.block.ops if isinstance(op, hir.StreamForOp)]:
        changed |= _rewrite_loop(loop)
    return changed


def _rewrite_loop(loop: hir.StreamForOp) -> bool:
    if (found := shard_exchanges(loop)) is None:
        return False
    mesh, exchanges = found
    devices = len(mesh)
    if devices < 2 or constant_index(loop.lb) != 0 or constant_index(loop.step) != 1:
        return False
    if constant_index(loop.ub) != devices:
        return False

    # Slot buffers whose slot is not laid out as the local shard are replaced by [D, *shard] ones.
    packed: dict[SSAValue, SSAValue] = {}
    buffers: list[Operation] = []
    for exchange in exchanges:
        if exchange.symmetric_type != exchange.slots.type and exchange.slots not in packed:
            buffer = hir.AllocateOp(exchange.symmetric_type)
            buffer.result.name_hint = exchange.slots.name_hint
            buffers.append(buffer)
            packed[exchange.slots] = buffer.result
    streams = fork_comm_streams(loop, mesh, "end", buffers)
    device = rotate_by_rank(loop, streams.rank)
    for exchange in exchanges:
        slots = packed.get(exchange.slots, exchange.slots)
        _rewrite_broadcast(exchange, slots, device, streams.rank, streams.comm, loop, devices)
    for old in packed:
        if not old.uses:
            Rewriter.erase_op(old.owner)  # type: ignore[arg-type]
    loop.properties["peel_first"] = UnitAttr()
    return True


def _rewrite_broadcast(
    exchange: ShardExchange,
    slots: SSAValue,
    device: SSAValue,
    rank: SSAValue,
    comm: SSAValue,
    loop: hir.StreamForOp,
    devices: int,
) -> None:
    broadcast, view = exchange.broadcast, exchange.slot_view
    axis, mesh, local = exchange.axis, broadcast.mesh_ids, broadcast.input

    remote = arith.CmpiOp(device, rank, "ne")
    remote.result.name_hint = "remote"
    received = hir.AliasSelectOp(slots, device, axis)
    received.result.name_hint = "received"

    # The shard of the previous iteration, (d - 1) mod D: the local one right after the first.
    back = index_constant(devices - 1)
    behind = arith.AddiOp(device, back.result)
    previous = arith.RemUIOp(behind.result, loop.ub)
    previous.result.name_hint = "previous"
    was_local = arith.CmpiOp(previous.result, rank, "eq")
    previous_slot = hir.AliasSelectOp(slots, previous.result, axis)
    send = arith.SelectOp(was_local.result, local, previous_slot.result)
    send.result.name_hint = "passed_on"
    step = hir.CollectivePermuteOp(send.result, received.result, devices - 1, mesh)
    then = Block()
    ops: list[Operation] = [
        hir.SetCurrentStreamOp(comm),
        back,
        behind,
        previous,
        was_local,
        previous_slot,
        send,
        step,
        hir.WaitOp(step.result),
        hir.SetCurrentStreamOp(loop.worker),
        hir.SynchronizeOp(comm),
        scf.YieldOp(),
    ]
    for op in ops:
        op.location = broadcast.location
    then.add_ops(ops)
    passing = scf.IfOp(remote.result, [], Region(then))
    shard = arith.SelectOp(remote.result, received.result, local)
    shard.result.name_hint = "shard"
    Rewriter.insert_op([remote, received, passing, shard], InsertPoint.before(broadcast))
    read_shard_instead(broadcast, view, loop, shard.result)
