"""
The lowering of a resharding `fusion.set` (a `hir.launch` of one set whose region sees global,
encoded tensors) into collectives and local copies, by what changes (docs/multidevice.md, "The
resharding table"):

A, B are didx axes, M the source mesh and M' the result's:

- didx A on M -> replicated on M' ⊆ M: `hir.allgather` along A on M;
- replicated on M -> didx B on M' ⊆ M: a local copy of this device's slice (`hir.alias_chunk`
  at `hir.device_index`): no communication, every device already holds the data;
- replicated on M -> replicated on M' ⊆ M: a local copy, likewise;
- replicated on M -> replicated on M' ⊄ M: `hir.broadcast` over M + M' from M's first device;
- didx A on M -> replicated on M' ⊄ M: the all-gather on M, then that broadcast;
- replicated on M -> didx B on M' ⊄ M: the broadcast into a temporary, then the local slice;
- didx A -> didx B on M: `hir.all_to_all` (split along B, concatenated along A);
- didx A on M -> didx A on M' ≠ M (the same size): device M[k] sends its shard to M'[k]
  (`hir.send` / `hir.recv` under `scf.if` on the device, a collective-permute).

A collective concatenates and splits contiguous buffers along their outermost axis: when the
communicated axis is not outermost in memory (or the buffer is a strided chunk), the data goes
through a contiguous temporary with that axis moved first, and a local permute-copy (nvFuser's
transpose around an inner-axis all-gather). Everything else is reported with the reason.

An uneven didx axis (extent L over D devices, c = ceil(L/D) indices each, fewer on the trailing
devices) is gathered through equal pieces, which is what the transports take: each device pads
its shard to c (`padded_allgather`), the pieces are gathered into a D*c temporary and its first L
indices copied into place. A scatter needs nothing more (`hir.alias_chunk` takes chunks of
ceil(L/D) indices, as the shards are). An all-to-all with an uneven axis is that all-gather into a
replicated temporary, then the local slice (`gathered_all_to_all`). Shards moving along their
axis to a mesh of the same size keep their chunks (position k holds the same indices on both), so
the send / receive pairs move them as they are. The reshardings that would move uneven shards
between meshes of other sizes or axes, or broadcast them, are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, MemRefType, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from hir.diagnostics import located
from hir.dialects import fusion, hir
from hir.dialects.parallel_encoding import Layout, didx_chunk
from hir.passes.resharding.local_copies import (
    axes_of,
    copy_launch,
    first_indices_launch,
    inverse,
    is_contiguous,
    outermost,
    temporary,
    tensor_of,
    to_front,
    zeros_after,
)


class Refused(Exception):
    """A resharding this lowering does not support; the message says why."""


def _shape(v: SSAValue) -> list[int]:
    assert isinstance(v.type, MemRefType)
    return list(v.type.get_shape())


def _index(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


def into_contiguous(target: SSAValue, collective: Callable[[SSAValue], Operation], name: str) -> list[Operation]:
    """`collective(out)` + its wait, through a contiguous temporary and a copy when `target` is a strided view."""
    if is_contiguous(target):
        op = collective(target)
        return [op, hir.WaitOp(op.results[0])]
    ops, staging = temporary(axes_of(target), target, name)
    op = collective(staging)
    return [*ops, op, hir.WaitOp(op.results[0]), copy_launch(staging, target)]


def allgather(source: SSAValue, target: SSAValue, axis: int, mesh: Sequence[int]) -> list[Operation]:
    """`target` = the devices' `source`s along `axis`; through axis-first temporaries when it is not outermost."""
    if outermost(source, axis) and outermost(target, axis):
        op = hir.AllgatherOp(source, target, axis, mesh)
        return [op, hir.WaitOp(op.result)]
    perm = to_front(len(_shape(target)), axis)
    ops: list[Operation] = []
    send = source
    if not outermost(source, axis):
        allocation, send = temporary(axes_of(source, perm), source, "shard")
        ops += [*allocation, copy_launch(source, send, perm)]
    else:  # the same axis order on both sides
        perm = list(range(len(perm)))
    allocation, gathered = temporary(axes_of(target, perm), target, "gathered")
    op = hir.AllgatherOp(send, gathered, perm.index(axis), mesh)
    ops += [*allocation, op, hir.WaitOp(op.result), copy_launch(gathered, target, inverse(perm))]
    return ops


