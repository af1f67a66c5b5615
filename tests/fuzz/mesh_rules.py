"""
Which reshardings stream-lowering lowers, as the multi-device generator predicts them
(docs/multidevice.md, "The resharding table"). The generator keeps a placement that would be
refused only now and then (the program is then marked `may_reject`), so an unpredicted refusal is
a failure of the fuzz test: either the lowering refuses something it documents as supported, or
these rules are out of date.

An op *reshards* when it cannot compute on each device's shard (`passes/sharding.py`'s rule,
restated on `Placed` values); a `fusion.set` or a sum over the didx axis is then a communication,
and any other op gets a resharding set on each such operand first (fusion-decompose-resharding).
A communication is lowered when it is an all-gather, a broadcast to a larger mesh, a loop over
the devices' shards (didx -> stream, plain `stream` only), an all-reduce or a reduce-scatter, and
its buffers (inside a stream loop: the slice or chunk of one iteration) are contiguous with the
communicated axis outermost.

An *uneven* `didx` axis (extent L other than the mesh size D; the generator draws 1 <= L < D) is
computed on locally with any backend; its all-gather (to the mesh or a sub-mesh), scatter (from
the mesh or a super-mesh), all-to-all (that all-gather, then the local chunk), moves to a mesh of
the same size and sums are lowered by the nccl backend only, and its moves between meshes of
other sizes and its loops over the shards by none (docs/multidevice.md, "Uneven extents"). An operand whose `didx` axis is an extent-1 axis broadcast into a result `didx` axis of
more indices holds its one index on device `mesh[0]` only: it is gathered first ("Broadcast
axes").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from hir.dialects import shape_rules as rules
from hir.dialects.parallel_encoding import layout_of

from .values import Mesh, Shape, StreamAxis


@dataclass(frozen=True)
class Placed:
    """A value's shape and placement."""

    shape: Shape
    didx: int | None
    mesh: Mesh
    stream: StreamAxis | None = None

    @property
    def uneven(self) -> bool:
        """A didx axis whose extent is not the mesh size."""
        return self.didx is not None and bool(self.mesh) and self.shape[self.didx] != len(self.mesh)

    @property
    def local_shape(self) -> Shape:
        return tuple(1 if a == self.didx else e for a, e in enumerate(self.shape))


def meshes_differ(a: Mesh, b: Mesh) -> bool:
    """A value without a mesh lives wherever the program runs: it agrees with any mesh."""
    return bool(a) and bool(b) and a != b


def resharded_operands(operands: Sequence[Placed], result: Placed, axis_map: rules.AxisMap) -> list[int]:
    """The operands the op cannot consume as they are placed."""
    flagged: set[int] = set()
    for k, operand in enumerate(operands):
        if meshes_differ(operand.mesh, result.mesh):
            flagged.add(k)
        if operand.didx is not None:
            mapped = rules.operand_axis_to_result_axis(axis_map, k, operand.didx)
            if mapped is None or mapped != result.didx:  # a reduced or contracted didx axis too
                flagged.add(k)
    if result.didx is not None:
        # An extent-1 axis is broadcast to every device's indices, unless the result's didx axis
        # has one index over several devices (device mesh[0]'s alone: the operand is scattered).
        one_index = result.shape[result.didx] == 1 and len(result.mesh) > 1
        for k, axis in axis_map[result.didx]:
            operand = operands[k]
            if operand.didx == axis:
                if operand.shape[axis] == 1 and result.shape[result.didx] != 1 and len(operand.mesh) > 1:
                    flagged.add(k)  # one index (device mesh[0]'s) read by every device: gathered first
            elif operand.shape[axis] != 1 or one_index:
                flagged.add(k)
    return sorted(flagged)


def is_partial_sum(op: str, x: Placed, dims: Sequence[int]) -> bool:
    return op == "sum" and x.didx is not None and x.didx in dims


def gathered(operand: Placed, k: int, result: Placed, axis_map: rules.AxisMap) -> Placed:
    """The placement fusion-decompose-resharding gives operand k so that the op computes locally."""
    didx = None
    stream = None
    for axis in range(len(operand.shape)):
        mapped = rules.operand_axis_to_result_axis(axis_map, k, axis)
        if mapped is not None and mapped == result.didx:
            if operand.shape[axis] != 1 or result.shape[mapped] == 1:  # a broadcast axis stays replicated
                didx = axis
        elif mapped is not None and result.stream is not None and mapped == result.stream[0]:
            stream = (axis, result.stream[1])
    return Placed(operand.shape, didx, result.mesh or operand.mesh, stream)


def view_problem(shape: Shape, stream: StreamAxis | None, comm_axis: int | None) -> str | None:
    """
    Why a collective cannot use a buffer of `shape` as one iteration of a loop over `stream` sees
    it (`comm_axis` numbered in that view), as hir-lower-communication checks it: contiguous
    (exactly the row-major strides of the view, unless it is the whole buffer), with the axes
    before `comm_axis` of extent 1.
    """
    strides = contiguous_strides(shape)
    view = list(shape)
    if stream is not None:
        axis, chunks = stream
        if chunks is None:
            del view[axis]
            del strides[axis]
        else:
            view[axis] //= chunks
    if comm_axis is not None and any(e != 1 for e in view[:comm_axis]):
        return "the communicated axis is not outermost"
    if stream is not None and strides != contiguous_strides(tuple(view)):
        return "a strided view (a slice along an inner stream axis)"
    return None


