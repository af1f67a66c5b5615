"""
Random valid fusion programs over a mesh of devices: the strategy `multidevice_programs(world_size)`.

A program runs on `world_size` processes (1, 2 or 4) and lives on a *main mesh*: all of them, or,
on 4, a pair holding rank 3 such as [2, 3] (the other ranks run the program too and take no part in
its collectives). On 1 the mesh is [0]: every didx axis has extent 1, and there is no other mesh. Its extent pool always holds the mesh size D, the extent of a `didx` axis. Inputs
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

Shapes that once hid wrong answers are drawn on purpose (knobs below):

- a sharded axis that moves: an op's result may be sharded on another axis of extent D than the
  one its operands' didx axes map to (`MOVE_RATE`; those then become its stream axis, a loop over
  the shards, or are moved by an all-to-all), and `build_moved_matmul` writes the GEMM +
  reduce-scatter by send/recv: `A[didx(D), stream(D), M, K]` times `broadcast(B)[didx(D), 1, K, N]`
  into `[stream, didx, M, N]`, then a sum over axis 0 (B's extent-1 axis also written sharded, or
  replicated);
- extent-1 axes on a didx axis: a matmul's broadcast batch axis, an uneven input of one index,
  an elementwise operand of extent 1 broadcast into a didx axis;
- sets onto sub-meshes, one-device meshes, disjoint meshes and the mesh in another order
  (gathers, send/recv moves of shards, scatters onto a sub-mesh, broadcasts), so outputs live on
  part of the job; sharded inputs on a smaller mesh (`SUB_MESH_INPUT_RATE`);
- uneven didx axes of every extent 1 <= L < D (`UNEVEN_RATE`), carried through local compute, and
  reduce-scatters onto an axis of L <= D.

`mesh_rules` predicts which placements stream-lowering refuses, for the backend the program will
be lowered with (drawn first); like the single-device stream axes, such a placement is kept one
time in `REFUSAL_RATE` (the program is marked `may_reject`) and otherwise changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from hir.dialects import shape_rules as rules

from .builder import MAX_INPUTS, MAX_OPS, MAX_RANK, OP_CHOICES, Builder, Placement, extent_pool, input_element_type
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
    BROADCAST_AXIS,
    CONTRACTION_PARTIAL_SUM,
    ELEMENT_TYPES,
    GATHER_IN_CONTRACTION_LOOP,
    MESH_CHANGE,
    MOVED_DIDX,
    PARTIAL_SUM,
    REDUCE_SCATTER,
    SHARD_LOOP,
    SHARD_LOOP_INTO_OP,
    SHARD_LOOP_SET,
    SUB_MESH,
    UNEVEN,
    FuzzProgram,
    Mesh,
    Shape,
    StreamAxis,
    Value,
)

MESH_OP_CHOICES = (*OP_CHOICES, "set", "set", "sum", "sum", "matmul", "matmul", "moved_matmul")
"""More reshardings, partial sums and contractions than on one device."""
UNEVEN_RATE = 4
"""One initial input in this many (when drawn sharded) is sharded unevenly: extent 1 <= L < D on its mesh."""
SUB_MESH_INPUT_RATE = 4
"""One sharded initial input in this many lives on a smaller mesh (a one-device mesh or a pair)."""
MOVE_RATE = 3
"""One op in this many whose sharded operands map to a result axis may shard another result axis (moved)."""


def placed(v: Value) -> Placed:
    return Placed(v.shape, v.didx, v.mesh, v.stream)


def outermost_extent(shape: Shape, without: int) -> int | None:
    """The first extent other than 1 of `shape` without axis `without` (a reduce-scatter's axis must be outermost)."""
    return next((e for a, e in enumerate(shape) if a != without and e != 1), None)


def reduced_axes(x: Value, axis_map: rules.AxisMap) -> list[int]:
    """The axes of operand 0 that no result axis comes from (a reduction's dims)."""
    return [a for a in range(x.rank) if rules.operand_axis_to_result_axis(axis_map, 0, a) is None]


def held_where(operands: Sequence[Value]) -> Mesh | None:
    """The devices where all of `operands` mean something (None: every device; empty: none)."""
    where: Mesh | None = None
    for v in operands:
        if held := v.mesh or v.held:
            where = held if where is None else tuple(d for d in where if d in held)
    return where


class MeshPlacer:
    def __init__(self, mesh: Mesh, smaller: Sequence[Mesh], backend: str = "nccl", chunks: int = 0):
        self.mesh = mesh
        self.smaller = list(smaller)
        """Meshes inside the main one that replicated inputs may live on (broadcast sources)."""
        self.backend = backend
        """The communication backend the program is lowered with (it decides some refusals)."""
        self.chunks = chunks
        """The copy-engine backend's `chunks` option (it decides some refusals too)."""

    def meshes(self) -> list[Mesh]:
        """Every mesh the program may use: the main one, in reverse order too, and the smaller ones."""
        return [self.mesh, tuple(reversed(self.mesh)), *self.smaller]

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
        shard_mesh = operands[sharded[0][0]].mesh
        if len(targets) == 1 and (r := next(iter(targets))) is not None:
            fed_by_shards = all(operands[k].didx == a or operands[k].shape[a] == 1 for k, a in axis_map[r])
            # An uneven didx axis (1 <= L < D) stays sharded through local compute, at its extent.
            same_extent = all(operands[k].shape[a] == shape[r] for k, a in sharded)
            if fed_by_shards and 1 <= shape[r] <= len(shard_mesh) and (same_extent or shape[r] == len(shard_mesh)):
                options.append((r, shard_mesh))
        if builder.draw(st.integers(0, MOVE_RATE - 1)) == 0:
            # The sharded axis moves: the result is sharded on an axis the operands' didx axes do not
            # map to (they become its stream axis, a loop over the shards, or are gathered).
            moved = [a for a, e in enumerate(shape) if e == len(shard_mesh) and a not in targets]
            if moved:
                options.append((builder.draw(st.sampled_from(moved)), shard_mesh))
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
        return communication_problem(
            op, [placed(v) for v in operands], result, axis_map, dims, self.backend, self.chunks
        )

    def stream_hint(
        self, operands: Sequence[Value], axis_map: rules.AxisMap, placement: Placement
    ) -> StreamAxis | None:
        """
        A result of sharded operands that is replicated, or sharded on another axis (the sharded
        axis moves): stream the axis a didx axis maps to (a loop over the shards).
        """
        for k, v in enumerate(operands):
            if v.didx is not None and (r := rules.operand_axis_to_result_axis(axis_map, k, v.didx)) is not None:
                if r != placement[0]:
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
        for v in operands:
            if not v.mesh and v.held and placement[1] and not set(placement[1]) <= set(v.held):
                # A value without a mesh computed on a sub-mesh means something only there; an op
                # onto a larger mesh would read it where it is not defined (the fusion-level
                # reference has it everywhere): such a program is ill-typed, not generated.
                return "an operand without a mesh defined on fewer devices than the result's mesh"
        if not placement[1] and held_where(operands) == ():
            return "a result without a mesh of operands on disjoint meshes (defined nowhere)"
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
        if not result.mesh:  # defined where all its operands are
            result.held = held_where(operands) or ()
        if any(p.uneven for p in (*sources, placed(result))):
            self.facts.add(UNEVEN)
        if result.didx is not None:
            if any(
                v.didx is not None and rules.operand_axis_to_result_axis(axis_map, k, v.didx) != result.didx
                for k, v in enumerate(operands)
                if op not in ("set", "sum")
            ):
                self.facts.add(MOVED_DIDX)
            if any(operands[k].shape[a] == 1 and result.shape[result.didx] != 1 for k, a in axis_map[result.didx]):
                self.facts.add(BROADCAST_AXIS)
        if op == "set" and result.mesh and operands[0].mesh and result.mesh != operands[0].mesh:
            self.facts.add(MESH_CHANGE)
        if is_partial_sum(op, sources[0], dims):
            self.facts |= {PARTIAL_SUM, ALL_REDUCE if result.didx is None else REDUCE_SCATTER}
            if operands[0].op in ("matmul", "linear"):
                self.facts.add(CONTRACTION_PARTIAL_SUM)
        if op == "set" and is_shard_loop(sources[0], placed(result)):
            result.shard_loop = True
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
        targets += self.mesh_change_targets(x)
        kind, placement = self.draw(st.sampled_from(targets))
        stream: StreamAxis | type[Ellipsis] | None = ...
        if kind == "shards":  # a loop over the devices' shards: stream on the sharded axis
            stream = (x.didx, None)  # type: ignore[assignment]
        return self.emit("set", [x], x.shape, identity, x.mag, x.lo, placement=placement, stream=stream) is not None

    def mesh_change_targets(self, x: Value) -> list[tuple[str, Placement]]:
        """
        Sets that change the mesh or move the sharded axis: a gather onto a sub-mesh or one device,
        shards moving to another mesh of as many devices (send/recv pairs: one-device meshes, the
        mesh in another order), an all-to-all onto another axis, a scatter onto a sub-mesh, a
        replicated value copied onto a sub-mesh or broadcast to a disjoint one.
        """
        targets: list[tuple[str, Placement]] = []
        meshes = self.mesh_placer.meshes()
        if x.didx is not None:
            targets += [("gather to a sub-mesh", (None, m)) for m in meshes if set(m) < set(x.mesh)]
            targets += [
                ("move shards", (x.didx, m))
                for m in meshes
                if len(m) == len(x.mesh) and m != x.mesh and x.shape[x.didx] <= len(m)
            ]
            targets += [
                ("all-to-all", (a, x.mesh)) for a, e in enumerate(x.shape) if a != x.didx and 1 <= e <= len(x.mesh)
            ]
        else:
            source = x.mesh or self.mesh_placer.mesh
            for m in meshes:
                if m != x.mesh and set(m) <= set(source):
                    targets.append(("to a sub-mesh", (None, m)))
                if x.mesh and not set(m) & set(x.mesh):
                    targets.append(("to a disjoint mesh", (None, m)))
                if set(m) <= set(source):
                    targets += [("scatter", (a, m)) for a, e in enumerate(x.shape) if 1 <= e <= len(m)]
        return targets

    def build_moved_matmul(self) -> bool:
        """
        A matmul that moves the sharded axis, as in the GEMM + reduce-scatter by send/recv
        (tests/resharding/reduce_scatter_send_recv.mlir): `A[didx(D), stream(D), M, K]` times
        `broadcast(B)[didx(D), 1, K, N]` (or B's extent-1 axis sharded, or B replicated) gives
        `C[stream(D), didx(D), M, N]` (or another placement the placer draws), then a sum over the
        K shards (C's axis 0: a local sum when C is sharded on axis 1, else a partial sum).
        """
        if len(self.inputs) + 2 > MAX_INPUTS or self.ops_left < 3:
            return False
        size = self.mesh_placer.size
        mesh = self.mesh_placer.mesh
        m, k, n = self.extent(), self.extent(), self.extent()
        elt = self.elt if self.supports("matmul", self.elt) and self.supports("sum", self.elt) else "f32"
        bound = ELEMENT_TYPES[elt].input_mag ** 2 * max(k, 1) * size
        if bound > ELEMENT_TYPES[elt].mag_limit:
            return False
        a = self.new_input((size, size, m, k), elt, (0, mesh))
        if self.draw(st.booleans()):
            a.stream = a.hint = (1, None)
        form = self.draw(st.integers(0, 3))
        if form < 2:  # B sharded on its first axis, broadcast along a new extent-1 axis
            b = self.new_input((size, k, n), elt, (0, mesh))
            bb = self.emit(
                "broadcast",
                [b],
                (size, 1, k, n),
                rules.broadcast_map(4, [1]),
                b.mag,
                b.lo,
                attrs=" dims = [1]",
                placement=(0, mesh),
                stream=None,
            )
        else:  # B with its extent-1 axis written: sharded on it (one index over D devices), or replicated
            b = self.new_input((size, 1, k, n), elt, (1, mesh) if form == 2 else (0, mesh))
            bb = b
        if bb is None:
            return False
        shape, axis_map = rules.matmul_rule(a.shape, bb.shape)
        placement: Placement | None = (1, mesh) if self.draw(st.integers(0, 2)) else None
        stream: StreamAxis | type[Ellipsis] | None = (0, None) if self.draw(st.integers(0, 2)) else ...
        c = self.emit(
            "matmul",
            [a, bb],
            shape,
            axis_map,
            a.mag * bb.mag * k,
            None,
            exact=False,
            placement=placement,
            stream=stream,
        )
        if c is None:
            return False
        out: Placement | None = None
        if c.didx is not None:
            out = (c.didx - 1 if c.didx > 0 else None, c.mesh)
        return self.build_reduction("sum", [0], c, out)

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
        size = len(x.mesh)
        dims = [x.didx]
        if not scatter:
            dims += [a for a in self.reduction_dims(x) if a != x.didx and self.draw(st.integers(0, 2)) == 0]
        shape = rules.reduce_shape(x.shape, dims)
        scatter_axes = [a for a, e in enumerate(shape) if e == size]
        if not scatter_axes or self.draw(st.integers(0, 3)) == 0:  # onto an axis of 1 <= L < D: uneven
            scatter_axes = [a for a, e in enumerate(shape) if 1 <= e <= size] or scatter_axes
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
    draw: st.DrawFn,
    world_size: int = 2,
    max_ops: int = MAX_OPS,
    unannotate: bool = False,
    backend: str = "nccl",
    chunks: int = 0,
) -> FuzzProgram:
    """
    A random valid fusion-level module over a mesh of `world_size` processes (see the module
    docstring); with `unannotate`, some intermediates are written without an encoding (`UNANNOTATED`).
    `backend` is the communication backend it will be lowered with, `chunks` the copy-engine
    backend's option (their refusals are predicted).
    """
    devices = tuple(range(world_size))
    # Meshes in another order than the process ranks too: device 1 first on (1, 0).
    if world_size == 1:  # a mesh of one device: every didx axis has extent 1, no other mesh
        mesh, smaller = devices, []
    elif world_size == 2:
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
        MeshPlacer(mesh, smaller, backend, chunks),
    )
    for _ in range(draw(st.integers(1, 2))):
        if builder.inputs and draw(st.booleans()):
            previous = builder.inputs[-1]
            builder.new_input(previous.shape, placement=(previous.didx, previous.mesh))
        elif draw(st.booleans()):  # sharded on the outermost axis, or after an outer (stream) axis
            on = mesh
            if smaller and draw(st.integers(0, SUB_MESH_INPUT_RATE - 1)) == 0:  # on a one-device mesh or a pair
                on = draw(st.sampled_from(smaller))
            extent = len(on)
            if draw(st.integers(0, UNEVEN_RATE - 1)) == 0 and len(on) > 1:  # L < D: empty shards
                extent = draw(st.integers(1, len(on) - 1))
            rest = builder.shape(0, MAX_RANK - 2)
            outer = draw(st.integers(0, 2)) == 0
            shape: Shape = (builder.extent(), extent, *rest) if outer else (extent, *rest)
            builder.new_input(shape, placement=(1 if outer else 0, on))
        else:
            builder.new_input(builder.shape())
    if len(mesh) < world_size:
        builder.facts.add(SUB_MESH)
    build_ops(builder, max_ops, MESH_OP_CHOICES)
    return finish_program(builder, draw(st.integers(0, 2**16)), world_size, unannotate)
