"""
The copy-engine backend of `hir-lower-communication` (`backend=copy-engine`): a host loop over the
devices' shards (didx -> stream: iteration i needs device i's shard, lowered to
`hir.broadcast ... root %i`) pulls each shard from the peer's symmetric memory with a copy, which
the GPU's copy engines carry over NVLink without taking SMs from the compute, instead of a
collective kernel:

    before the loops:  %rank = hir.device_index; on a dedicated comm stream (pool stream
                       num_streams): copy each source into its symmetric mirror, hir.barrier
    in the loop:       iteration i works on device d = (i + rank) mod D, so every device starts
                       with its own shard at once (nvFuser's offset_stream_indexing_by_rank);
                       if d != rank: on the comm stream, copy hir.peer_view(mirror, d) into
                       the slot, and the worker stream waits for it; if d == rank the consumers
                       read the local shard directly (no copy)
    at the end:        the caller's stream waits for the comm stream, then hir.barrier, so no
                       device reuses its mirror while a peer may still read it

Rotating iterations is only valid for one-sided transfers: with NCCL every device must post the
broadcasts with the same roots in the same order, so the nccl backend keeps `root %i`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from hir.dialects import fusion, hir


@dataclass
class MainLoop:
    """A main stream loop as convert-fusion-to-hir emits it: prologue, work, epilogue."""

    loop: hir.ForOp
    stream: SSAValue
    main: SSAValue
    num_streams: SSAValue
    prologue_end: Operation

    @staticmethod
    def match(loop: hir.ForOp) -> MainLoop | None:
        ops = list(loop.body.block.ops)
        if len(ops) < 6:
            return None
        remui, stream, set_stream = ops[:3]
        restore, join = ops[-3], ops[-2]  # the last op is the implicit hir.yield
        if not (
            isinstance(remui, arith.RemUIOp)
            and remui.lhs is loop.induction_var
            and isinstance(stream, hir.StreamOp)
            and stream.index is remui.result
            and isinstance(set_stream, hir.SetCurrentStreamOp)
            and set_stream.stream is stream.result
            and isinstance(restore, hir.SetCurrentStreamOp)
            and isinstance(join, hir.SynchronizeOp)
            and join.stream is stream.result
        ):
            return None
        return MainLoop(loop, stream.result, restore.stream, remui.rhs, set_stream)


def _root(value: SSAValue, inside: Block) -> tuple[SSAValue, list[Operation]] | None:
    """The buffer defined outside `inside` that `value` views, and the view ops from it."""
    chain: list[Operation] = []
    while isinstance(value.owner, hir.AliasSelectOp | hir.AliasChunkOp) and value.owner.parent_block() is inside:
        chain.append(value.owner)
        value = value.owner.buffer
    if isinstance(value.owner, Operation) and value.owner.parent_block() is inside:
        return None
    return value, list(reversed(chain))


def _copy_launch(source: SSAValue, target: SSAValue) -> hir.LaunchOp:
    assert isinstance(source.type, MemRefType)
    assert isinstance(target.type, MemRefType)
    block = Block(arg_types=[hir.tensor_type_of(source.type)])
    copy = fusion.SetOp(block.args[0], hir.tensor_type_of(target.type))
    block.add_ops([copy, hir.YieldOp(copy.result)])
    return hir.LaunchOp([source], [target], Region(block))


def _replay(chain: list[Operation], base: SSAValue) -> list[Operation]:
    """The same views as `chain`, taken of `base`."""
    replayed: list[Operation] = []
    for view in chain:
        clone = view.clone()
        clone.operands = [base, *view.operands[1:]]
        replayed.append(clone)
        base = clone.results[0]
    return replayed


def _contiguous(t: MemRefType) -> MemRefType:
    return MemRefType(t.element_type, t.get_shape())


def pull_shards_over_copy_engine(function: func.FuncOp) -> bool:
    """Rewrites every didx -> stream broadcast loop of `function`; True if any was."""
    changed = False
    for loop in [op for op in function.body.block.ops if isinstance(op, hir.ForOp)]:
        changed |= _rewrite_loop(function, loop)
    return changed


def _rewrite_loop(function: func.FuncOp, loop: hir.ForOp) -> bool:
    main_loop = MainLoop.match(loop)
    body = loop.body.block
    broadcasts = [op for op in body.ops if isinstance(op, hir.BroadcastOp) and op.root is loop.induction_var]
    if main_loop is None or not broadcasts:
        return False
    meshes = {b.mesh_ids for b in broadcasts}
    sources = [_root(b.input, body) for b in broadcasts]
    if len(meshes) != 1 or any(s is None for s in sources):
        return False
    mesh = meshes.pop()
    if any(not isinstance(root.type, MemRefType) or DYNAMIC_INDEX in root.type.get_shape() for root, _ in sources):  # type: ignore[misc]
        return False

    # Before the loops: this device's index in the mesh and the comm stream.
    anchor: Operation = loop
    if isinstance(prev := loop.prev_op, hir.ForOp):
        anchor = prev  # the fork loop that precedes this one
    rank = hir.DeviceIndexOp(mesh)
    rank.result.name_hint = "rank"
    comm = hir.StreamOp(main_loop.num_streams)
    comm.result.name_hint = "comm"
    mirrors: dict[SSAValue, SSAValue] = {}
    setup: list[Operation] = [rank, comm]
    for root, _ in sources:  # type: ignore[misc]
        if root not in mirrors:
            assert isinstance(root.type, MemRefType)
            mirror = hir.AllocateOp(_contiguous(root.type), symmetric=True)
            mirror.result.name_hint = f"{root.name_hint or 'shard'}_symmetric"
            setup.append(mirror)
            mirrors[root] = mirror.result
    Rewriter.insert_op(setup, InsertPoint.before(anchor))

    # Right before the main loop, on the comm stream: every source copied into its symmetric
    # mirror, then all devices meet at a barrier (peers may read the mirrors after it).
    staging: list[Operation] = [hir.SetCurrentStreamOp(comm.result), hir.SynchronizeOp(main_loop.main)]
    staging += [_copy_launch(root, mirror) for root, mirror in mirrors.items()]
    staging += [hir.BarrierOp(mesh), hir.SetCurrentStreamOp(main_loop.main)]
    Rewriter.insert_op(staging, InsertPoint.before(loop))

    # In the loop: work on device d = (i + rank) mod trip count.
    iv = loop.induction_var
    total = arith.AddiOp(iv, rank.result)
    device = arith.RemUIOp(total.result, loop.ub)
    device.result.name_hint = "d"
    Rewriter.insert_op([total, device], InsertPoint.after(main_loop.prologue_end))
    op = device.next_op
    while op is not None:  # the work and the epilogue: everything after the prologue
        if iv in op.operands:
            op.operands = [device.result if o is iv else o for o in op.operands]
        op = op.next_op

    for broadcast, (root, chain) in zip(broadcasts, sources):  # type: ignore[misc]
        _rewrite_broadcast(broadcast, mirrors[root], chain, device.result, rank.result, comm.result, main_loop)

    # The first iteration works on the local shard and needs no peer: enqueue it before the
    # staging, so the local GEMM starts at once instead of after the host has issued everything.
    _peel_first_iteration(loop, staging[0])

    # At the end: wait for the comm stream, and meet once more before mirrors may be rewritten.
    ret = function.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    Rewriter.insert_op([hir.SynchronizeOp(comm.result), hir.BarrierOp(mesh)], InsertPoint.before(ret))
    return True


def _peel_first_iteration(loop: hir.ForOp, before: Operation) -> None:
    """Runs iteration `lb` as straight-line code before `before`; the loop starts one step later."""
    bounds = [v.owner for v in (loop.lb, loop.ub)]
    if not all(isinstance(b, arith.ConstantOp) for b in bounds):
        return
    lb, ub = (b.value.value.data for b in bounds)  # type: ignore[union-attr]
    if ub <= lb:
        return
    mapping: dict[SSAValue, SSAValue] = {loop.induction_var: loop.lb}
    body = [op.clone(value_mapper=mapping) for op in loop.body.block.ops if not isinstance(op, hir.YieldOp)]
    Rewriter.insert_op(body, InsertPoint.before(before))
    start = arith.AddiOp(loop.lb, loop.step)
    Rewriter.insert_op(start, InsertPoint.before(loop))
    loop.operands = [start.result, loop.ub, loop.step]


def _rewrite_broadcast(
    broadcast: hir.BroadcastOp,
    mirror: SSAValue,
    chain: list[Operation],
    device: SSAValue,
    rank: SSAValue,
    comm: SSAValue,
    main_loop: MainLoop,
) -> None:
    target = broadcast.output
    local_shard = broadcast.input
    waits = [use.operation for use in broadcast.result.uses]
    remote = arith.CmpiOp(device, rank, "ne")
    remote.result.name_hint = "remote"
    peer = hir.PeerViewOp(mirror, device, broadcast.mesh_ids)
    peer_chain = _replay(chain, peer.result)
    pulled = peer_chain[-1].results[0] if peer_chain else peer.result
    then = Block()
    then.add_ops(
        [
            hir.SetCurrentStreamOp(comm),
            _copy_launch(pulled, target),
            hir.SetCurrentStreamOp(main_loop.stream),
            hir.SynchronizeOp(comm),
            scf.YieldOp(),
        ]
    )
    pull = scf.IfOp(remote.result, [], Region(then))
    new_ops: list[Operation] = [remote, peer, *peer_chain, pull]

    # Consumers of the slot read the local shard in place on the local iteration, when the slot's
    # buffer is not needed after the loop and both views have the same type.
    loop_body = main_loop.loop.body.block
    slot = _root(target, loop_body)
    if slot is not None and local_shard.type == target.type and _only_used_in(slot[0], main_loop.loop):
        chosen = arith.SelectOp(remote.result, target, local_shard)
        chosen.result.name_hint = "shard"
        new_ops.append(chosen)
        readers = [op for op in loop_body.ops if op is not broadcast and broadcast.is_before_in_block(op)]
        for reader in readers:
            if any(_same_view(o, target) for o in reader.operands):
                reader.operands = [chosen.result if _same_view(o, target) else o for o in reader.operands]
    Rewriter.insert_op(new_ops, InsertPoint.before(broadcast))
    for wait in waits:
        Rewriter.erase_op(wait)
    Rewriter.erase_op(broadcast)


def _same_view(a: SSAValue, b: SSAValue) -> bool:
    """The same value, or two identical views (same buffer, index and properties) of one buffer."""
    if a is b:
        return True
    x, y = a.owner, b.owner
    return (
        isinstance(x, hir.AliasSelectOp | hir.AliasChunkOp)
        and type(x) is type(y)
        and x.operands == y.operands  # type: ignore[union-attr]
        and x.properties == y.properties  # type: ignore[union-attr]
    )


def _only_used_in(buffer: SSAValue, loop: hir.ForOp) -> bool:
    """Whether every use of `buffer` is inside `loop`."""
    for use in buffer.uses:
        op: Operation | None = use.operation
        while op is not None and op is not loop:
            op = op.parent_op()
        if op is None:
            return False
    return True
