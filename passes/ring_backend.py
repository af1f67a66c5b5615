"""
The ring backend of `hir-lower-communication` (`backend=ring`): the all-gathers, sum
reduce-scatters and sum all-reduces that the lowering made become rings of
`hir.collective_permute` steps of offset 1 on the current stream, each waited for before the
next, instead of one NCCL collective (nvFuser's ring-based pipelines; XLA's and
TransformerEngine's collective-permute overlap). D is the mesh size and r this device's position
(`hir.device_index`):

- all-gather of shard x along axis a into G (D chunks along a): r copies x into chunk r; at step
  j = 1 .. D-1 it sends the chunk it received last (x itself at step 1) to r + 1 and receives
  chunk (r - j) mod D from r - 1;
- reduce-scatter (sum) of P (D chunks along a) into O: at step 1 r sends P[(r - 1) mod D]; at
  every step j it receives from r - 1 the running sum of chunk (r - 1 - j) mod D into
  `%received` and adds its own P[(r - 1 - j) mod D] to it, into the accumulator `%acc` that it
  sends at step j + 1, and at the last step (j = D - 1, chunk r) into O: the sum of chunk r lands
  on its owner;
- all-reduce (sum) of X into Y: the reduce-scatter of X's D blocks along its outermost axis
  longer than 1, block r of the sum into Y's block r, then the all-gather of the blocks in Y
  (block r is in place already).

A loop over the devices' shards becomes a ring of its own (`ring_shards`). Everything else keeps
the NCCL collective the lowering made, as documented in docs/multidevice.md: other broadcasts,
all-to-alls, sends and receives, max and min reductions, a collective on a mesh of one device, and
an all-reduce whose outermost axis longer than 1 is dynamic or not a multiple of D (its blocks
would differ in size from device to device).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from hir.dialects import fusion, hir
from hir.passes.resharding.local_copies import axes_of, copy_launch, outermost, temporary, tensor_of
from hir.passes.symmetric_memory import index_constant

RING_OFFSET = 1
"""Each step sends to the next device on the mesh and receives from the previous one."""


def ring_collectives(function: func.FuncOp, lowered: set[Operation]) -> None:
    """Replaces each collective of `lowered` in `function` that the ring takes (and its wait) by ring steps."""
    for op in [o for o in function.walk() if o in lowered]:
        wait = _sole_wait(op)
        if wait is None:
            continue
        ring = _ring_of(op)
        if ring is None:
            continue
        for new in ring:
            new.location = op.location
        Rewriter.insert_op(ring, InsertPoint.before(op))
        Rewriter.erase_op(wait)
        Rewriter.erase_op(op)


def _sole_wait(op: Operation) -> hir.WaitOp | None:
    """The `hir.wait` right after a collective, its only use (as the lowering emits it), else None."""
    if not isinstance(op, hir.CommunicationOp) or op.result.uses.get_length() != 1:
        return None
    wait = op.next_op
    if not isinstance(wait, hir.WaitOp) or wait.work is not op.result:
        return None
    return wait


def _ring_of(op: Operation) -> list[Operation] | None:
    """The ring steps that replace `op`, or None when it keeps its collective."""
    if not isinstance(op, hir.AllgatherOp | hir.ReduceScatterOp | hir.AllreduceOp) or len(op.mesh_ids) < 2:
        return None
    mesh = op.mesh_ids
    if isinstance(op, hir.AllgatherOp):
        axis = op.axis.value.data
        if not outermost(op.output, axis):
            return None
        me = Position(mesh)
        own = _chunk(op.output, me.op.result, axis, len(mesh), "own")
        return [me.op, own, copy_launch(op.input, own.result), *gather_steps(op.input, op.output, axis, mesh, me)]
    if op.kind.data != "sum":
        return None
    if isinstance(op, hir.ReduceScatterOp):
        axis = op.axis.value.data
        if not outermost(op.input, axis):
            return None
        me = Position(mesh)
        return [me.op, *reduce_scatter_steps(op.input, op.output, axis, mesh, me)]
    axis = block_axis(op.output, len(mesh))
    if axis is None or not outermost(op.input, axis):
        return None
    me = Position(mesh)
    own = _chunk(op.output, me.op.result, axis, len(mesh), "own")
    return [
        me.op,
        own,
        *reduce_scatter_steps(op.input, own.result, axis, mesh, me),
        *gather_steps(own.result, op.output, axis, mesh, me),
    ]


def block_axis(buffer: SSAValue, devices: int) -> int | None:
    """The axis an all-reduce is cut along: its outermost one longer than 1, if a static multiple of `devices`."""
    assert isinstance(buffer.type, MemRefType)
    for axis, extent in enumerate(buffer.type.get_shape()):
        if extent == 1:
            continue
        return axis if extent != DYNAMIC_INDEX and extent % devices == 0 else None
    return None


def gather_steps(first: SSAValue, output: SSAValue, axis: int, mesh: Sequence[int], me: Position) -> list[Operation]:
    """Steps 1 .. D-1 of the ring all-gather into `output`, whose chunk r holds `first` (or will)."""
    devices = len(mesh)
    ops: list[Operation] = []
    send = first
    for j in range(1, devices):
        index_ops, index = me.back(j)
        slot = _chunk(output, index, axis, devices, "slot")
        permute = hir.CollectivePermuteOp(send, slot.result, RING_OFFSET, mesh)
        ops += [*index_ops, slot, permute, hir.WaitOp(permute.result)]
        send = slot.result
    return ops


def reduce_scatter_steps(
    partial: SSAValue, output: SSAValue, axis: int, mesh: Sequence[int], me: Position
) -> list[Operation]:
    """Steps 1 .. D-1 of the ring reduce-scatter (sum) of `partial`'s D chunks along `axis` into `output`."""
    devices = len(mesh)
    allocation, received = temporary(axes_of(output), output, "received")
    ops: list[Operation] = [*allocation]
    accumulator = received
    if devices > 2:
        allocation, accumulator = temporary(axes_of(output), output, "acc")
        ops += allocation
    index_ops, index = me.back(1)
    first = _chunk(partial, index, axis, devices, "partial")
    ops += [*index_ops, first]
    send = first.result
    for j in range(1, devices):
        permute = hir.CollectivePermuteOp(send, received, RING_OFFSET, mesh)
        index_ops, index = me.back(1 + j)
        own = _chunk(partial, index, axis, devices, "partial")
        target = output if j == devices - 1 else accumulator
        ops += [permute, hir.WaitOp(permute.result), *index_ops, own, add_launch(received, own.result, target)]
        send = accumulator
    return ops


