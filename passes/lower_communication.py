"""
`hir-lower-communication`: a resharding launch (a `hir.launch` whose region sees global, encoded
tensors: one `fusion.set` or a `fusion.sum` over the didx axis) becomes communication on the
current stream, followed by `hir.wait`:

| resharding (src -> dst)                           | becomes                                     |
|---------------------------------------------------|---------------------------------------------|
| set: didx axis a -> replicated, same mesh         | `hir.allgather` along a                     |
| set: replicated on mesh M -> replicated on M' ⊇ M | `hir.broadcast` from M's first device        |
| sum over didx axis -> replicated                  | local sum launch, `hir.allreduce` in place  |
| sum over didx axis -> didx axis b                 | local sum into a partial buffer, `hir.reduce_scatter` along b |

Inside a stream loop the launch already works on one chunk, so these are per-chunk collectives:
the collective-based pipelines. Collectives need contiguous buffers with the communicated axis
outermost in memory (all axes before it of extent 1, no strided view such as a chunk of a buffer
whose stream axis lies inside the didx axis); anything else is reported, not guessed.

Cost: linear in the module. One walk collects the streams, collectives and functions and whether
any launch reshards; only then does the walker visit every op, once (no second sweep), and each
resharding launch becomes a number of ops that depends on its own chunks and devices. The
copy-engine and ring rewrites look at each stream loop of a function's body and its own body once.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from hir.diagnostics import located
from hir.dialects import fusion, hir
from hir.dialects.hir import contiguous_strides, memref_strides
from hir.dialects.parallel_encoding import Layout, didx_chunk, layout_of, uneven_axis
from hir.dialects.syntax import array_values
from hir.passes.copy_engine import exchange_shards_over_copy_engine
from hir.passes.copy_engine_reduce import reduce_over_copy_engine
from hir.passes.resharding.local_copies import (
    Extent,
    axes_of,
    copy_launch,
    first_indices_launch,
    inverse,
    pad_with_zeros,
    sum_launch,
    temporary,
    to_front,
)
from hir.passes.resharding.set_lowering import broadcast, by_shard_size, lower_set_launch
from hir.passes.ring_backend import ring_collectives
from hir.passes.ring_shards import exchange_shards_over_ring
from hir.passes.symmetric_memory import RELEASES
from hir.pipeline import one_of, require_one_of


def _not_outermost(buffer: SSAValue, axis: int | None) -> str | None:
    """Why a collective cannot use `buffer` (along `axis`): None when it is contiguous with `axis` outermost."""
    t = buffer.type
    assert isinstance(t, MemRefType)
    if axis is not None and any(extent != 1 for extent in t.get_shape()[:axis]):
        return (
            f"the buffer {t} has larger axes before it; make the didx axis the outermost axis (after the stream axis)"
        )
    if isinstance(t.layout, NoneAttr):
        return None  # a whole buffer is contiguous
    strides = memref_strides(t)
    if None in strides or strides != contiguous_strides(t.get_shape()):
        return f"the buffer {t} is a strided view (a chunk along an inner stream axis); make the stream axis outermost"
    return None


def _scaled(buffer: SSAValue, axis: int, factor: int) -> int:
    """`buffer`'s static extent on `axis` times `factor` (the reduce-scatter's input is D outputs long)."""
    assert isinstance(buffer.type, MemRefType)
    extent = buffer.type.get_shape()[axis]
    assert extent != DYNAMIC_INDEX, "an even reduce-scatter's output axis has a static extent"
    return extent * factor


def _local_sum_launch(
    launch: hir.LaunchOp, op: fusion.SumOp, out: SSAValue, result_type: TensorType | None = None
) -> hir.LaunchOp:
    """The sum over this device's shard only (a partial sum), written into `out` (see `sum_launch`)."""
    new = sum_launch(launch.ins[0], out, array_values(op.dims), result_type)
    new.location = launch.location
    return new


def _require_contiguous(launch: hir.LaunchOp, what: str, buffers: list[tuple[SSAValue, int | None]]) -> None:
    """Reports (not guesses around) a buffer the collective cannot use as it is."""
    for buffer, axis in buffers:
        if (reason := _not_outermost(buffer, axis)) is not None:
            raise PassFailedException(
                located(
                    launch,
                    f"{what} needs contiguous buffers with the communicated axis outermost in memory, but {reason}",
                )
            )


