"""
What the generators know about a value: shape, element type, placement (stream axis, didx axis,
mesh) and bounds on its elements, and how a value's tensor type is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Shape = tuple[int, ...]
StreamAxis = tuple[int, int | None]
"""(axis, N): `stream(N)` on that axis, or plain `stream` when N is None."""
Mesh = tuple[int, ...]


@dataclass(frozen=True)
class ElementType:
    """An element type of the IR as the generator uses it."""

    name: str
    kind: str
    """`float`, `int` or `bool`."""
    mag_limit: float
    """Values stay below this in magnitude (no overflow, and floats keep enough precision)."""
    input_mag: float
    """A bound on |element| of a random input (`runtime/dtypes.random_tensor`)."""

    @property
    def is_float(self) -> bool:
        return self.kind == "float"


# random_tensor draws normal floats (bounded by 6 with probability 1 - 2e-9 per element), integers
# in [-8, 8] and booleans.
ELEMENT_TYPES: dict[str, ElementType] = {
    t.name: t
    for t in (
        ElementType("f32", "float", 1e6, 6.0),
        ElementType("f64", "float", 1e6, 6.0),
        ElementType("f16", "float", 1e4, 6.0),  # largest f16: 65504
        ElementType("bf16", "float", 1e6, 6.0),
        ElementType("i8", "int", 120.0, 8.0),
        ElementType("i16", "int", 3e4, 8.0),
        ElementType("i32", "int", 2e9, 8.0),
        ElementType("i64", "int", 1e15, 8.0),
        ElementType("i1", "bool", 1.0, 1.0),
    )
}
FLOATS = tuple(name for name, t in ELEMENT_TYPES.items() if t.is_float)

# Ops torch runs on booleans (the verifier accepts the others too, but torch refuses `-` and
# friends on bool tensors at run time, a located error that the generator does not aim for).
BOOL_OPS = frozenset({"set", "cast", "broadcast", "permute", "add", "mul", "maximum", "sum", "max", "min"})
FLOAT_OPS = frozenset({"exp", "tanh", "sin", "cos", "erf", "div"})
"""The verifier accepts these on floating-point element types only."""


def tensor_type(
    shape: Shape,
    elt: str,
    stream: StreamAxis | None = None,
    explicit: bool = False,
    didx: int | None = None,
    mesh: Mesh = (),
) -> str:
    dims = "".join(f"{d}x" for d in shape)
    if stream is None and didx is None and not mesh and (not explicit or not shape):
        return f"tensor<{dims}{elt}>"
    kinds = ["serial"] * len(shape)
    if stream is not None:
        axis, chunks = stream
        kinds[axis] = "stream" if chunks is None else f"stream({chunks})"
    if didx is not None:
        kinds[didx] = "didx"
    mesh_text = f", mesh = [{', '.join(map(str, mesh))}]" if mesh else ""
    return f"tensor<{dims}{elt}, #fusion.parallel<[{', '.join(kinds)}]{mesh_text}>>"


@dataclass(eq=False)
class Value:
    name: str
    shape: Shape
    elt: str
    stream: StreamAxis | None
    """The stream axis of the value's own type."""
    explicit: bool
    """Print an all-serial `#fusion.parallel` encoding (a different type from the plain one)."""
    hint: StreamAxis | None
    """Its own stream axis, else the one of its nearest stream-parallel ancestor mapped through the ops."""
    mag: float
    """A bound on |element|."""
    lo: float | None
    """A positive lower bound on the elements when they are known to be positive."""
    exact: bool = True
    """
    Computed bit for bit alike whether a loop runs the ops slice by slice or whole: not behind a
    floating-point reduction, contraction, exp or tanh (whose rounding may depend on the layout).
    Only exact floats may be cast to integers or booleans, where one ulp can flip the result.
    """
    didx: int | None = None
    """The axis sharded over `mesh` (extent len(mesh)), if any."""
    mesh: Mesh = ()
    """The devices the value lives on (empty: wherever the program runs)."""
    op: str = ""
    """The fusion op that computes it (empty: an input)."""
    uses: int = 0
    slicings: dict[tuple[int | None, int], set[int | None]] = field(default_factory=dict)
    """How stream ops that read the value slice it (None: whole), per iteration space (chunks, extent)."""
    unannotated: bool = False
    """Written without a `#fusion.parallel` encoding (for fusion-propagate-sharding to decide)."""
    shard_loop: bool = False
    """Computed by a `fusion.set` that loops over the devices' shards (didx -> stream)."""
    held: Mesh = ()
    """
    For a value without a mesh computed from values on a mesh: the devices where it means
    something (those of its operands; docs/multidevice.md, "Outputs on a sub-mesh"). Empty: every
    device.
    """

    @property
    def type(self) -> str:
        if self.unannotated:
            return tensor_type(self.shape, self.elt)
        return tensor_type(self.shape, self.elt, self.stream, self.explicit, self.didx, self.mesh)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def element(self) -> ElementType:
        return ELEMENT_TYPES[self.elt]


