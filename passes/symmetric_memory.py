"""
Building blocks of the copy-engine lowerings (`passes/copy_engine.py`: all-gather pipelines,
`passes/copy_engine_reduce.py`: reduce-scatter and all-reduce pipelines): the streams and the
device index set up before a loop, the release barrier, copies, views and launches split along
result axes through the op's axis map.

**The release barrier.** A device pushes into a peer's symmetric buffer with a copy on its comm
stream; the peer reads the buffer after a `hir.barrier`. The next run pushes into the same buffer
again, so something must keep it from doing so while the peer still reads this run's data:

- `end`: the caller's stream waits for everything, then `hir.barrier` before returning;
- `start`: `hir.barrier` on the comm stream right after it forks from the caller's stream, before
  any push. The peer's reads of the previous run are ordered before its caller's stream at the
  end of that run, hence before its comm stream's fork in this run, hence before this barrier and
  every push after it, whatever streams the runs use. Nothing waits at the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, MemRefType, TensorType, UnknownLoc
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from hir.dialects import fusion, hir

OpT = TypeVar("OpT", bound=Operation)

RELEASES = ("auto", "end", "start")
"""Where the release barrier goes (`auto`: the one each lowering measured best, see the modules)."""


def copy_launch(source: SSAValue, target: SSAValue) -> hir.LaunchOp:
    """A launch copying `source` into `target` (same shape): a copy-engine transfer when one is a peer's."""
    assert isinstance(source.type, MemRefType)
    assert isinstance(target.type, MemRefType)
    block = Block(arg_types=[hir.tensor_type_of(source.type)])
    copy = fusion.SetOp(block.args[0], hir.tensor_type_of(target.type))
    block.add_ops([copy, hir.YieldOp(copy.result)])
    return hir.LaunchOp([source], [target], Region(block))


def add_launch(lhs: SSAValue, rhs: SSAValue, out: SSAValue) -> hir.LaunchOp:
    """A launch writing `out = lhs + rhs` (all of one shape): the adds of received partials."""
    assert isinstance(out.type, MemRefType)
    block = Block(arg_types=[hir.tensor_type_of(lhs.type), hir.tensor_type_of(rhs.type)])  # type: ignore[arg-type]
    total = fusion.AddOp(block.args[0], block.args[1], hir.tensor_type_of(out.type))
    block.add_ops([total, hir.YieldOp(total.result)])
    return hir.LaunchOp([lhs, rhs], [out], Region(block))


def locate(ops: Sequence[Operation], origin: Operation) -> None:
    """
    Ops made by a rewrite without a location take `origin`'s, so that errors and race reports
    point at the source; ops in launch regions are found through their launch.
    """
    for op in ops:
        if isinstance(op.location, UnknownLoc):
            op.location = origin.location
        if not isinstance(op, hir.LaunchOp):
            for region in op.regions:
                for block in region.blocks:
                    locate(list(block.ops), origin)


def index_constant(value: int) -> arith.ConstantOp:
    constant = arith.ConstantOp(IntegerAttr(value, IndexType()))
    constant.result.name_hint = f"c{value}"
    return constant


def named(op: OpT, name: str) -> OpT:
    """`op` with its (single) result named `name` in the printed IR."""
    op.results[0].name_hint = name
    return op


def same_view(a: SSAValue, b: SSAValue) -> bool:
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


def ops_after(op: Operation, block: Block) -> Iterator[Operation]:
    """
    The ops after `op` in `block` (none when `op` is not in it). Stepping on from `op` once, not
    asking `is_before_in_block` of every op, which walks from `op` each time: a fused loop's body
    holds thousands of ops.
    """
    if op.parent_block() is not block:
        return
    later = op.next_op
    while later is not None:
        yield later
        later = later.next_op


def view_root(value: SSAValue) -> SSAValue:
    """The buffer a chain of views (`hir.alias_select`, `hir.alias_chunk`) is taken of."""
    while isinstance(value.owner, hir.AliasSelectOp | hir.AliasChunkOp):
        value = value.owner.buffer
    return value


def only_used_in(buffer: SSAValue, loop: Operation) -> bool:
    """Whether every use of `buffer` is inside `loop`."""
    for use in buffer.uses:
        op: Operation | None = use.operation
        while op is not None and op is not loop:
            op = op.parent_op()
        if op is None:
            return False
    return True