class LowerReshardingLaunch(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, launch: hir.LaunchOp, rewriter: PatternRewriter) -> None:
        if not launch.is_resharding:
            return
        ops = [o for o in launch.body.block.ops if not isinstance(o, hir.YieldOp)]
        if len(ops) != 1 or not isinstance(ops[0], fusion.SetOp | fusion.SumOp) or len(launch.outs) != 1:
            raise PassFailedException(
                located(launch, "a resharding launch must hold exactly one fusion.set or fusion.sum")
            )
        op = ops[0]
        src, dst = op.operands[0].type, op.results[0].type
        assert isinstance(src, TensorType)
        assert isinstance(dst, TensorType)
        new_ops = (
            self.lower_set(launch, layout_of(src), layout_of(dst))
            if isinstance(op, fusion.SetOp)
            else self.lower_partial_sum(launch, op, layout_of(src), layout_of(dst))
        )
        for new in new_ops:
            new.location = launch.location
        rewriter.replace(launch, new_ops, [])

    def lower_set(self, launch: hir.LaunchOp, src: Layout, dst: Layout) -> list[Operation]:
        return lower_set_launch(launch, src, dst)

    def lower_partial_sum(self, launch: hir.LaunchOp, op: fusion.SumOp, src: Layout, dst: Layout) -> list[Operation]:
        target = launch.outs[0]
        mesh = dst.mesh or src.mesh
        # The sum adds every device's partial whatever its position in the source mesh, so only
        # the set of devices must stay; the result's mesh order places the pieces.
        # A replicated result on a sub-mesh (nvFuser's Reduce: the sum onto one device) is the
        # all-reduce over the source mesh: every device of the sub-mesh then holds the sum.
        onto_sub_mesh = dst.didx_axis is None and bool(src.mesh) and set(dst.mesh or ()) < set(src.mesh or ())
        # Onto devices the source lacks (a replicated result): the all-reduce over the source
        # mesh, then the broadcast of the sum over both meshes, as a set between them does.
        beyond = dst.didx_axis is None and bool(src.mesh) and bool(dst.mesh) and not set(dst.mesh) <= set(src.mesh)
        if src.mesh and dst.mesh and set(src.mesh) != set(dst.mesh) and not (onto_sub_mesh or beyond):
            raise PassFailedException(
                located(launch, "more than one sharding change in one op (a reduction and a mesh change)")
            )
        if beyond:
            reduced = self.lower_partial_sum(launch, op, src, Layout(dst.kinds, dst.stream_chunks, src.mesh))
            union = sorted(set(src.mesh) | set(dst.mesh))
            return [*reduced, *broadcast(target, target, union.index(src.mesh[0]), union)]
        if dst.didx_axis is None:
            devices = src.mesh if onto_sub_mesh else mesh
            if _not_outermost(target, None) is None:
                local = _local_sum_launch(launch, op, target)
                reduce = hir.AllreduceOp(target, target, devices, "sum")
                return [local, reduce, hir.WaitOp(reduce.result)]
            # A strided chunk (an inner stream axis, nvFuser's AllreduceNoncontig): the collective
            # reduces contiguous buffers, so the local sum goes into a `%partial` temporary that is
            # all-reduced in place and copied into the chunk.
            ops, partial = temporary(axes_of(target), target, "partial")
            reduce = hir.AllreduceOp(partial, partial, devices, "sum")
            return [
                *ops,
                _local_sum_launch(launch, op, partial),
                reduce,
                hir.WaitOp(reduce.result),
                copy_launch(partial, target),
            ]
        axis = dst.didx_axis
        what = f"reduce-scatter along axis {axis}"
        result_type = op.results[0].type
        assert isinstance(result_type, TensorType)
        extent = result_type.get_shape()[axis]
        uneven = extent != len(mesh) and (extent == DYNAMIC_INDEX or extent % len(mesh))
        if not uneven and _not_outermost(target, axis) is not None:
            return self.staged_reduce_scatter(launch, op, axis, mesh)
        _require_contiguous(launch, what, [(target, None)])
        if uneven:
            return self.padded_reduce_scatter(launch, op, axis, extent, mesh)
        direct = self.partial_as_view(launch, op, src, axis)
        if direct is not None:  # the local sum over an extent-1 axis is a view: reduce-scatter it, no copy
            view, ops = direct
            scatter = hir.ReduceScatterOp(view, target, axis, mesh, "sum")
            return [*ops, scatter, hir.WaitOp(scatter.result)]
        assert isinstance(target.type, MemRefType)
        shape = list(target.type.get_shape())
        shape[axis] *= len(mesh)
        partial = hir.AllocateOp(MemRefType(target.type.element_type, shape))
        partial.result.name_hint = "partial"
        _require_contiguous(launch, what, [(partial.result, axis)])
        local = _local_sum_launch(launch, op, partial.result)
        scatter = hir.ReduceScatterOp(partial.result, target, axis, mesh, "sum")
        return [partial, local, scatter, hir.WaitOp(scatter.result)]

    @staticmethod
    def staged_reduce_scatter(
        launch: hir.LaunchOp, op: fusion.SumOp, axis: int, mesh: tuple[int, ...]
    ) -> list[Operation]:
        """
        A reduce-scatter onto an axis that is not outermost in the output's memory (or onto a
        strided chunk): the collective splits its buffers along their outermost axis, so the local
        sum goes into a `%partial` (the output's shape, axis `axis` D times longer), is permuted
        into an axis-first `%sent`, reduce-scattered into an axis-first `%received` and permuted
        back into the output: the transpose around an inner-axis collective, as for an all-gather.
        """
        target = launch.outs[0]
        whole: list[Extent] = axes_of(target)
        perm = to_front(len(whole), axis)
        whole[axis] = _scaled(target, axis, len(mesh))
        ops, partial = temporary(whole, target, "partial")
        ops.append(_local_sum_launch(launch, op, partial))
        allocation, sent = temporary([whole[a] for a in perm], target, "sent")
        ops += [*allocation, copy_launch(partial, sent, perm)]
        allocation, received = temporary(axes_of(target, perm), target, "received")
        scatter = hir.ReduceScatterOp(sent, received, 0, mesh, "sum")
        ops += [*allocation, scatter, hir.WaitOp(scatter.result), copy_launch(received, target, inverse(perm))]
        return ops

    @staticmethod
    def padded_reduce_scatter(
        launch: hir.LaunchOp, op: fusion.SumOp, axis: int, extent: int, mesh: tuple[int, ...]
    ) -> list[Operation]:
        """
        A sum over the didx axis onto an uneven didx axis (static extent L over D devices, c =
        ceil(L/D)): the transports reduce-scatter equal blocks, so the local sum is written into a
        `%partial` of extent D*c padded with zeros, reduce-scattered into a `%piece` of extent c,
        and this device's own indices of it (c, L mod c or none) copied into the output.
        """
        target = launch.outs[0]
        what = f"reduce-scatter along axis {axis}"
        assert isinstance(target.type, MemRefType)
        shape = list(target.type.get_shape())
        devices = len(mesh)
        if extent == DYNAMIC_INDEX or any(e == DYNAMIC_INDEX for a, e in enumerate(shape) if a != axis):
            raise PassFailedException(
                located(
                    launch,
                    f"{what} onto an uneven didx axis pads the partial sums with zeros, which needs static "
                    f"extents, but the result is {op.results[0].type}",
                )
            )
        chunk = didx_chunk(extent, devices)
        shape[axis] = devices * chunk
        partial = hir.AllocateOp(MemRefType(target.type.element_type, shape))
        partial.result.name_hint = "partial"
        _require_contiguous(launch, what, [(partial.result, axis)])
        unpadded = list(shape)
        unpadded[axis] = extent
        local = _local_sum_launch(launch, op, partial.result, TensorType(target.type.element_type, unpadded))
        pad_with_zeros(local, axis, devices * chunk - extent)
        shape[axis] = chunk
        piece = hir.AllocateOp(MemRefType(target.type.element_type, shape))
        piece.result.name_hint = "piece"
        scatter = hir.ReduceScatterOp(partial.result, piece.result, axis, mesh, "sum")
        part = [first_indices_launch(piece.result, target, axis, extent % chunk)] if extent % chunk else []
        own = by_shard_size(mesh, extent, whole=[copy_launch(piece.result, target)], part=part)
        return [partial, local, piece, scatter, hir.WaitOp(scatter.result), *own]

    @staticmethod
    def partial_as_view(
        launch: hir.LaunchOp, op: fusion.SumOp, src: Layout, axis: int
    ) -> tuple[SSAValue, list[Operation]] | None:
        """
        When the sum reduces only the didx axis (local extent 1), this device's partial is its
        input without that axis: a view, if it is contiguous with `axis` outermost (what the
        collective needs).
        """
        source = launch.ins[0]
        assert isinstance(source.type, MemRefType)
        if src.didx_axis is None or op.axes != (src.didx_axis,) or source.type.get_shape()[src.didx_axis] != 1:
            return None  # (an uneven or longer didx axis has more than one index here to sum)
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        zero.result.name_hint = "c0"
        view = hir.AliasSelectOp(source, zero.result, src.didx_axis)
        view.result.name_hint = "partial"
        if _not_outermost(view.result, axis) is not None:
            return None
        return view.result, [zero, view]


