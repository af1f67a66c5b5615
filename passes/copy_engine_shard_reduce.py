"""
The reduce-scatter half of a loop over the devices' shards, on the copy engines: a `hir.reduce sum
... root %i` in the loop that `copy_engine` rotates by rank. That loop is the whole tensor-parallel
block pipelined by shard: iteration i receives device i's rows (the all-gather, as pushes), runs
the column- and row-parallel GEMMs on them, and sums the devices' partial products of those rows
into device i's output (the reduce-scatter, as `root %i`). After the rotation iteration i works on
device d = (i + rank) mod D, so each device's partial of d's rows is ready at a different time on
every device, and a push (a copy-engine write over NVLink, no SMs) delivers it:

    before the loop:  a symmetric receive buffer, one slot per peer: [D-1, *output]
    iteration i:      d == rank (the first, peeled iteration): the own partial is copied into the
                      output on the worker stream;
                      d != rank: the push stream waits for the worker and pushes the partial into
                      slot i-1 of device d's receive buffer (device d - i is the only one that
                      pushes into that slot)
    after the loop:   the comm stream waits for the push stream and meets the peers at a barrier
                      (every partial has landed); the caller's stream waits for it and adds the
                      D-1 received partials to the output

The pushes run on a stream of their own, not on the comm stream, so that the next shard's push and
barrier do not queue behind this shard's GEMMs. Only the comm stream meets at barriers (two
streams meeting at barriers at once could take each other's signals).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from hir.dialects import hir
from hir.passes.symmetric_memory import CommStreams, add_launch, copy_launch, index_constant, locate, named


@dataclass
class ShardReduction:
    """A sum of the devices' partials of device i's block, in iteration i of a loop over the shards."""

    reduce: hir.ReduceOp

    @property
    def output(self) -> SSAValue:
        return self.reduce.output


def shard_reduction_of(op: Operation, loop: hir.StreamForOp) -> ShardReduction | None:
    """`op` as a reduction this backend lowers: a sum into a static buffer defined before the loop."""
    if not isinstance(op, hir.ReduceOp) or op.root is not loop.induction_var or op.kind.data != "sum":
        return None
    output = op.output
    owner = output.owner
    if isinstance(owner, Operation) and loop.is_ancestor(owner):
        return None
    if not isinstance(output.type, MemRefType) or DYNAMIC_INDEX in output.type.get_shape():
        return None
    if any(use.operation is not op and loop.is_ancestor(use.operation) for use in output.uses):
        return None  # the iteration reads the output too: it would read it before the adds
    return ShardReduction(op)


def receive_buffer(reduction: ShardReduction, devices: int) -> hir.AllocateOp:
    output = reduction.output.type
    assert isinstance(output, MemRefType)
    shape = [devices - 1, *output.get_shape()]
    return named(hir.AllocateOp(MemRefType(output.element_type, shape), symmetric=True), "received")


def rewrite_shard_reduction(
    reduction: ShardReduction,
    received: SSAValue,
    loop: hir.StreamForOp,
    streams: CommStreams,
    device: SSAValue,
    mesh: tuple[int, ...],
) -> None:
    """Replaces the reduce in the (rotated) loop by the push or the own copy, and adds the sums after the loop."""
    reduce = reduction.reduce
    pusher = streams.reduce
    assert pusher is not None
    i, rank = loop.induction_var, streams.rank
    partial, output = reduce.input, reduce.output

    remote = named(arith.CmpiOp(device, rank, "ne"), "remote")
    one = index_constant(1)
    slot_index = arith.SubiOp(i, one.result)
    peer = hir.PeerViewOp(received, device, mesh)
    slot = named(hir.AliasSelectOp(peer.result, slot_index.result, 0), "slot")
    push = Block()
    push.add_ops(
        [
            hir.SetCurrentStreamOp(pusher),
            hir.SynchronizeOp(loop.worker),
            one,
            slot_index,
            peer,
            slot,
            copy_launch(partial, slot.result),
            hir.SetCurrentStreamOp(loop.worker),
            scf.YieldOp(),
        ]
    )
    own = Block()
    own.add_ops([copy_launch(partial, output), scf.YieldOp()])
    branch = scf.IfOp(remote.result, [], Region(push), Region(own))
    ops: list[Operation] = [remote, branch]
    locate(ops, reduce)
    Rewriter.insert_op(ops, InsertPoint.before(reduce))
    for wait in [use.operation for use in reduce.result.uses]:
        Rewriter.erase_op(wait)
    Rewriter.erase_op(reduce)

    # After the loop: every partial has landed once the comm stream passes the barrier; then add them up.
    after: list[Operation] = [
        hir.SetCurrentStreamOp(streams.comm),
        hir.SynchronizeOp(pusher),
        hir.BarrierOp(mesh),
        hir.SetCurrentStreamOp(loop.main),
        hir.SynchronizeOp(streams.comm),
    ]
    for k in range(len(mesh) - 1):
        index = index_constant(k)
        arrived = named(hir.AliasSelectOp(received, index.result, 0), "arrived")
        after += [index, arrived, add_launch(output, arrived.result, output)]
    locate(after, reduce)
    Rewriter.insert_op(after, InsertPoint.after(loop))