def contiguous_strides(shape: Shape) -> list[int]:
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        running *= extent
    return list(reversed(strides))


def in_view(axis: int, stream: StreamAxis | None) -> int:
    """An axis's number once a plain stream loop has removed its axis."""
    return axis - (stream is not None and stream[1] is None and stream[0] < axis)


def set_problem(src: Placed, dst: Placed, backend: str = "nccl") -> str | None:
    """Why a `fusion.set` from `src` to `dst` (one shape) would be refused, if it would."""
    if src.didx == dst.didx and not meshes_differ(src.mesh, dst.mesh):
        return None  # the same placement: a local copy
    uneven = src.uneven or dst.uneven
    if dst.stream is not None and dst.stream[0] == src.didx:  # a loop over the devices' shards
        if dst.stream[1] is not None:
            return "a stream(N) loop over a sharded axis"
        if dst.mesh and src.mesh and dst.mesh != src.mesh:
            return "a loop over the shards and a mesh change"
        if uneven:
            return "a loop over the shards of an uneven didx axis"
        return None
    if src.didx is not None and dst.didx is not None:
        if meshes_differ(src.mesh, dst.mesh) and src.didx != dst.didx:
            return "a mesh change and a sharded axis change in one set"
        if uneven and meshes_differ(src.mesh, dst.mesh) and len(src.mesh) != len(dst.mesh):
            return "an uneven didx axis in a move between meshes of other sizes"
        if not uneven:
            return None  # an all-to-all (hir.all_to_all), or shards moving between meshes (send/recv pairs)
        # An uneven all-to-all: the padded all-gather, then the local chunk (nccl only, below).
    if uneven and src.mesh and dst.mesh:
        if not set(dst.mesh) <= set(src.mesh):  # a gather to, or a scatter on, M' inside M lowers
            return "an uneven gather to, or scatter from, another mesh in one set"
    if uneven and backend != "nccl":
        return f"backend={backend} does not lower a resharding of an uneven didx axis"
    # Gathers, scatters (local slices), broadcasts and local copies all lower, through contiguous
    # temporaries where the communicated axis is inner or the buffer a strided chunk.
    return None