def byte_width(t: MemRefType | TensorType) -> int:
    width = getattr(t.element_type, "bitwidth", None) or getattr(t.element_type, "width", None)
    bits = width.data if hasattr(width, "data") else width
    return max(1, int(bits or 32) // 8)


@dataclass
class CommStreams:
    """What a copy-engine loop uses besides its workers: this device's index and the extra streams."""

    rank: SSAValue
    comm: SSAValue
    reduce: SSAValue | None
    """A second stream for the reductions (reduce-scatter and all-reduce only)."""


def fork_comm_streams(
    loop: hir.StreamForOp,
    mesh: Sequence[int],
    release: str,
    buffers: Sequence[Operation],
    reduce: bool = False,
    fork: bool = True,
) -> CommStreams:
    """
    Before `loop`: `%rank = hir.device_index`, the comm stream (pool stream num_streams) and, with
    `reduce`, a reduction stream (pool stream num_streams + 1), then `buffers` (the symmetric
    allocations), then (with `fork`) the comm stream forked from the caller's stream; with
    `release=start`, the comm stream's first work is the release barrier. The reduction stream is
    not forked: whoever uses it makes it wait for the comm stream first. Without `fork`, the
    caller makes the comm stream's first work a wait for a stream that waited for the caller's.
    """
    rank = named(hir.DeviceIndexOp(mesh), "rank")
    comm = named(hir.StreamOp(loop.num_streams), "comm")
    ops: list[Operation] = [rank, comm]
    reduce_stream: SSAValue | None = None
    if reduce:
        one = index_constant(1)
        after = arith.AddiOp(loop.num_streams, one.result)
        stream = named(hir.StreamOp(after.result), "reduce")
        ops += [one, after, stream]
        reduce_stream = stream.result
    ops += list(buffers)
    if fork:
        ops += [hir.SetCurrentStreamOp(comm.result), hir.SynchronizeOp(loop.main)]
        if release == "start":
            ops.append(hir.BarrierOp(mesh))
        ops.append(hir.SetCurrentStreamOp(loop.main))
    for op in ops:
        op.location = loop.location
        loop.parent_block().insert_op_before(op, loop)  # type: ignore[union-attr]
    return CommStreams(rank.result, comm.result, reduce_stream)


# -- splitting a launch along result axes ---------------------------------------------------------


class NotSplittable(Exception):
    """Why a launch cannot be split into pieces along a result axis (a sentence for a diagnostic)."""


@dataclass(frozen=True)
class Piece:
    """Piece `index` of `count` equal pieces along result axis `axis` of a launch."""

    axis: int
    index: SSAValue
    count: int


def single_op(launch: hir.LaunchOp) -> fusion.FusionOp:
    """The launch's one fusion op, writing its one output; else NotSplittable."""
    ops = [o for o in launch.body.block.ops if not isinstance(o, hir.YieldOp)]
    terminator = launch.body.block.last_op
    if (
        len(ops) != 1
        or not isinstance(ops[0], fusion.FusionOp)
        or len(launch.outs) != 1
        or not isinstance(terminator, hir.YieldOp)
        or terminator.values[0] is not ops[0].results[0]
    ):
        raise NotSplittable("its producer is not one launch of a single fusion op (a segment of several ops)")
    return ops[0]


def split_launch(launch: hir.LaunchOp, pieces: Sequence[Piece], name: str = "") -> tuple[list[Operation], hir.LaunchOp]:
    """
    The views and the launch that compute one piece of `launch`'s result: for each piece, in order,
    the result axis and every operand axis that feeds it (through the op's axis map) are cut into
    `count` pieces (`hir.alias_chunk`); an operand axis of extent 1 that broadcasts against it is
    passed whole. Raises NotSplittable when the extents do not divide or an axis has no operand
    axis to cut. The ops are not inserted anywhere.
    """
    op = single_op(launch)
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    shape = list(result_type.get_shape())
    args = list(launch.body.block.args)
    operand_shapes = {arg: list(arg.type.get_shape()) for arg in args}  # type: ignore[attr-defined]
    axis_map = op.axis_map()
    views: list[Operation] = []
    ins = list(launch.ins)
    out = launch.outs[0]
    for piece in pieces:
        extent = shape[piece.axis]
        if extent == DYNAMIC_INDEX or extent % piece.count:
            raise NotSplittable(
                f"{piece.count} pieces do not divide the extent {'?' if extent == DYNAMIC_INDEX else extent} "
                f"of axis {piece.axis} of its result"
            )
        cut: dict[int, int] = {}  # region argument position -> its axis to cut
        for k, a in axis_map[piece.axis]:
            position = args.index(op.operands[k]) if op.operands[k] in args else None
            if position is None:
                raise NotSplittable("an operand of its op is not a launch argument")
            arg_extent = operand_shapes[args[position]][a]
            if arg_extent == 1 and extent != 1:
                continue  # a broadcast axis: every piece reads it whole
            if cut.get(position, a) != a:
                raise NotSplittable(f"one argument feeds axis {piece.axis} of its result through two axes")
            cut[position] = a
        if not cut:
            raise NotSplittable(f"axis {piece.axis} of its result comes from no operand axis")
        for position, a in cut.items():
            view = hir.AliasChunkOp(ins[position], piece.index, a, piece.count)
            views.append(view)
            ins[position] = view.result
            operand_shapes[args[position]][a] //= piece.count
        view = hir.AliasChunkOp(out, piece.index, piece.axis, piece.count)
        views.append(view)
        out = view.result
        shape[piece.axis] = extent // piece.count
    block = Block(arg_types=[hir.tensor_type_of(v.type) for v in ins])  # type: ignore[arg-type]
    mapping = dict(zip(args, block.args))
    for old, new in mapping.items():
        new.name_hint = old.name_hint
    assert isinstance(out.type, MemRefType)
    clone = type(op).create(
        operands=[mapping[o] for o in op.operands],
        result_types=[hir.tensor_type_of(out.type)],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    clone.results[0].name_hint = op.results[0].name_hint
    try:
        clone.verify()
    except VerifyException as err:
        raise NotSplittable(f"its op does not compute a piece on pieces of its operands ({err})") from None
    block.add_ops([clone, hir.YieldOp(clone.results[0])])
    new = hir.LaunchOp(ins, [out], Region(block))
    new.location = launch.location
    for view in views:
        view.location = launch.location
        root = view_root(view.results[0]).name_hint
        if name and root:
            view.results[0].name_hint = f"{root}_{name}"
    return views, new
