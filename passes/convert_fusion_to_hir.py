"""
`convert-fusion-to-hir`: a fusion-level function becomes a host program over buffers.

Each *unit* (a bare fusion op or a `fusion.segment`) becomes, in program order:

- not stream-parallel: `hir.allocate` of its outputs, then one `hir.launch` on whole buffers;
- stream-parallel: the allocations, then a `hir.stream_for` forked from the caller's stream
  (iteration i on pool stream `i mod num_streams`) whose body holds a view (`hir.alias_select`,
  or `hir.alias_chunk` for `stream(N)`) of every operand whose axis the loop iterates (found
  through the ops' axis maps, see `stream_axes`) and a `hir.launch` into the output views.

`hir-loop-fusion` later merges adjacent stream loops, and `hir-expand-stream-loops` turns each
into the fork loop and main loop of explicit stream ops. Buffers have the *local* shape (a
`didx` axis has extent 1); each argument and result records its fusion-level type as
`fusion.type`.

Cost: linear in the module. One sweep over each function's ops; a unit is converted in time
linear in its ops, operands and results (its axes come from one backward pass over its ops, see
`stream_axes`), and the values shared by all units (index constants, buffer extents, the caller
stream, the number of streams) are memoized per function, each built once. The pass emits several
hir ops per stream-parallel unit (allocations, a loop, views, a launch, a yield), many of which
hir-loop-fusion and cse remove: a constant factor, but the largest stage of the pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException, VerifyException

from hir.diagnostics import located
from hir.dialects import fusion, hir
from hir.dialects.functions import fusion_type_attrs, inline_calls, is_fusion_function
from hir.dialects.hir import chunk_extent
from hir.dialects.parallel_encoding import (
    SERIAL,
    STREAM,
    ParallelAttr,
    didx_chunk,
    is_uneven,
    layout_of,
    local_shape,
)
from hir.dialects.shape_rules import Slicing
from hir.dialects.type_cache import cache_by_identity
from hir.passes.resharding.origin import located_at_origin
from hir.passes.resharding.rotating_reduce import RotatingReduce, reduce_step, rotating_reduce_of
from hir.passes.resharding.set_lowering import shard_loop_step
from hir.passes.sharding import is_communication, is_resharding
from hir.passes.stream_axes import (
    Iteration,
    is_broadcast_axis,
    iteration_of,
    operand_slicings,
    propagate_axes,
    unit_inputs,
    unit_ops,
)


# Types are immutable and a module repeats a few: each conversion is computed once per type.
@cache_by_identity(maxsize=4096)
def buffer_type(t: Attribute) -> MemRefType:
    assert isinstance(t, TensorType)
    return MemRefType(t.element_type, local_shape(t))


@cache_by_identity(maxsize=4096)
def sliced_tensor_type(t: Attribute, slicing: Slicing | None, global_view: bool = False) -> TensorType:
    """
    What a launch region sees of a value in one iteration: its local shape minus the iterated
    axes (or one chunk of the axis). A communication's region sees the global view instead, with
    the encoding that says how it is sharded (the loop's stream axis consumed).
    """
    assert isinstance(t, TensorType)
    shape = list(t.get_shape()) if global_view else local_shape(t)
    kinds = list(layout_of(t).kinds)
    if slicing is not None:
        if slicing.chunks is None:
            del shape[slicing.axis : slicing.axis + len(slicing.axes)]
            del kinds[slicing.axis : slicing.axis + len(slicing.axes)]
        else:
            shape[slicing.axis] = chunk_extent(shape[slicing.axis], slicing.chunks)
            kinds[slicing.axis] = SERIAL
    mesh = layout_of(t).mesh
    if not global_view or (set(kinds) <= {SERIAL} and not mesh):
        return TensorType(t.element_type, shape)
    kinds = [SERIAL if k == STREAM else k for k in kinds]
    return TensorType(t.element_type, shape, ParallelAttr(kinds, None, mesh))


def removed_axes(slicing: Slicing | None) -> tuple[int, ...]:
    """The axes an iteration's tensor lacks (a chunk keeps its axis)."""
    return slicing.axes if slicing is not None and slicing.chunks is None else ()


def check_slice_semantics(
    op: fusion.FusionOp,
    clone: fusion.FusionOp,
    slicings: Sequence[Slicing | None],
    result_slicing: Slicing | None,
) -> None:
    """
    `clone` (`op` on the operands without their iterated axes) must map its axes as `op` does minus
    those axes; otherwise it computes something else than one slice of `op`'s result. E.g. a matmul
    operand of rank >= 3 sliced on its M or N axis: torch.matmul then reads a batch axis as M or K.
    """
    operand_removed = [removed_axes(s) for s in slicings]
    result_removed = removed_axes(result_slicing)

    def kept(k: int, a: int) -> tuple[int, int]:
        return k, a - sum(a > removed for removed in operand_removed[k])

    def extent(o: fusion.FusionOp, k: int, a: int) -> int:
        t = o.operands[k].type
        return t.get_shape()[a] if isinstance(t, TensorType) else 0

    # An extent-1 axis maps to any other (`reshape_map` pairs them by position): slicing it
    # commutes with every op, so only the axes with more than one index are compared. The extents
    # are the clone's on both sides: a probe on a mesh has the local extents (a didx axis of
    # extent D is 1 there) where `op` has the global ones.
    expected = [
        sorted(kept(k, a) for k, a in sources if a not in operand_removed[k] and extent(clone, *kept(k, a)) != 1)
        for r, sources in enumerate(op.axis_map())
        if r not in result_removed
    ]
    try:
        actual = [sorted((k, a) for k, a in sources if extent(clone, k, a) != 1) for sources in clone.axis_map()]
    except VerifyException:  # the sliced operands do not even fit together
        actual = None
    if actual != expected:
        removed = ", ".join(f"{s.describe()} of operand #{k}" for k, s in enumerate(slicings) if s is not None)
        result_axis = "?" if result_slicing is None else result_slicing.describe().removeprefix("axis ")
        raise PassFailedException(
            located(
                op,
                f"cannot run slice by slice on result axis {result_axis}: on its operands without "
                f"{removed or 'that axis'} it computes something else (stream another axis)",
            )
        )


def check_chunk_semantics(op: fusion.FusionOp, result_slicing: Slicing | None, global_view: bool) -> None:
    """
    A chunk of a result axis that maps to no operand axis passes the operands whole, which is
    right only if the axis is made independently of its index (a new axis of `fusion.broadcast`,
    a `fusion.full`), not if each element reads the whole operand (`fusion.softmax`'s axis, a
    sliced axis of `fusion.slice`). Told apart as for single slices: `op` on one slice (values of
    a throwaway block) must compute that slice. A mapped axis is chunked in its operands too.
    """
    if result_slicing is None or op.axis_map()[result_slicing.axis]:
        return
    axis = result_slicing.axis
    check_made_axis(op, axis, global_view)
    extent = op.results[0].type.get_shape()[axis]  # type: ignore[attr-defined]
    if sliced_tensor_type(op.results[0].type, result_slicing, global_view).get_shape()[axis] == DYNAMIC_INDEX:
        # The op makes this axis (no operand has it), and making one needs its extent, which a
        # chunk of uneven (or dynamic) size does not have in the IR.
        of = "a dynamic extent" if extent == DYNAMIC_INDEX else f"{extent}"
        raise PassFailedException(
            located(
                op,
                f"cannot run in chunks on result axis {axis}: the op makes that axis (no operand has it) and "
                f"needs its extent, but stream({result_slicing.chunks}) of {of} has chunks of different sizes; "
                "use a chunk count that divides the extent, or plain stream",
            )
        )


def check_made_axis(op: fusion.FusionOp, axis: int, global_view: bool) -> None:
    """Raises unless `op` on its whole operands computes each index of result `axis` alike."""
    no_axes: list[int | None] = [None] * len(op.operands)
    values = Block(arg_types=[sliced_tensor_type(o.type, None, global_view) for o in op.operands])
    one_index = Slicing((axis,))
    probe = type(op).create(
        operands=list(values.args),
        result_types=[sliced_tensor_type(op.results[0].type, one_index, global_view)],
        properties=op.properties_without_axes(no_axes, axis),
    )
    check_slice_semantics(op, probe, [None] * len(op.operands), one_index)


def makes_uneven_chunks(unit: Operation) -> bool:
    """
    A bare op that makes its stream(N) axis (a broadcast's new axis, a `fusion.full`) in chunks of
    different sizes: making a chunk needs its extent, which the IR does not have (`?`), so the op
    runs whole, once (its result is the same; only this op is not pipelined).
    """
    if not isinstance(unit, fusion.FusionOp) or len(unit.results) != 1:
        return False
    layout = layout_of(unit.results[0].type)
    if layout.stream_axis is None or layout.stream_chunks is None or unit.axis_map()[layout.stream_axis]:
        return False
    extent = unit.results[0].type.get_shape()[layout.stream_axis]  # type: ignore[attr-defined]
    if chunk_extent(extent, layout.stream_chunks) != DYNAMIC_INDEX:
        return False
    try:
        check_made_axis(unit, layout.stream_axis, False)
    except PassFailedException:  # not made but read whole (a softmax's axis): refused as it is
        return False
    return True


def global_probe(
    op: fusion.FusionOp, clone: fusion.FusionOp, slicings: Sequence[Slicing | None], result_slicing: Slicing
) -> fusion.FusionOp:
    """
    `clone` on the global shapes of its slices, for `check_slice_semantics`: `op`'s axis map is
    the global one, and a device's shard of extent 1 belongs to no group of a reshape's local
    shapes (a reshape keeping a didx axis of one index per device would look like it drops it).
    """
    if not any(layout_of(v.type).mesh for v in (*op.operands, op.results[0])):
        return clone
    values = Block(arg_types=[sliced_tensor_type(o.type, s, True) for o, s in zip(op.operands, slicings)])
    return type(op).create(
        operands=list(values.args),
        result_types=[sliced_tensor_type(op.results[0].type, result_slicing, True)],
        properties=dict(clone.properties),
    )


@dataclass
class FunctionConverter:
    """Builds the hir body of one fusion-level function."""

    source: func.FuncOp
    block: Block = field(init=False)
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """Fusion-level value -> the buffer holding it."""
    _constants: dict[int, SSAValue] = field(default_factory=dict)
    _dims: dict[tuple[SSAValue, int], SSAValue] = field(default_factory=dict)
    _shard_extents: dict[tuple[int, tuple[int, ...]], SSAValue] = field(default_factory=dict)
    _prelude: list[Operation] = field(default_factory=list)
    _main_stream: SSAValue | None = None
    _num_streams: SSAValue | None = None

    def convert(self) -> func.FuncOp:
        signature = self.source.function_type
        for kind, types in (("argument", signature.inputs.data), ("result", signature.outputs.data)):
            for k, t in enumerate(types):
                if not isinstance(t, TensorType):
                    message = f"{kind} #{k} has type {t}: a fusion-level function takes and returns tensors"
                    raise PassFailedException(located(self.source, message))
        src_block = self.source.body.block
        self.block = Block(arg_types=[buffer_type(t) for t in self.source.function_type.inputs.data])
        for old, new in zip(src_block.args, self.block.args):
            new.name_hint = old.name_hint
            self.buffers[old] = new
        body: list[Operation] = []
        for op in src_block.ops:
            body.extend(self.convert_op(op))
        self.block.add_ops([*self._prelude, *body])
        return self._new_function()

    def convert_op(self, op: Operation) -> list[Operation]:
        if isinstance(op, func.ReturnOp):
            return [func.ReturnOp(*[self.buffers[v] for v in op.arguments])]
        if not isinstance(op, fusion.FusionOp | fusion.SegmentOp):
            raise PassFailedException(located(op, "convert-fusion-to-hir expects only fusion ops in the function"))
        global_view = is_communication(op)
        if not global_view and any(is_resharding(inner) for inner in unit_ops(op)):
            raise PassFailedException(
                located(
                    op,
                    "computes on operands sharded differently from its result: run "
                    "fusion-decompose-resharding first (part of --stream-lowering)",
                )
            )
        iteration = iteration_of(op)
        if global_view and isinstance(op, fusion.FusionOp) and (plan := rotating_reduce_of(op)) is not None:
            ops = self.rotating_reduce(op, plan)
        elif iteration is None or (not global_view and makes_uneven_chunks(op)):
            ops = self.whole_launch(op, global_view)
        else:
            ops = self.stream_loops(op, iteration, global_view)
        for new in ops:
            new.location = op.location
        return ops

    # -- units ------------------------------------------------------------------------------------

    def whole_launch(self, unit: Operation, global_view: bool) -> list[Operation]:
        ops, outs = self.allocate_outputs(unit)
        ins = [self.buffers[v] for v in unit.operands]
        ops.append(hir.LaunchOp(ins, outs, self.launch_region(unit, {}, None, global_view)))
        return ops

    def stream_loops(self, unit: Operation, iteration: Iteration, global_view: bool) -> list[Operation]:
        axes = propagate_axes(unit)
        ops, outs = self.allocate_outputs(unit)
        trip_count = self.trip_count(unit, outs, iteration)
        body = self.stream_body()
        i = body.args[0]
        if global_view and (shard_axis := device_iterated_axis(unit, axes)) is not None:
            body.add_ops(self.shard_broadcast(unit, iteration, shard_axis, i, outs, body))
            return [*ops, self.stream_for(trip_count, body)]
        inputs = unit_inputs(unit)
        ins: list[SSAValue] = []
        arg_axes = input_axes(unit, axes)
        for k, (inner, operand) in enumerate(zip(inputs, unit.operands)):
            slicing = arg_axes[k]
            buffer = self.buffers[operand]
            if slicing is None:
                ins.append(buffer)
            elif is_broadcast_axis(inner, slicing, iteration):
                if slicing.chunks is None:
                    ins.append(self.view(body, buffer, self.constant(0), slicing))
                else:  # a chunk of a broadcast axis is the whole extent-1 axis
                    ins.append(buffer)
                    arg_axes[k] = None
            else:
                ins.append(self.view(body, buffer, i, slicing))
        out_views = [self.view(body, out, i, output_slicing(result)) for out, result in zip(outs, unit.results)]
        region = self.launch_region(unit, axes, iteration, global_view, arg_axes)
        launch = hir.LaunchOp(ins, out_views, region)
        launch.location = unit.location
        body.add_op(launch)
        return [*ops, self.stream_for(trip_count, body)]

    def stream_body(self) -> Block:
        """The body of a stream loop: `%i` and its worker stream `%s`."""
        # The values the loop uses, made at the top of the function in this order.
        self.num_streams()
        self.main_stream()
        self.constant(0)
        self.constant(1)
        body = Block(arg_types=[IndexType(), hir.StreamType()])
        body.args[0].name_hint, body.args[1].name_hint = "i", "s"
        return body

    def stream_for(self, trip_count: SSAValue, body: Block) -> hir.StreamForOp:
        """`0..trip_count` on pool streams, forked from and joined into the caller's stream."""
        return hir.StreamForOp(
            self.constant(0), trip_count, self.constant(1), self.num_streams(), self.main_stream(), body
        )

    def shard_broadcast(
        self, unit: Operation, iteration: Iteration, axis: int, i: SSAValue, outs: Sequence[SSAValue], body: Block
    ) -> list[Operation]:
        """
        A loop over a sharded axis (didx -> stream): iteration i needs device i's shard, which
        device i broadcasts to the mesh (nvFuser's broadcast-based all-gather); see `shard_loop_step`.
        """
        source, result = unit.operands[0], unit.results[0]
        src_layout, dst_layout = layout_of(source.type), layout_of(result.type)
        if iteration.chunks is not None:
            raise PassFailedException(
                located_at_origin(unit, "a stream(N) loop over a sharded axis is not supported; use stream")
            )
        assert isinstance(source.type, TensorType)
        if is_uneven(source.type):
            extent = source.type.get_shape()[axis]
            raise PassFailedException(
                located_at_origin(
                    unit,
                    f"a loop over the shards of didx axis {axis} needs one index per device, but it has extent "
                    f"{'?' if extent == DYNAMIC_INDEX else extent} over {len(src_layout.mesh)} devices: gather it "
                    "first (a set to a replicated value), then loop over the gathered axis",
                )
            )
        if dst_layout.mesh and src_layout.mesh and dst_layout.mesh != src_layout.mesh:
            raise PassFailedException(
                located_at_origin(
                    unit,
                    f"more than one sharding change in one op (a loop over the shards of didx axis {axis} "
                    f"and a move from mesh {list(src_layout.mesh)} to {list(dst_layout.mesh)}): split it in two sets",
                )
            )
        shard = self.view(body, self.buffers[source], self.constant(0), Slicing((axis,)))
        stream_axis = dst_layout.stream_axis
        assert stream_axis is not None
        target = self.view(body, outs[0], i, Slicing((stream_axis,)))
        slice_axis = dst_layout.didx_axis
        if slice_axis is not None and slice_axis > stream_axis:
            slice_axis -= 1  # numbered in the iteration's view
        ops = shard_loop_step(shard, target, i, src_layout.mesh, slice_axis)
        for op in ops:
            op.location = unit.location
        return ops

    def rotating_reduce(self, unit: fusion.FusionOp, plan: RotatingReduce) -> list[Operation]:
        """
        A sum whose result's didx axis is its operand's stream axis: a loop over the mesh whose
        iteration i reduces chunk i to device mesh[i] (`reduce_step`); hir-loop-fusion merges it
        with the producer's loop.
        """
        ops, outs = self.allocate_outputs(unit)
        body = self.stream_body()
        i = body.args[0]
        chunk = self.view(body, self.buffers[unit.operands[0]], i, Slicing((plan.stream_axis,)))
        step = reduce_step(plan, chunk, outs[0], i)
        for op in [*body.ops, *step]:
            op.location = unit.location
        body.add_ops(step)
        return [*ops, self.stream_for(self.constant(len(plan.mesh)), body)]

    # -- pieces -----------------------------------------------------------------------------------

    def allocate_outputs(self, unit: Operation) -> tuple[list[Operation], list[SSAValue]]:
        ops: list[Operation] = []
        outs: list[SSAValue] = []
        for result in unit.results:
            alloc = hir.AllocateOp(buffer_type(result.type), self.dynamic_sizes(unit, result))
            alloc.result.name_hint = result.name_hint
            ops.append(alloc)
            self.buffers[result] = alloc.result
            outs.append(alloc.result)
        return ops, outs

    def dynamic_sizes(self, unit: Operation, result: SSAValue) -> list[SSAValue]:
        """The extent of an input buffer axis for each dynamic extent of `result` (found through the axis maps)."""
        assert isinstance(result.type, TensorType)
        sizes: list[SSAValue] = []
        layout = layout_of(result.type)
        for axis, extent in enumerate(local_shape(result.type)):
            if extent != DYNAMIC_INDEX:
                continue
            if axis == layout.didx_axis and (is_communication(unit) or result.type.get_shape()[axis] != DYNAMIC_INDEX):
                # This device's chunk of the axis: an input may hold it whole (a scatter), or
                # none may have it (a broadcast).
                sizes.append(self.shard_extent(unit, result.type, axis))
                continue
            source = self.extent_source(unit, result, axis)
            if source is None:
                raise PassFailedException(
                    located(unit, f"cannot infer the dynamic extent of axis {axis} of the result from its inputs")
                )
            sizes.append(self.extent(*source))
        return sizes

    def extent(self, buffer: SSAValue, axis: int) -> SSAValue:
        """
        A buffer axis's extent: a constant, the size its `hir.allocate` was given, or one
        `memref.dim` of an argument at the top. So two loops over the same extent get the same
        bound value, which hir-loop-fusion needs to merge them, and nothing sits between them.
        """
        assert isinstance(buffer.type, MemRefType)
        shape = buffer.type.get_shape()
        if shape[axis] != DYNAMIC_INDEX:
            return self.constant(shape[axis])
        if isinstance(alloc := buffer.owner, hir.AllocateOp):
            dynamic_axes = [a for a, extent in enumerate(shape) if extent == DYNAMIC_INDEX]
            return alloc.dynamic_sizes[dynamic_axes.index(axis)]
        if (dim := self._dims.get((buffer, axis))) is None:
            op = memref.DimOp(buffer, self.constant(axis))
            self._prelude.append(op)
            dim = self._dims[(buffer, axis)] = op.result
        return dim

    def shard_extent(self, unit: Operation, t: TensorType, axis: int) -> SSAValue:
        """
        This device's extent of the uneven didx axis `axis` of `t` (static extent L over D
        devices): min(c, L - min(p*c, L)) with c = ceil(L/D) at its mesh position p (0 outside
        the mesh, as the runtime shards inputs), computed once per function at the top.
        """
        extent = t.get_shape()[axis]
        mesh = layout_of(t).mesh
        if extent == DYNAMIC_INDEX:
            message = (
                f"a resharding of a didx axis of dynamic extent is not supported (didx axis {axis} of the result "
                f"has extent ? over {len(mesh)} devices): give it a static extent"
            )
            raise PassFailedException(located_at_origin(unit, message))
        if (known := self._shard_extents.get((extent, mesh))) is not None:
            return known
        chunk = didx_chunk(extent, len(mesh))
        me = hir.DeviceIndexOp(mesh, outside=0)
        me.result.name_hint = "me"
        start = arith.MuliOp(me.result, self.constant(chunk))
        clamped = arith.MinUIOp(start.result, self.constant(extent))
        rest = arith.SubiOp(self.constant(extent), clamped.result)
        local = arith.MinUIOp(rest.result, self.constant(chunk))
        local.result.name_hint = "shard_extent"
        self._prelude += [me, start, clamped, rest, local]
        self._shard_extents[(extent, mesh)] = local.result
        return local.result

    def extent_source(self, unit: Operation, value: SSAValue, axis: int) -> tuple[SSAValue, int] | None:
        """An input buffer axis with the same extent as `value`'s `axis`."""
        inputs = list(unit_inputs(unit))
        if value in inputs:
            return self.buffers[unit.operands[inputs.index(value)]], axis
        if isinstance(unit, fusion.SegmentOp) and value in unit.results:
            value = unit.yield_op.values[unit.results.index(value)]
        op = value.owner
        assert isinstance(op, fusion.FusionOp)
        for operand_index, operand_axis in op.extent_map()[axis]:
            operand = op.operands[operand_index]
            assert isinstance(operand.type, TensorType)
            if operand.type.get_shape()[operand_axis] == 1:
                continue  # a broadcast source says nothing about the extent
            if (found := self.extent_source(unit, operand, operand_axis)) is not None:
                return found
        return None

    def trip_count(self, unit: Operation, outs: Sequence[SSAValue], iteration: Iteration) -> SSAValue:
        if iteration.trip_count != DYNAMIC_INDEX:
            return self.constant(iteration.trip_count)
        axis = layout_of(unit.results[0].type).stream_axis
        assert axis is not None
        return self.extent(outs[0], axis)

    def view(self, body: Block, buffer: SSAValue, index: SSAValue, slicing: Slicing) -> SSAValue:
        """
        Iteration `index`'s slice of `buffer`: `hir.alias_chunk` for a chunk, `hir.alias_select`
        for one axis, and for several axes read as one index (a merging reshape) one select per
        axis, outermost first, at the digits of `index` in their extents (`divui`, `remui`).
        """
        if slicing.chunks is not None:
            op: Operation = hir.AliasChunkOp(buffer, index, slicing.axis, slicing.chunks)
            ops = [op]
        else:
            assert isinstance(buffer.type, MemRefType)
            extents = [buffer.type.get_shape()[a] for a in slicing.axes]
            ops = []
            view = buffer
            for k in range(len(extents)):
                digit = index
                inner = 1
                for e in extents[k + 1 :]:
                    inner *= e
                if inner != 1:
                    div = arith.DivUIOp(digit, self.constant(inner))
                    ops.append(div)
                    digit = div.result
                if k > 0:
                    rem = arith.RemUIOp(digit, self.constant(extents[k]))
                    ops.append(rem)
                    digit = rem.result
                op = hir.AliasSelectOp(view, digit, slicing.axis)
                ops.append(op)
                view = op.result
        if buffer.name_hint:
            op.result.name_hint = f"{buffer.name_hint}_i"
        body.add_ops(ops)
        return op.result

    def launch_region(
        self,
        unit: Operation,
        axes: dict[SSAValue, Slicing],
        iteration: Iteration | None,
        global_view: bool,
        arg_axes: list[Slicing | None] | None = None,
    ) -> Region:
        """
        Clones of the unit's ops on the per-iteration tensors (local ones, or global views for a
        communication). `arg_axes`: the slice of each region argument (default: `axes`).
        """
        del iteration  # each value's slice says whether it is chunked
        inputs = unit_inputs(unit)
        if arg_axes is None:
            arg_axes = [axes.get(v) for v in inputs]
        block = Block(arg_types=[sliced_tensor_type(v.type, a, global_view) for v, a in zip(inputs, arg_axes)])
        for old, new in zip(inputs, block.args):
            new.name_hint = old.name_hint
        if isinstance(unit, fusion.FusionOp):
            # A bare op reads its region arguments by position: one value used twice may be read
            # sliced by one use and whole by the other (`matmul %x, %x` over M).
            clone = self.clone_for_iteration(unit, list(block.args), arg_axes, axes.get(unit.results[0]), global_view)
            block.add_ops([clone, hir.YieldOp(clone.results[0])])
            return Region(block)
        mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
        for op in unit_ops(unit):
            clone = self.clone_for_iteration(
                op,
                [mapping[o] for o in op.operands],
                [axes.get(o) for o in op.operands],
                axes.get(op.results[0]),
                global_view,
            )
            mapping[op.results[0]] = clone.results[0]
            block.add_op(clone)
        yielded = unit.yield_op.values if isinstance(unit, fusion.SegmentOp) else unit.results
        block.add_op(hir.YieldOp(*[mapping[v] for v in yielded]))
        return Region(block)

    @staticmethod
    def clone_for_iteration(
        op: fusion.FusionOp,
        operands: list[SSAValue],
        slicings: list[Slicing | None],
        result_slicing: Slicing | None,
        global_view: bool,
    ) -> Operation:
        """
        `op` on one iteration's slices: the iterated axes removed (or chunked) from its types. An
        op that names its operands' slices itself (`slice_sources`: a split or merged reshape
        axis) computes its result's slice from them as it is; others are checked to (the axis map).
        """
        one_axis = result_slicing is not None and result_slicing.chunks is None and len(result_slicing.axes) == 1
        if one_axis and all(s is None or (s.chunks is None and len(s.axes) == 1) for s in slicings):
            assert result_slicing is not None
            operand_axes = [None if s is None else s.axis for s in slicings]
            properties = op.properties_without_axes(operand_axes, result_slicing.axis)
        else:
            properties = dict(op.properties)
        clone = type(op).create(
            operands=operands,
            result_types=[sliced_tensor_type(op.results[0].type, result_slicing, global_view)],
            properties=properties,
            attributes=dict(op.attributes),
        )
        if result_slicing is None or op.slice_sources(result_slicing) is not None:
            pass
        elif result_slicing.chunks is None:
            check_slice_semantics(op, global_probe(op, clone, slicings, result_slicing), slicings, result_slicing)
        else:
            check_chunk_semantics(op, result_slicing, global_view)
        clone.results[0].name_hint = op.results[0].name_hint
        clone.location = op.location  # a run-time failure inside the launch names this op's line, not the launch's
        return clone

    # -- shared values at the top of the function ---------------------------------------------------

    def constant(self, value: int) -> SSAValue:
        if (c := self._constants.get(value)) is None:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            op.result.name_hint = f"c{value}"
            self._prelude.append(op)
            c = self._constants[value] = op.result
        return c

    def main_stream(self) -> SSAValue:
        if self._main_stream is None:
            op = hir.GetCurrentStreamOp()
            op.result.name_hint = "main"
            self._prelude.append(op)
            self._main_stream = op.result
        return self._main_stream

    def num_streams(self) -> SSAValue:
        if self._num_streams is None:
            op = hir.NumStreamsOp()
            op.result.name_hint = "num_streams"
            self._prelude.append(op)
            self._num_streams = op.result
        return self._num_streams

    def _new_function(self) -> func.FuncOp:
        ftype = self.source.function_type
        outputs = [buffer_type(t) for t in ftype.outputs.data]
        converted = func.FuncOp(
            self.source.sym_name.data,
            (list(self.block.arg_types), outputs),
            Region(self.block),
            self.source.sym_visibility,
            arg_attrs=fusion_type_attrs(list(ftype.inputs.data)),
            res_attrs=fusion_type_attrs(list(ftype.outputs.data)),
        )
        converted.location = self.source.location
        return converted


def input_axes(unit: Operation, axes: dict[SSAValue, Slicing]) -> list[Slicing | None]:
    """
    The slice of each unit input, by position: a bare op reads each operand position through its
    own entry of `operand_slicings`, a segment each region argument through `axes`.
    """
    if isinstance(unit, fusion.FusionOp):
        result_slicing = axes.get(unit.results[0])
        if result_slicing is None:
            return [None] * len(unit.operands)
        return operand_slicings(unit, result_slicing)
    return [axes.get(v) for v in unit_inputs(unit)]


def output_slicing(result: SSAValue) -> Slicing:
    """What each iteration writes of a unit's output: its stream axis, or chunk i of it."""
    layout = layout_of(result.type)
    assert layout.stream_axis is not None
    return Slicing((layout.stream_axis,), layout.stream_chunks)


def device_iterated_axis(unit: Operation, axes: dict[SSAValue, Slicing]) -> int | None:
    """For a resharding set whose loop iterates the operand's didx axis: that axis."""
    if not isinstance(unit, fusion.SetOp):
        return None
    slicing = axes.get(unit.operands[0])
    if slicing is None or len(slicing.axes) != 1:
        return None
    return slicing.axis if slicing.axis == layout_of(unit.operands[0].type).didx_axis else None


@dataclass(frozen=True)
class ConvertFusionToHirPass(ModulePass):
    """Converts every fusion-level function of the module into a hir host program."""

    name = "convert-fusion-to-hir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        inline_calls(op)  # a program written as several functions is lowered as one per caller
        for function in [f for f in op.walk() if is_fusion_function(f)]:
            assert isinstance(function, func.FuncOp)
            converted = FunctionConverter(function).convert()
            parent = function.parent_block()
            assert parent is not None
            parent.insert_op_before(converted, function)
            function.detach()
            function.erase()