def refuse_uneven(module: ModuleOp, backend: str) -> None:
    """
    The copy-engine and ring backends split and push blocks of one index per device: a
    resharding of an uneven didx axis (an extent other than the mesh size, padded to equal
    pieces by the nccl lowering) is reported at the op, not lowered.
    """
    for launch in module.walk():
        if not isinstance(launch, hir.LaunchOp) or not launch.is_resharding:
            continue
        for inner in launch.body.block.ops:
            for value in (*inner.operands, *inner.results):
                if (uneven := uneven_axis(value.type)) is None:
                    continue
                extent = "?" if uneven.extent == DYNAMIC_INDEX else uneven.extent
                raise PassFailedException(
                    located(
                        launch,
                        f"backend={backend} does not lower a resharding of an uneven didx axis (axis {uneven.axis} has "
                        f"extent {extent} over {len(uneven.mesh)} devices, not one index per device): "
                        "use backend=nccl, which pads the shards to equal pieces",
                    )
                )


BACKENDS = ("nccl", "copy-engine", "ring")
COMM_PRIORITIES = ("normal", "high")


@dataclass(frozen=True)
class LowerCommunicationPass(ModulePass):
    """
    Resharding launches become collectives + hir.wait on the current stream. `backend`:
    `nccl` (collectives; the portable default), `copy-engine`, which also turns loops over the
    devices' shards into pushes into peers' symmetric memory (see `copy_engine`), or `ring`,
    which turns the all-gathers and the sum reduce-scatters and all-reduces into rings of
    `hir.collective_permute` steps (see `ring_backend`) and loops over the devices' shards into
    a ring that computes on each shard as it arrives (see `ring_shards`). `comm-priority`:
    `normal` or `high`, which makes the comm streams the backend adds (`hir.stream`, as the
    copy-engine's) high-priority streams; collectives run on torch's own streams, whose priority
    is the process group's.
    """

    name = "hir-lower-communication"

    backend: str = one_of("nccl", BACKENDS)
    chunks: int = 0
    """
    copy-engine: pushes per remote shard of an all-gather, pieces of the own GEMM and its adds of
    a reduce-scatter or all-reduce (0: chosen from the sizes).
    """
    release: str = one_of("auto", RELEASES)
    """copy-engine: where the barrier that frees the receive buffers goes: `end`, `start` or `auto`."""
    comm_priority: str = one_of("normal", COMM_PRIORITIES)
    """`high`: the comm streams the backend adds are high-priority pool streams."""

    def __post_init__(self) -> None:
        # Checked when the pass is built, so a pipeline with a bad option fails before any input is read.
        if self.chunks < 0:
            raise ValueError(f"chunks must be >= 0 (0: chosen from the sizes), got {self.chunks}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown communication backend '{self.backend}', expected one of {', '.join(BACKENDS)}")
        require_one_of("release", self.release, RELEASES)
        require_one_of("comm-priority", self.comm_priority, COMM_PRIORITIES)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        streams_before: set[Operation] = set()
        collectives_before: set[Operation] = set()
        functions: list[func.FuncOp] = []
        reshards = False
        for o in op.walk():  # one walk: the module has thousands of ops
            if isinstance(o, hir.StreamOp):
                streams_before.add(o)
            elif isinstance(o, hir.CommunicationOp):
                collectives_before.add(o)
            elif isinstance(o, func.FuncOp) and o.body.blocks:
                functions.append(o)
            elif isinstance(o, hir.LaunchOp) and o.is_resharding:
                reshards = True
        if self.backend != "nccl":
            refuse_uneven(op, self.backend)
        if self.backend == "copy-engine":  # before the NCCL lowering takes the partial sums
            for function in functions:
                reduce_over_copy_engine(function, self.chunks, self.release)
        if reshards or self.backend == "copy-engine":  # else the walker would visit every op for nothing
            PatternRewriteWalker(
                GreedyRewritePatternApplier([LowerReshardingLaunch()], dce_enabled=False), apply_recursively=False
            ).rewrite_module(op)
        if self.backend == "copy-engine":
            for function in functions:
                exchange_shards_over_copy_engine(function, self.chunks, self.release)
        if self.backend == "ring":  # the collectives this lowering made, not those of the input
            lowered = {o for o in op.walk() if isinstance(o, hir.CommunicationOp)} - collectives_before
            for function in functions:
                exchange_shards_over_ring(function)
                ring_collectives(function, lowered)
        if self.comm_priority == "high":
            # The compute streams are the loops' workers; every pool stream a backend adds (the
            # all-gather's comm stream, the reduce-scatter's comm and reduction streams) is a comm stream.
            for stream in op.walk():
                if isinstance(stream, hir.StreamOp) and stream not in streams_before:
                    stream.high_priority = UnitAttr()