def padded_allgather(
    source: SSAValue, target: SSAValue, axis: int, extent: int, mesh: Sequence[int]
) -> list[Operation]:
    """
    The all-gather of an uneven didx axis (static extent L, D devices, c = ceil(L/D), D not
    dividing L): the transports gather equal pieces, so each device copies its shard into a
    `%padded` temporary of extent c (the devices at positions < L // c hold c indices and copy
    them; the one at L // c holds L mod c and appends zeros; later ones hold none and send the
    temporary as it is, never read), the pieces are gathered into a `%gathered` temporary of
    extent D*c, and its first L indices are copied into `target`. The temporaries have the
    gathered axis first, so the collective concatenates along their outermost axis whatever the
    layout of `source` and `target`.
    """
    devices = len(mesh)
    chunk = didx_chunk(extent, devices)
    rank = len(_shape(target))
    perm = to_front(rank, axis)
    rest = [a for a in range(rank) if a != axis]
    if any(_shape(source)[a] == DYNAMIC_INDEX for a in rest):
        raise Refused(
            f"the all-gather of didx axis {axis} (extent {extent} over {devices} devices, not a multiple) pads "
            f"each shard to {chunk} with zeros, which needs static extents on the other axes, but the shard is "
            f"{source.type}"
        )
    ops, padded = temporary([chunk, *((source, a) for a in rest)], source, "padded")
    ops += by_shard_size(
        mesh,
        extent,
        whole=[copy_launch(source, padded, perm)],
        part=[_pad_launch(source, padded, perm, chunk - extent % chunk)] if extent % chunk else [],
    )
    allocation, gathered = temporary([devices * chunk, *((target, a) for a in rest)], target, "gathered")
    gather = hir.AllgatherOp(padded, gathered, 0, mesh)
    cut = first_indices_launch(gathered, target, 0, extent, inverse(perm))
    return [*ops, *allocation, gather, hir.WaitOp(gather.result), cut]


def _pad_launch(source: SSAValue, padded: SSAValue, perm: Sequence[int], zeros: int) -> hir.LaunchOp:
    """`padded` = `source` (axes permuted by `perm`) followed by `zeros` zero indices along its first axis."""
    block = Block(arg_types=[tensor_of(source)])
    block.args[0].name_hint = source.name_hint
    shard: SSAValue = block.args[0]
    ops: list[Operation] = []
    if list(perm) != sorted(perm):
        shape = [tensor_of(source).get_shape()[a] for a in perm]
        permute = fusion.PermuteOp(shard, perm, TensorType(tensor_of(padded).element_type, shape))
        ops.append(permute)
        shard = permute.result
    padding, result = zeros_after(shard, 0, zeros, tensor_of(padded))
    block.add_ops([*ops, *padding, hir.YieldOp(result)])
    return hir.LaunchOp([source], [padded], Region(block))


def broadcast_into(source: SSAValue, target: SSAValue, root: SSAValue, mesh: Sequence[int]) -> list[Operation]:
    """`hir.broadcast` + wait, through contiguous temporaries for strided views (e.g. a chunk of an inner axis)."""
    ops: list[Operation] = []
    if not is_contiguous(source):
        allocation, staging = temporary(axes_of(source), source, "sent")
        ops += [*allocation, copy_launch(source, staging)]
        source = staging
    return [*ops, *into_contiguous(target, lambda out: hir.BroadcastOp(source, out, root, mesh), "received")]


def broadcast(source: SSAValue, target: SSAValue, root: int, mesh: Sequence[int]) -> list[Operation]:
    root_index = _index(root)
    root_index.result.name_hint = "root"
    return [root_index, *broadcast_into(source, target, root_index.result, mesh)]


