"""
Random valid fusion programs over a mesh of devices: the strategy `multidevice_programs(world_size)`.

A program runs on `world_size` processes (2 or 4) and lives on a *main mesh*: all of them, or, on
4, a pair holding rank 3 such as [2, 3] (the other ranks run the program too and take no part in its
collectives). Its extent pool always holds the mesh size D, the extent of a `didx` axis. Inputs
are sharded (`didx` on an axis of extent D, mostly the outermost), replicated on the main mesh,
replicated on a smaller mesh (one device, or a pair of the 4), or without a mesh.

Ops are those of the single-device generator (tests/fuzz/builder.py), placed by `MeshPlacer`: an
op on sharded operands mostly computes locally (its result sharded where the operands' didx axes
map to, when they all map to one axis that every operand feeding it shards), otherwise its result
is replicated and fusion-decompose-resharding gathers the operands first (an all-gather, or a loop
over the devices' shards when the sharded axis maps to the result's stream axis: the AG+GEMM
pipeline). A right-hand side added for a matmul is sharded on the batch axis that its left-hand
side shards, so batch-parallel matmuls arise, and a sum over the didx axis (`build_sum`) turns
them into matmul + all-reduce or GEMM + reduce-scatter. `build_set` reshards explicitly: an
all-gather, a loop over the shards, a broadcast from a smaller mesh, or a local copy.

`mesh_rules` predicts which placements stream-lowering refuses; like the single-device stream
axes, such a placement is kept one time in `REFUSAL_RATE` (the program is marked `may_reject`) and
otherwise changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from hir.dialects import shape_rules as rules

from .builder import MAX_OPS, MAX_RANK, OP_CHOICES, Builder, Placement, extent_pool, input_element_type
from .mesh_rules import (
    Placed,
    communication_problem,
    is_partial_sum,
    is_shard_loop,
    known_bug,
    meshes_differ,
    reshardings,
)
from .programs import build_ops, finish_program
from .values import (
    ALL_GATHER,
    ALL_REDUCE,
    BROADCAST,
    CONTRACTION_PARTIAL_SUM,
    GATHER_IN_CONTRACTION_LOOP,
    PARTIAL_SUM,
    REDUCE_SCATTER,
    SHARD_LOOP,
    SHARD_LOOP_INTO_OP,
    SHARD_LOOP_SET,
    SUB_MESH,
    FuzzProgram,
    Mesh,
    Shape,
    StreamAxis,
    Value,
)

MESH_OP_CHOICES = (*OP_CHOICES, "set", "set", "sum", "sum", "matmul", "matmul")
"""More reshardings, partial sums and contractions than on one device."""


def placed(v: Value) -> Placed:
    return Placed(v.shape, v.didx, v.mesh, v.stream)


def outermost_extent(shape: Shape, without: int) -> int | None:
    """The first extent other than 1 of `shape` without axis `without` (a reduce-scatter's axis must be outermost)."""
    return next((e for a, e in enumerate(shape) if a != without and e != 1), None)


def reduced_axes(x: Value, axis_map: rules.AxisMap) -> list[int]:
    """The axes of operand 0 that no result axis comes from (a reduction's dims)."""
    return [a for a in range(x.rank) if rules.operand_axis_to_result_axis(axis_map, 0, a) is None]


class MeshPlacer:
    def __init__(self, mesh: Mesh, smaller: Sequence[Mesh]):
        self.mesh = mesh
        self.smaller = list(smaller)
        """Meshes inside the main one that replicated inputs may live on (broadcast sources)."""

    @property
    def size(self) -> int:
        return len(self.mesh)

    def input_placement(self, builder: Builder, shape: Shape) -> Placement:
        sharded = [a for a, e in enumerate(shape) if e == self.size]
        choice = builder.draw(st.integers(0, 7))
        if sharded and choice < 4:
            axis = sharded[0] if choice < 3 else builder.draw(st.sampled_from(sharded))
            return axis, self.mesh
        if choice < 6 or not self.smaller:
            return None, self.mesh if choice != 5 else ()
        return None, builder.draw(st.sampled_from(self.smaller))

    def result_placements(
        self, builder: Builder, op: str, operands: Sequence[Value], shape: Shape, axis_map: rules.AxisMap
    ) -> list[Placement]:
        meshes = [v.mesh for v in operands if v.mesh]
        mesh = max(meshes, key=len) if meshes else ()
        sharded = [(k, v.didx) for k, v in enumerate(operands) if v.didx is not None]
        if not sharded:
            return [(None, mesh)]
        options: list[Placement] = []
        targets = {rules.operand_axis_to_result_axis(axis_map, k, a) for k, a in sharded}
        if len(targets) == 1 and (r := next(iter(targets))) is not None:
            fed_by_shards = all(operands[k].didx == a or operands[k].shape[a] == 1 for k, a in axis_map[r])
            shard_mesh = operands[sharded[0][0]].mesh
            if fed_by_shards and shape[r] == len(shard_mesh):
                options.append((r, shard_mesh))
        # Replicated: the sharded operands are gathered first; for a contraction, the first choice
        # half the time (the AG+GEMM pipelines).
        gather_first = op in ("matmul", "linear") and not builder.draw(st.booleans())
        options.insert(0 if gather_first else len(options), (None, mesh))
        if builder.draw(st.integers(0, 3)) == 0:
            options.append((None, ()))  # ... into a value without a mesh
        return options

    def problem(
        self,
        op: str,
        operands: Sequence[Value],
        shape: Shape,
        axis_map: rules.AxisMap,
        placement: Placement,
        stream: StreamAxis | None,
    ) -> str | None:
        result = Placed(shape, placement[0], placement[1], stream)
        dims = reduced_axes(operands[0], axis_map)
        return communication_problem(op, [placed(v) for v in operands], result, axis_map, dims)

    def stream_hint(
        self, operands: Sequence[Value], axis_map: rules.AxisMap, placement: Placement
    ) -> StreamAxis | None:
        """A replicated result of sharded operands: stream the axis a didx axis maps to (a loop over the shards)."""
        if placement[0] is not None:
            return None
        for k, v in enumerate(operands):
            if v.didx is not None and (r := rules.operand_axis_to_result_axis(axis_map, k, v.didx)) is not None:
                return r, None
        return None

    def known_bug(
        self,
        op: str,
        operands: Sequence[Value],
        shape: Shape,
        axis_map: rules.AxisMap,
        placement: Placement,
        stream: StreamAxis | None,
    ) -> str | None:
        result = Placed(shape, placement[0], placement[1], stream)
        return known_bug(op, [placed(v) for v in operands], result, axis_map, reduced_axes(operands[0], axis_map))


class MeshBuilder(Builder):
    """The single-device builder plus explicit reshardings, partial sums and sharded contraction operands."""

    def emitted(self, op: str, operands: Sequence[Value], result: Value, axis_map: rules.AxisMap) -> None:
        """
        Records the facts that decide which run options avoid known bugs (`FuzzProgram.facts`), and
        follows a sharded contraction with its sum over the devices half the time.
        """
        sources = [placed(v) for v in operands]
        dims = reduced_axes(operands[0], axis_map)
        if is_partial_sum(op, sources[0], dims):
            self.facts |= {PARTIAL_SUM, ALL_REDUCE if result.didx is None else REDUCE_SCATTER}
            if operands[0].op in ("matmul", "linear"):
                self.facts.add(CONTRACTION_PARTIAL_SUM)
        for src, dst in reshardings(op, sources, placed(result), axis_map, dims):
            if is_shard_loop(src, dst):
                self.facts.add(SHARD_LOOP)
                self.facts.add(SHARD_LOOP_INTO_OP if op != "set" else SHARD_LOOP_SET)
            elif meshes_differ(src.mesh, dst.mesh):
                self.facts.add(BROADCAST)
            elif src.didx is not None:
                self.facts.add(ALL_GATHER)
            if op in ("matmul", "linear") and dst.stream is not None:
                self.facts.add(GATHER_IN_CONTRACTION_LOOP)
        if (
            op in ("matmul", "linear")
            and result.didx is not None
            and self.ops_left > 0
            and not self.draw(st.booleans())
        ):
            # A sharded contraction, then its sum over the devices: matmul + all-reduce, GEMM + RS.
            self.partial_sum(result, scatter=not self.draw(st.booleans()))

    @property
    def mesh_placer(self) -> MeshPlacer:
        assert isinstance(self.placer, MeshPlacer)
        return self.placer

    def pick_operand(self, candidates: Sequence[Value], op: str) -> Value:
        """
        Contractions and reductions mostly take a sharded value, a sum mostly a sharded
        contraction (the tensor-parallel pipelines: AG+GEMM, matmul + all-reduce, GEMM + RS).
        """
        sharded = [v for v in candidates if v.didx is not None]
        if op == "sum":
            sharded = [v for v in sharded if v.op in ("matmul", "linear")] or sharded
        if sharded and not self.draw(st.integers(0, 2)):
            return self.pick(sharded)
        return self.pick(candidates)

    def build_set(self) -> bool:
        x = self.pick(self.values)
        mesh = self.mesh_placer.mesh
        identity = rules.elementwise_map(x.rank, 1)
        targets: list[tuple[str, Placement]] = [("copy", (x.didx, x.mesh))]
        if x.didx is not None:
            targets += [("all-gather", (None, x.mesh)), ("all-gather", (None, ())), ("shards", (None, x.mesh))]
        elif x.mesh and x.mesh != mesh:
            targets += [("broadcast", (None, mesh))] * 3
        kind, placement = self.draw(st.sampled_from(targets))
        stream: StreamAxis | type[Ellipsis] | None = ...
        if kind == "shards":  # a loop over the devices' shards: stream on the sharded axis
            stream = (x.didx, None)  # type: ignore[assignment]
        return self.emit("set", [x], x.shape, identity, x.mag, x.lo, placement=placement, stream=stream) is not None

    def build_sum(self) -> bool:
        sharded = [v for v in self.values if v.didx is not None and self.supports("sum", v.elt)]
        # Hypothesis draws small values most often: the first choices are the ones to test most.
        if not sharded or self.draw(st.integers(0, 2)) == 2:
            return self.build_reduction("sum")
        # The partial sums are all-reduced into a replicated result, or reduce-scattered along an
        # axis of extent D (mostly the outermost one): half the time, a value that has one.
        scatterable = [v for v in sharded if outermost_extent(v.shape, v.didx) == self.mesh_placer.size]
        scatter = bool(scatterable) and not self.draw(st.booleans())
        return self.partial_sum(self.pick_operand(scatterable if scatter else sharded, "sum"), scatter)

    def partial_sum(self, x: Value, scatter: bool) -> bool:
        """A sum over `x`'s didx axis (and maybe others): all-reduced, or reduce-scattered when `scatter` and possible."""
        assert x.didx is not None
        size = self.mesh_placer.size
        dims = [x.didx]
        if not scatter:
            dims += [a for a in self.reduction_dims(x) if a != x.didx and self.draw(st.integers(0, 2)) == 0]
        shape = rules.reduce_shape(x.shape, dims)
        scatter_axes = [a for a, e in enumerate(shape) if e == size]
        placement: Placement = (None, x.mesh)
        if scatter_axes and (scatter or self.draw(st.booleans())):
            placement = (
                scatter_axes[0] if self.draw(st.integers(0, 3)) else self.draw(st.sampled_from(scatter_axes)),
                x.mesh,
            )
        return self.build_reduction("sum", dims, x, placement)

    def contraction_placement(self, shape: Shape, like: Value, operand: int, op: str) -> Placement | None:
        """A matmul right-hand side with batch axes: sharded on the one `like` shards, when it has it."""
        if op != "matmul" or like.didx is None or len(like.shape) < 3 or len(shape) < 3:
            return None
        batch_a, batch_b = len(like.shape) - 2, len(shape) - 2
        axis = like.didx + batch_b - batch_a  # batch axes align from the right
        if like.didx >= batch_a or not 0 <= axis < batch_b or shape[axis] != like.shape[like.didx]:
            return None
        return (axis, like.mesh) if self.draw(st.integers(0, 3)) else None


@st.composite
def multidevice_programs(
    draw: st.DrawFn, world_size: int = 2, max_ops: int = MAX_OPS, unannotate: bool = False
) -> FuzzProgram:
    """
    A random valid fusion-level module over a mesh of `world_size` processes (see the module
    docstring); with `unannotate`, some intermediates are written without an encoding (`UNANNOTATED`).
    """
    devices = tuple(range(world_size))
    # Meshes in another order than the process ranks too: device 1 first on (1, 0).
    if world_size == 2:
        mesh, smaller = draw(st.sampled_from([devices, devices, (1, 0)])), [(0,), (1,)]
    else:
        # Sub-meshes hold the last rank: the runtime refuses a job with more processes than the
        # program's largest device id + 1 (the driver skips the rare program that still needs fewer).
        mesh = draw(st.sampled_from([devices, devices, (0, 3), (2, 3), (1, 3), (3, 1, 0, 2), (3, 2)]))
        smaller = [(d,) for d in mesh] + ([(0, 1), (2, 3)] if len(mesh) == 4 else [])
    size = len(mesh)
    builder = MeshBuilder(
        draw,
        extent_pool(draw, always=[size]),
        input_element_type(draw),
        MeshPlacer(mesh, smaller),
    )
    for _ in range(draw(st.integers(1, 2))):
        if builder.inputs and draw(st.booleans()):
            previous = builder.inputs[-1]
            builder.new_input(previous.shape, placement=(previous.didx, previous.mesh))
        elif draw(st.booleans()):  # sharded on the outermost axis, or after an outer (stream) axis
            rest = builder.shape(0, MAX_RANK - 2)
            shape: Shape = (size, *rest) if draw(st.integers(0, 2)) else (builder.extent(), size, *rest)
            builder.new_input(shape, placement=(shape.index(size, 0 if shape[0] == size else 1), mesh))
        else:
            builder.new_input(builder.shape())
    if len(mesh) < world_size:
        builder.facts.add(SUB_MESH)
    build_ops(builder, max_ops, MESH_OP_CHOICES)
    return finish_program(builder, draw(st.integers(0, 2**16)), world_size, unannotate)