def add_launch(a: SSAValue, b: SSAValue, out: SSAValue) -> hir.LaunchOp:
    """A launch that writes `a + b` into `out` on this device."""
    types = [tensor_of(v) for v in (a, b)]
    block = Block(arg_types=types)
    for arg, value in zip(block.args, (a, b)):
        arg.name_hint = value.name_hint
    add = fusion.AddOp(block.args[0], block.args[1], tensor_of(out))
    block.add_ops([add, hir.YieldOp(add.result)])
    return hir.LaunchOp([a, b], [out], Region(block))


class Position:
    """
    This device's position r on the mesh (`hir.device_index`; 0 on a device outside the mesh,
    whose ring steps post nothing and whose buffers carry no meaning) and the positions r - k
    mod D, each computed once per ring.
    """

    def __init__(self, mesh: Sequence[int]):
        self.devices = len(mesh)
        self.op = hir.DeviceIndexOp(mesh, outside=0)
        self.op.result.name_hint = "me"
        self.behind: dict[int, SSAValue] = {0: self.op.result}

    def back(self, steps: int) -> tuple[list[Operation], SSAValue]:
        """(r - steps) mod D, as (r + (D - steps mod D)) mod D in unsigned arithmetic, and the ops computing it."""
        shift = (self.devices - steps % self.devices) % self.devices
        if shift in self.behind:
            return [], self.behind[shift]
        amount, size = index_constant(shift), index_constant(self.devices)
        total = arith.AddiOp(self.op.result, amount.result)
        index = arith.RemUIOp(total.result, size.result)
        index.result.name_hint = "at"
        self.behind[shift] = index.result
        return [amount, size, total, index], index.result


def _chunk(buffer: SSAValue, index: SSAValue, axis: int, devices: int, name: str) -> hir.AliasChunkOp:
    chunk = hir.AliasChunkOp(buffer, index, axis, devices)
    chunk.result.name_hint = name
    return chunk