def shard_loop_step(
    shard: SSAValue, target: SSAValue, i: SSAValue, mesh: Sequence[int], slice_axis: int | None
) -> list[Operation]:
    """
    Iteration i of a loop over the devices' shards (didx -> stream): device i broadcasts its shard
    (nvFuser's broadcast-based all-gather); a result sharded on another axis (`slice_axis`, in
    the iteration's view) keeps this device's slice of it.
    """
    if slice_axis is None:
        return broadcast_into(shard, target, i, mesh)
    allocation, received = temporary(axes_of(shard), shard, "received")
    return [*allocation, *broadcast_into(shard, received, i, mesh), *local_slice(received, target, slice_axis, mesh)]


def local_slice(source: SSAValue, target: SSAValue, axis: int, mesh: Sequence[int]) -> list[Operation]:
    """This device's slice of a replicated `source` along `axis` (extent: the mesh size) into `target`."""
    me = hir.DeviceIndexOp(mesh, outside=0)  # a device outside the mesh takes a slice nobody reads
    me.result.name_hint = "me"
    mine = hir.AliasChunkOp(source, me.result, axis, len(mesh))
    mine.result.name_hint = "mine"
    return [me, mine, copy_launch(mine.result, target)]


def all_to_all(source: SSAValue, target: SSAValue, a: int, b: int, mesh: Sequence[int]) -> list[Operation]:
    """
    didx axis a -> didx axis b on one mesh: `hir.all_to_all` splits the source's axis b (whole
    here) into the devices' chunks and concatenates the received ones along axis a. The
    collective needs both axes outermost in memory: unless they are, both sides go through
    temporaries in the axis order [a, b, the others], with local permute-copies.
    """
    rank = len(_shape(source))
    direct = outermost(source, b) and outermost(target, a)
    order = list(range(rank)) if direct else [a, b, *(x for x in range(rank) if x not in (a, b))]
    ops: list[Operation] = []
    send, receive = source, target
    if not direct:  # a strided slice (a chunk of an inner stream axis) is staged even in axis order
        allocation, send = temporary(axes_of(source, order), source, "sent")
        ops += [*allocation, copy_launch(source, send, order)]
        allocation, receive = temporary(axes_of(target, order), target, "received")
        ops += allocation
    op = hir.AllToAllOp(send, receive, order.index(b), order.index(a), mesh)
    ops += [op, hir.WaitOp(op.result)]
    if receive is not target:
        ops.append(copy_launch(receive, target, inverse(order)))
    return ops


def gathered_all_to_all(
    source: SSAValue, target: SSAValue, a: int, b: int, extent: int, mesh: Sequence[int]
) -> list[Operation]:
    """
    didx axis a -> didx axis b on one mesh when either axis is uneven (an extent other than the
    mesh size, static): the transports' all-to-all exchanges equal pieces, which uneven shards are
    not, so axis a (global extent `extent`) is all-gathered into a `%gathered` temporary (padded
    when D does not divide it) and this device's chunk of axis b is copied out of it. It moves D
    times the data of an all-to-all, the price of any extents.
    """
    whole = axes_of(source)
    whole[a] = extent
    ops, gathered = temporary(whole, source, "gathered")
    if extent % len(mesh):
        ops += padded_allgather(source, gathered, a, extent, mesh)
    else:
        ops += allgather(source, gathered, a, mesh)
    return [*ops, *local_slice(gathered, target, b, mesh)]


def move_shards(
    source: SSAValue, target: SSAValue, src_mesh: Sequence[int], dst_mesh: Sequence[int]
) -> list[Operation]:
    """
    Shards from mesh M to mesh M' along the same axis: device M[k] sends its shard to M'[k], and
    a device at the same position in both keeps it. Every device takes its pairs in k order,
    each waited for before the next: pair k's two devices have completed their pairs before k,
    so both reach pair k, and no device waits in a cycle (a swap, M' = [1, 0], included).
    """
    union = sorted(set(src_mesh) | set(dst_mesh))
    me = hir.DeviceIndexOp(union, outside=len(union))  # a device outside both takes no branch
    me.result.name_hint = "me"
    ops: list[Operation] = [me]
    for s, d in zip(src_mesh, dst_mesh, strict=True):
        if s == d:
            ops += on_device(me.result, union.index(s), [copy_launch(source, target)])
            continue
        pair = sorted((s, d))
        to, frm = _index(pair.index(d)), _index(pair.index(s))
        ops += on_device(me.result, union.index(s), [to, *_send(source, to.result, pair)])
        ops += on_device(me.result, union.index(d), [frm, *_recv(target, frm.result, pair)])
    return ops