@dataclass(frozen=True)
class FuzzProgram:
    """A generated program and the seed of its random inputs."""

    text: str
    seed: int
    num_ops: int
    num_stream_ops: int
    may_reject: bool = False
    """
    Some op streams an axis or reshards a value in a way that stream-lowering refuses with a
    diagnostic: a refusal is fine, a crash or wrong numbers are not.
    """
    world_size: int = 1
    """The processes the program needs (its largest device id + 1; 1: single device)."""
    facts: frozenset[str] = frozenset()
    """
    What the program communicates, as the generator placed it (the constants below): the test
    picks a batch that covers them all.
    """

    def __repr__(self) -> str:
        flags = ", may_reject=True" if self.may_reject else ""
        flags += f", world_size={self.world_size}" if self.world_size > 1 else ""
        return f"FuzzProgram(seed={self.seed}{flags}, text='''\n{self.text}''')"

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        """How hypothesis prints a falsifying example: the program as text, ready to paste into a file."""
        printer.text(repr(self))  # type: ignore[attr-defined]


# Facts (`FuzzProgram.facts`) of multi-device programs: what the generator placed.
PARTIAL_SUM = "partial sum"
"""A sum over a didx axis (all-reduce or reduce-scatter)."""
ALL_GATHER = "all-gather"
ALL_REDUCE = "all-reduce"
REDUCE_SCATTER = "reduce-scatter"
BROADCAST = "broadcast"
SHARD_LOOP = "shard loop"
"""A loop over the devices' shards (didx -> stream)."""
SHARD_LOOP_INTO_OP = "shard loop into an op"
"""... that gathers an operand of a computing op in its loop (what the copy-engine backend turns into pushes)."""
SUB_MESH = "sub-mesh"
"""The program's mesh leaves some ranks of the job out (they run the program and take no part in its transfers)."""
SHARD_LOOP_SET = "shard loop of a set"
"""... that an explicit `fusion.set` asks for (its result may outlive the loop: no pushes then)."""
CONTRACTION_PARTIAL_SUM = "matmul then partial sum"
GATHER_IN_CONTRACTION_LOOP = "gather in a matmul's stream loop"
"""A matmul/linear in a stream loop whose operand is gathered chunk by chunk (AG+GEMM)."""
UNANNOTATED = "unannotated intermediates"
"""
Some intermediate values (neither arguments nor returned) are written without an encoding: the
program is lowered with `propagate-sharding=true`, and its facts above describe it as drawn
(before propagation placed those values).
"""
UNEVEN = "uneven didx axis"
"""A didx axis of extent L other than its mesh's size D (1 <= L < D: trailing devices hold none)."""
MOVED_DIDX = "moved didx axis"
"""An op whose result is sharded on another axis than the one its sharded operands' didx axes map to."""
BROADCAST_AXIS = "extent-1 axis into a didx axis"
"""An operand axis of extent 1 that feeds a result didx axis (a matmul batch or elementwise broadcast)."""
MESH_CHANGE = "mesh change"
"""A set onto another mesh: a sub-mesh, a one-device mesh, a disjoint one, or the mesh in another order."""