def _output_chunk(result: Placed) -> list[int]:
    """One iteration's chunk of `result` (local extents): its stream axis dropped, or cut into its chunks."""
    chunk = list(result.local_shape)
    assert result.stream is not None
    axis, stream_chunks = result.stream
    if stream_chunks is None:
        del chunk[axis]
    else:
        chunk[axis] = -(-chunk[axis] // stream_chunks)
    return chunk


def partial_sum_problem(
    x: Placed, result: Placed, mesh_size: int, backend: str = "nccl", chunks: int = 0
) -> str | None:
    """Why a sum over `x`'s didx axis into `result` would be refused (all-reduce or reduce-scatter)."""
    # Another order of the same devices is no change; a replicated result on a sub-mesh is the
    # all-reduce over x's mesh.
    onto_sub_mesh = result.didx is None and set(result.mesh) < set(x.mesh)
    if x.mesh and result.mesh and set(x.mesh) != set(result.mesh) and not onto_sub_mesh:
        return "a reduction and a mesh change in one op"
    if (x.uneven or result.uneven) and backend != "nccl":
        return f"backend={backend} does not lower a sum over an uneven didx axis"
    if backend == "copy-engine" and result.stream is not None:
        # Fused with its producer in the loop, the copy-engine all-reduce cuts the output chunk
        # into one block per device along an axis longer than 1 that they divide (else refused);
        # `chunks` cuts the own GEMM and its adds into pieces along an axis of that block.
        block = _output_chunk(result)
        if result.didx is None:
            cut = [a for a, e in enumerate(block) if e > 1 and e % mesh_size == 0]
            if not cut:
                return "a copy-engine all-reduce whose output chunk no axis of which the devices divide"
            block[cut[0]] //= mesh_size
        if chunks > 1 and not any(e > 1 and e % chunks == 0 for e in block):
            return f"a copy-engine partial sum whose block no axis of which chunks={chunks} divides"
    if result.uneven and result.stream is not None:
        # Its output chunk has a dynamic extent on the scattered axis, so its strides are not known.
        return "a reduce-scatter onto an uneven didx axis inside a stream loop (a strided view)"
    target = view_problem(result.local_shape, result.stream, None)
    if result.didx is None or target is not None:
        return target
    partial = list(result.local_shape)
    stream = result.stream
    if stream is not None and stream[1] is None:
        del partial[stream[0]]
    elif stream is not None:
        partial[stream[0]] //= stream[1]
    axis = in_view(result.didx, stream)
    partial[axis] *= mesh_size
    return view_problem(tuple(partial), None, axis)


def reshardings(
    op: str, operands: Sequence[Placed], result: Placed, axis_map: rules.AxisMap, dims: Sequence[int] = ()
) -> list[tuple[Placed, Placed]]:
    """The resharding sets (source, result) the op is or gets (fusion-decompose-resharding); none for a partial sum."""
    if is_partial_sum(op, operands[0], dims):
        return []
    flagged = resharded_operands(operands, result, axis_map)
    if op == "set":
        return [(operands[0], result)] if flagged else []
    return [(operands[k], gathered(operands[k], k, result, axis_map)) for k in flagged]


def is_shard_loop(src: Placed, dst: Placed) -> bool:
    """A loop over the devices' shards (didx -> stream on that axis)."""
    return dst.stream is not None and dst.stream[0] == src.didx


def communication_problem(
    op: str,
    operands: Sequence[Placed],
    result: Placed,
    axis_map: rules.AxisMap,
    dims: Sequence[int] = (),
    backend: str = "nccl",
    chunks: int = 0,
) -> str | None:
    """Why stream-lowering would refuse the op's communication (or its operands' resharding), if it would."""
    if is_partial_sum(op, operands[0], dims):
        return partial_sum_problem(operands[0], result, len(operands[0].mesh), backend, chunks)
    for src, dst in reshardings(op, operands, result, axis_map, dims):
        if (problem := set_problem(src, dst, backend)) is not None:
            return problem
    return None


def known_bug(
    op: str, operands: Sequence[Placed], result: Placed, axis_map: rules.AxisMap, dims: Sequence[int] = ()
) -> str | None:
    """
    A placement that a known bug of the lowering gets wrong whatever the run options
    (docs/testing.md, "Known bugs and their reproducers"; reproducers in tests/test_fuzz_known_bugs.py): the
    generator does not emit it. No open bug needs it today; an open bug's rule goes here, with its number.
    """
    return None


def propagated_problem(text: str, backend: str = "nccl", chunks: int = 0) -> str | None:
    """
    Why stream-lowering would refuse a program once fusion-propagate-sharding has placed its
    unannotated values (`propagate-sharding=true`), if it would: the rules above applied to every
    op as the pass leaves it. The generator checked its own placements; the pass's choices for
    the values it left unannotated are checked here (a resharding the lowering does not support
    is refused at the op that needs it, whoever chose the sharding: docs/multidevice.md).
    """
    return program_problem(text, backend, chunks, propagate=True)


def serial_problem(text: str, backend: str = "nccl", chunks: int = 0, propagate: bool = False) -> str | None:
    """
    Why stream-lowering would refuse the program's *serial form*, the one `overlap=never` (and
    `overlap=auto`, where the cost model sees no gain) lowers: every stream axis made serial, so
    each communication takes whole buffers. A gathered operand then needs its didx axis outermost
    (fusion-stream-overlap refuses the function otherwise, docs/passes.md), and a partial sum's
    buffers the rules above without a loop. With `propagate`, after fusion-propagate-sharding.
    """
    return program_problem(text, backend, chunks, propagate=propagate, serial=True)


def program_problem(
    text: str, backend: str = "nccl", chunks: int = 0, propagate: bool = False, serial: bool = False
) -> str | None:
    """The first op of the program whose communication stream-lowering would refuse, and why (see above)."""
    import hir
    from hir.passes.propagate_sharding import fusion_functions, top_level_fusion_ops

    module = hir.parse(text, "fuzz.mlir")
    if propagate:
        module = hir.run_pipeline(module, "fusion-propagate-sharding")
    for function in fusion_functions(module):
        for op in top_level_fusion_ops(function):
            operands = [placed_type(v.type, serial) for v in op.operands]
            result = placed_type(op.results[0].type, serial)
            axis_map = op.axis_map()
            dims = [  # the axes of operand 0 no result axis comes from (a reduction's)
                a for a in range(len(operands[0].shape)) if rules.operand_axis_to_result_axis(axis_map, 0, a) is None
            ]
            name = op.name.removeprefix("fusion.")
            if serial and not is_partial_sum(name, operands[0], dims):
                for k in resharded_operands(operands, result, axis_map):
                    didx = operands[k].didx
                    if didx is not None and any(e != 1 for e in operands[k].shape[:didx]):
                        return f"{op.name} (the serial form gathers operand #{k} along an inner axis)"
            if (problem := communication_problem(name, operands, result, axis_map, dims, backend, chunks)) is not None:
                return f"{op.name} ({problem})"
    return None


def placed_type(t: Attribute, serial: bool = False) -> Placed:
    """The placement a tensor type writes (with `serial`, without its stream axis)."""
    assert isinstance(t, TensorType)
    layout = layout_of(t)
    stream = None if layout.stream_axis is None or serial else (layout.stream_axis, layout.stream_chunks)
    return Placed(tuple(t.get_shape()), layout.didx_axis, layout.mesh, stream)