def _send(source: SSAValue, peer: SSAValue, pair: list[int]) -> list[Operation]:
    """`hir.send` + wait, through a contiguous copy when `source` is a strided view."""
    ops: list[Operation] = []
    if not is_contiguous(source):
        allocation, staging = temporary(axes_of(source), source, "sent")
        ops += [*allocation, copy_launch(source, staging)]
        source = staging
    send = hir.SendOp(source, peer, pair)
    return [*ops, send, hir.WaitOp(send.result)]


def _recv(target: SSAValue, peer: SSAValue, pair: list[int]) -> list[Operation]:
    """`hir.recv` + wait, through a contiguous temporary and a copy when `target` is a strided view."""
    return into_contiguous(target, lambda out: hir.RecvOp(out, peer, pair), "received")


def on_device(me: SSAValue, position: int, body: list[Operation]) -> list[Operation]:
    """`scf.if` this device is at `position` of the mesh `me` indexes: `body`."""
    return on_devices(me, "eq", position, body)


def by_shard_size(mesh: Sequence[int], extent: int, whole: list[Operation], part: list[Operation]) -> list[Operation]:
    """
    `whole` on the devices holding a full chunk of c = ceil(L/D) indices of an uneven didx axis of
    static extent L (the positions before L // c), `part` on the one holding L mod c (at L // c;
    leave it empty when c divides L), nothing on the later ones, which hold none. A device
    outside the mesh takes part in nothing, so any branch will do there (position 0).
    """
    me = hir.DeviceIndexOp(mesh, outside=0)
    me.result.name_hint = "me"
    full = extent // didx_chunk(extent, len(mesh))
    ops: list[Operation] = [me, *on_devices(me.result, "ult", full, whole)]
    if part:
        ops += on_devices(me.result, "eq", full, part)
    return ops


def on_devices(me: SSAValue, predicate: str, position: int, body: list[Operation]) -> list[Operation]:
    """`scf.if` this device's position `predicate` (`eq`, `ult`) `position`: `body`."""
    at = _index(position)
    here = arith.CmpiOp(me, at.result, predicate)
    block = Block()
    block.add_ops([*body, scf.YieldOp()])
    return [at, here, scf.IfOp(here.result, [], Region(block))]


def lower_set(
    source: SSAValue,
    target: SSAValue,
    src: Layout,
    dst: Layout,
    global_shapes: tuple[Sequence[int], Sequence[int]] | None = None,
) -> list[Operation]:
    """
    The ops that move `source` (sharded as `src`) into `target` (sharded as `dst`), or Refused.
    `global_shapes`: the global (source, result) shapes, which say whether a didx axis is uneven
    (default: one index per device).
    """
    src_mesh = list(src.mesh or dst.mesh)
    dst_mesh = list(dst.mesh or src.mesh)
    union = sorted(set(src_mesh) | set(dst_mesh))
    inside = set(dst_mesh) <= set(src_mesh)
    a, b = src.didx_axis, dst.didx_axis
    src_extent = len(src_mesh) if a is None or global_shapes is None else global_shapes[0][a]
    dst_extent = len(dst_mesh) if b is None or global_shapes is None else global_shapes[1][b]
    uneven = [
        f"didx axis {axis} of the {side} has extent {_extent_text(extent)} over {len(mesh)} devices"
        for side, axis, extent, mesh in (("source", a, src_extent, src_mesh), ("result", b, dst_extent, dst_mesh))
        if axis is not None and extent != len(mesh)
    ]
    if uneven:
        if a is not None and b is not None and src_mesh == dst_mesh and DYNAMIC_INDEX not in (src_extent, dst_extent):
            return gathered_all_to_all(source, target, a, b, src_extent, src_mesh)
        if a == b and a is not None and len(src_mesh) == len(dst_mesh) and src_extent != DYNAMIC_INDEX:
            # Shards moving along the same axis between meshes of one size: position k holds the
            # same chunk on both, so each pair sends and receives equal (if uneven) buffers.
            return move_shards(source, target, src_mesh, dst_mesh)
        _check_uneven(uneven, a, b, src_mesh, dst_mesh, inside, src_extent, dst_extent)
        if a is not None and b is None and src_extent % len(src_mesh):
            return padded_allgather(source, target, a, src_extent, src_mesh)
    if a is not None and b is not None:
        if src_mesh != dst_mesh and a != b:
            raise Refused("more than one sharding change in one op (mesh and sharded axis): split it in two sets")
        if src_mesh != dst_mesh:
            return move_shards(source, target, src_mesh, dst_mesh)
        return all_to_all(source, target, a, b, src_mesh)
    if a is not None:  # a gather
        ops = allgather(source, target, a, src_mesh)
        if not inside:  # then from the source mesh's first device to the devices outside it
            ops += broadcast(target, target, union.index(src_mesh[0]), union)
        return ops
    if b is not None:  # a scatter: each device of the result already holds its slice, or gets the whole first
        if inside:
            return local_slice(source, target, b, dst_mesh)
        whole = axes_of(target)
        whole[b] = len(dst_mesh)
        ops, received = temporary(whole, target, "received")
        ops += broadcast(source, received, union.index(src_mesh[0]), union)
        return [*ops, *local_slice(received, target, b, dst_mesh)]
    if inside:  # replicated -> replicated on a sub-mesh: nothing moves between devices
        return [copy_launch(source, target)]
    return broadcast(source, target, union.index(src_mesh[0]), union)


def _extent_text(extent: int) -> str:
    return "?" if extent == DYNAMIC_INDEX else str(extent)


def _check_uneven(
    uneven: list[str],
    a: int | None,
    b: int | None,
    src_mesh: Sequence[int],
    dst_mesh: Sequence[int],
    inside: bool,
    src_extent: int,
    dst_extent: int,
) -> None:
    """
    What an uneven didx axis (an extent other than the mesh size) takes: the all-gather and the
    scatter on one mesh (or onto a sub-mesh). Moving uneven shards between devices or meshes is
    refused, with the two sets that do it.
    """
    why = "; ".join(uneven)
    if DYNAMIC_INDEX in (src_extent, dst_extent):
        raise Refused(
            f"a resharding of a didx axis of dynamic extent is not supported ({why}): give it a static extent"
        )
    if a is not None and b is not None:
        how = "an all-to-all" if list(src_mesh) == list(dst_mesh) else "a move between meshes"
        raise Refused(
            f"a didx axis whose extent is not the mesh size ({why}) is not supported in {how}: go through a "
            "replicated value (an all-gather, then a scatter: two sets)"
        )
    if not inside:
        raise Refused(
            f"a didx axis whose extent is not the mesh size ({why}) is not supported in a set that also changes "
            f"the mesh from {list(src_mesh)} to {list(dst_mesh)}: split it in two sets (the resharding on one "
            "mesh, then the mesh change)"
        )


def lower_set_launch(launch: hir.LaunchOp, src: Layout, dst: Layout) -> list[Operation]:
    """`lower_set` on a resharding launch; a refusal becomes a diagnostic at the launch (the user's op)."""
    (op, *_) = launch.body.block.ops
    src_type, dst_type = op.operands[0].type, op.results[0].type
    assert isinstance(src_type, TensorType)
    assert isinstance(dst_type, TensorType)
    try:
        return lower_set(launch.ins[0], launch.outs[0], src, dst, (src_type.get_shape(), dst_type.get_shape()))
    except Refused as refusal:
        raise PassFailedException(located(launch, str(refusal))) from None
