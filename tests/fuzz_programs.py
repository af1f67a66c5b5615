"""
Random valid single-device fusion programs, for the stream-lowering differential fuzzer
(tests/test_fuzz_stream_lowering.py; docs/testing.md, "Differential fuzzer").

    fusion_programs()          hypothesis strategy of `FuzzProgram`s (text + input seed)
    check_lowering(text, ...)  parse, run the reference, lower, verify, run, compare; raises
                               `LoweringMismatch` with the program and its lowered IR on failure

Reproduce a failure from the command line (the program text as hypothesis printed it):

    python tests/fuzz_programs.py repro.mlir --num-streams 3 --policy resharding-only --seed 7
    python tests/fuzz_programs.py --sample 5          # print a few generated programs

What a program looks like: `func.func @main` with 1-4 float32 inputs (rank 1-4, extents 1..6
drawn from a small per-program pool so shapes are shared), 1-10 fusion ops and 1-3 returned op
results. Every op result gets a random `#fusion.parallel` encoding: serial (with or without an
explicit all-serial encoding), `stream` on an axis, or `stream(N)` with N dividing the extent.
Each value carries a *hint*, the stream axis of its nearest stream-parallel ancestor mapped
through the ops' axis maps (`dialects/shape_rules.py`), and a result often takes that axis again,
so chains of stream ops whose axes map through one another (one loop, one segment) alternate
with serial ops between them (a loop ends, a new one follows). Shapes and axis maps come from the
shape rules, so every program verifies: a verifier error on a generated program is a bug here.

Values stay finite: each value carries a bound on its magnitude and, when it is known to be
positive, a lower bound. `exp` only takes small values, a `div` denominator is known positive
(an `exp(tanh(x))` is built when none exists), and an op whose bound would pass `MAG_LIMIT`
becomes a `tanh` instead.

Stream axes that stream-lowering refuses with a diagnostic (`UNSLICEABLE`, `PER_USE_SLICING`)
mostly turn serial; one in `REFUSAL_RATE` is kept and the program marked `may_reject`.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st
from xdsl.utils.exceptions import PassFailedException, VerifyException

from hir.dialects import shape_rules as rules

Shape = tuple[int, ...]
StreamAxis = tuple[int, int | None]
"""(axis, N): `stream(N)` on that axis, or plain `stream` when N is None."""

MAX_RANK = 4
MAX_INPUTS = 4
MAX_OPS = 10
MAX_RESULTS = 3
INPUT_MAG = 6.0
"""The bound assumed for a standard-normal input (exceeded with probability 2e-9 per element)."""
MAG_LIMIT = 1e6
EXP_LIMIT = 8.0
POLICIES = ("standalone-host-ops", "resharding-only")

UNARY = ("set", "neg", "abs", "relu", "exp", "tanh")
BINARY = ("add", "sub", "mul", "div", "maximum")
REDUCTIONS = ("sum", "max", "min")
# Sampled uniformly; contractions and shape ops appear twice to get a fair share. Shrinking goes
# towards the front: `set`.
OP_CHOICES = (
    *UNARY,
    *BINARY,
    "cast",
    "broadcast",
    "broadcast",
    "permute",
    "permute",
    *REDUCTIONS,
    "sum",
    "matmul",
    "matmul",
    "matmul",
    "linear",
    "linear",
)


# -- values and types -------------------------------------------------------------------------------


def tensor_type(shape: Shape, elt: str, stream: StreamAxis | None = None, explicit: bool = False) -> str:
    dims = "".join(f"{d}x" for d in shape)
    if stream is None and (not explicit or not shape):
        return f"tensor<{dims}{elt}>"
    kinds = ["serial"] * len(shape)
    if stream is not None:
        axis, chunks = stream
        kinds[axis] = "stream" if chunks is None else f"stream({chunks})"
    return f"tensor<{dims}{elt}, #fusion.parallel<[{', '.join(kinds)}]>>"


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
    uses: int = 0
    slicings: dict[tuple[int | None, int], set[int | None]] = field(default_factory=dict)
    """How stream ops that read the value slice it (None: whole), per iteration space (chunks, extent)."""

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.elt, self.stream, self.explicit)

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class FuzzProgram:
    """A generated program and the seed of its random inputs."""

    text: str
    seed: int
    num_ops: int
    num_stream_ops: int
    may_reject: bool = False
    """
    Some op streams an axis that stream-lowering refuses with a diagnostic (`UNSLICEABLE`,
    `PER_USE_SLICING`): a refusal is fine, a crash or wrong numbers are not.
    """

    def __repr__(self) -> str:
        flags = ", may_reject=True" if self.may_reject else ""
        return f"FuzzProgram(seed={self.seed}{flags}, text='''\n{self.text}''')"

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        """How hypothesis prints a falsifying example: the program as text, ready to paste into a file."""
        printer.text(repr(self))  # type: ignore[attr-defined]


# -- the generator ------------------------------------------------------------------------------------


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


UNSLICEABLE = "unsliceable"
"""
The op on its operands' slices is not a slice of the op (a matmul operand of rank >= 3 or a 1-D
one losing its M/N axis: torch.matmul reads another axis as M or K). stream-lowering refuses
such a plain `stream` axis with a diagnostic (`stream(N)` chunks keep the rank and are fine).
"""
PER_USE_SLICING = "per-use slicing"
"""
One value that loops over one iteration space read sliced differently: `matmul %x, %x` streamed
on M (%x sliced as the left operand, whole as the right one), or two ops that may share a segment
and read an input on different axes. stream-lowering slices a value once per unit, so it refuses
this when the uses land in one segment ("copy it (fusion.set) for one of the uses"); a bare op
reads each operand position on its own and lowers.
"""
REFUSAL_RATE = 10
"""One in this many ops with such a stream axis keeps it (the program may then be refused); the others turn serial."""


def sliced_axes(axis_map: rules.AxisMap, axis: int, num_operands: int) -> list[int | None]:
    """Per operand, the axis a loop over result `axis` slices (None: passed whole)."""
    sliced: list[int | None] = [None] * num_operands
    for k, a in axis_map[axis]:
        sliced[k] = a
    return sliced


def slicings(
    operands: Sequence[Value], axis_map: rules.AxisMap, stream: StreamAxis, extent: int
) -> dict[Value, set[int | None]]:
    """
    For each operand value, how the loops over this iteration space that read it slice it: earlier
    stream ops (`Value.slicings`) and this one, per operand. Ops of one segment run in one loop:
    stream-lowering slices a value they read once, so they must all slice it alike.
    """
    key = (stream[1], extent)
    found: dict[Value, set[int | None]] = {}
    for value, axis in zip(operands, sliced_axes(axis_map, stream[0], len(operands))):
        found.setdefault(value, set(value.slicings.get(key, ()))).add(axis)
    return found


def slicing_problem(
    op: str, operands: Sequence[Value], axis_map: rules.AxisMap, stream: StreamAxis, extent: int
) -> str | None:
    """Why a stream loop over `stream` cannot run this op slice by slice, if it cannot."""
    axis, chunks = stream
    sliced = sliced_axes(axis_map, axis, len(operands))
    if any(len(axes) > 1 for axes in slicings(operands, axis_map, stream, extent).values()):
        return PER_USE_SLICING
    if chunks is not None or op not in ("matmul", "linear"):
        return None
    # As convert-fusion-to-hir checks it: the op on the sliced shapes must map the other axes alike.
    shapes = [list(v.shape) for v in operands]
    for k, a in enumerate(sliced):
        if a is not None:
            del shapes[k][a]
    expected = [
        sorted((k, a - (sliced[k] is not None and a > sliced[k])) for k, a in sources if a != sliced[k])
        for r, sources in enumerate(axis_map)
        if r != axis
    ]
    try:
        if op == "matmul":
            actual = rules.matmul_rule(tuple(shapes[0]), tuple(shapes[1]))[1]
        else:
            bias = tuple(shapes[2]) if len(shapes) > 2 else None
            actual = rules.linear_rule(tuple(shapes[0]), tuple(shapes[1]), bias)[1]
    except VerifyException:
        return UNSLICEABLE
    return None if [sorted(s) for s in actual] == expected else UNSLICEABLE


@dataclass
class _Builder:
    draw: st.DrawFn
    pool: list[int]
    """The extents shapes are drawn from (shared, so ops can combine values)."""
    inputs: list[Value] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    ops_left: int = 0
    num_stream_ops: int = 0
    final_op: bool = False
    may_reject: bool = False

    # -- drawing helpers ----------------------------------------------------------------------------

    def extent(self) -> int:
        return self.draw(st.sampled_from(self.pool))

    def shape(self, min_rank: int = 1, max_rank: int = MAX_RANK) -> Shape:
        rank = self.draw(st.integers(min_rank, max_rank))
        return tuple(self.extent() for _ in range(rank))

    def pick(self, candidates: Sequence[Value]) -> Value:
        """A candidate, recent ones first (deep chains); shrinks towards the most recent."""
        assert candidates
        if len(candidates) > 3 and self.draw(st.integers(0, 2)) == 2:
            return candidates[self.draw(st.integers(0, len(candidates) - 1))]
        return candidates[-1 - self.draw(st.integers(0, min(2, len(candidates) - 1)))]

    def can_add_input(self) -> bool:
        return len(self.inputs) < MAX_INPUTS

    def new_input(self, shape: Shape) -> Value:
        assert self.can_add_input()
        stream: StreamAxis | None = None
        if shape and self.draw(st.integers(0, 7)) == 7:  # inputs may carry a stream encoding too
            stream = (self.draw(st.integers(0, len(shape) - 1)), None)
        value = Value(f"%arg{len(self.inputs)}", shape, "f32", stream, False, stream, INPUT_MAG, None)
        self.inputs.append(value)
        self.values.append(value)
        return value

    def encoding(
        self, shape: Shape, operands: Sequence[Value], axis_map: rules.AxisMap
    ) -> tuple[StreamAxis | None, StreamAxis | None]:
        """The result's stream axis (or None: serial) and its hint."""
        mapped: list[StreamAxis] = []
        for k, operand in enumerate(operands):
            if operand.hint is None:
                continue
            axis, chunks = operand.hint
            for r, sources in enumerate(axis_map):
                if (k, axis) in sources and (r, chunks) not in mapped:
                    mapped.append((r, chunks))
        hint = mapped[0] if mapped else None
        if not shape:
            return None, None
        mode = self.draw(st.integers(0, 9))
        last_chance = self.final_op and self.num_stream_ops == 0
        if mode < 3 and not last_chance:  # serial: ends a stream loop, or a stretch of serial ops between stream ones
            return None, hint
        if mode < 8 and mapped:  # follow an operand's (or an ancestor's) stream axis
            axis, chunks = self.draw(st.sampled_from(mapped))
            if chunks is None or shape[axis] % chunks == 0:
                return (axis, chunks), (axis, chunks)
        else:
            axis = self.draw(st.integers(0, len(shape) - 1))
        chunks = None
        if self.draw(st.booleans()):
            chunks = self.draw(st.sampled_from(divisors(shape[axis])))
        return (axis, chunks), (axis, chunks)

    def emit(
        self,
        op: str,
        operands: Sequence[Value],
        shape: Shape,
        axis_map: rules.AxisMap,
        mag: float,
        lo: float | None,
        elt: str | None = None,
        attrs: str = "",
    ) -> Value:
        assert len(axis_map) == len(shape)
        stream, hint = self.encoding(shape, operands, axis_map)
        problem = None if stream is None else slicing_problem(op, operands, axis_map, stream, shape[stream[0]])
        if problem is not None:
            if self.draw(st.integers(0, REFUSAL_RATE - 1)) == 0:
                self.may_reject = True  # a limitation the lowering must diagnose, now and then
            else:
                stream = None
        explicit = stream is None and self.draw(st.integers(0, 5)) == 5
        result = Value(
            f"%v{len(self.lines)}", shape, elt or operands[0].elt, stream, explicit, hint, mag, lo if lo else None
        )
        for operand in operands:
            operand.uses += 1
        if stream is not None:
            key = (stream[1], shape[stream[0]])
            for value, axes in slicings(operands, axis_map, stream, shape[stream[0]]).items():
                value.slicings[key] = axes
        args = ", ".join(v.name for v in operands)
        types = ", ".join(v.type for v in operands)
        self.lines.append(f"  {result.name} = fusion.{op} {args}{attrs} : {types} -> {result.type}")
        self.values.append(result)
        self.ops_left -= 1
        self.num_stream_ops += stream is not None
        return result

    # -- ops ----------------------------------------------------------------------------------------

    def op(self, kind: str) -> None:
        built = getattr(self, f"build_{kind}", None)
        if built is not None:
            done = built()
        elif kind in UNARY:
            done = self.build_unary(kind)
        elif kind in BINARY:
            done = self.build_binary(kind)
        else:
            assert kind in REDUCTIONS
            done = self.build_reduction(kind)
        if not done and self.ops_left > 0:  # infeasible here: one that always is (and brings magnitudes back to 1)
            self.unary("tanh", self.pick(self.values))

    def unary(self, kind: str, x: Value) -> Value:
        mag, lo = x.mag, None
        if kind == "set":
            lo = x.lo
        elif kind == "exp":
            mag, lo = math.exp(x.mag), math.exp(-x.mag)
        elif kind == "tanh":
            mag = min(x.mag, 1.0)
        return self.emit(kind, [x], x.shape, rules.elementwise_map(x.rank, 1), mag, lo)

    def build_unary(self, kind: str) -> bool:
        candidates = self.values if kind != "exp" else [v for v in self.values if v.mag <= EXP_LIMIT]
        if not candidates:
            return False
        self.unary(kind, self.pick(candidates))
        return True

    def build_cast(self) -> bool:
        x = self.pick(self.values)
        elt = "f64" if x.elt == "f32" else "f32"
        self.emit("cast", [x], x.shape, rules.elementwise_map(x.rank, 1), x.mag, x.lo, elt=elt)
        return True

    def build_binary(self, kind: str) -> bool:
        a = self.pick(self.values)
        partners = [v for v in self.values if v.shape == a.shape and v.elt == a.elt]
        if kind == "div":
            return self.divide(a, partners)
        if len(partners) == 1 and self.can_add_input() and a.elt == "f32" and self.draw(st.booleans()):
            partners.append(self.new_input(a.shape))
        b = self.pick(partners)
        if self.draw(st.booleans()):
            a, b = b, a
        mag = a.mag * b.mag if kind == "mul" else a.mag + b.mag
        if mag > MAG_LIMIT:
            return False
        lo = None
        if a.lo and b.lo:
            lo = {"add": a.lo + b.lo, "mul": a.lo * b.lo, "maximum": max(a.lo, b.lo)}.get(kind)
        elif kind == "maximum":
            lo = a.lo or b.lo
        self.emit(kind, [a, b], a.shape, rules.elementwise_map(a.rank, 2), mag, lo)
        return True

    def divide(self, a: Value, partners: list[Value]) -> bool:
        """`a / b` with `b` known positive: an existing value, or `exp(x)` / `exp(tanh(x))` built for it."""
        denominators = [v for v in partners if v.lo and a.mag / v.lo <= MAG_LIMIT]
        if denominators:
            b = self.pick(denominators)
        else:
            x = self.pick(partners)
            small = x.mag <= 2.0
            if self.ops_left < (2 if small else 3):
                return False
            b = self.unary("exp", x if small else self.unary("tanh", x))
            if a.mag / b.lo > MAG_LIMIT:  # type: ignore[operator]
                return False
        lo = a.lo / b.mag if a.lo else None
        self.emit("div", [a, b], a.shape, rules.elementwise_map(a.rank, 2), a.mag / b.lo, lo)  # type: ignore[operator]
        return True

    def build_broadcast(self) -> bool:
        candidates = [v for v in self.values if v.rank < MAX_RANK]
        if not candidates:
            return False
        x = self.pick(candidates)
        new = self.draw(st.integers(1, MAX_RANK - x.rank))
        rank = x.rank + new
        dims = self.draw(st.permutations(range(rank)))[:new]
        if self.draw(st.integers(0, 3)) != 0:
            dims = sorted(dims)
        source = iter(x.shape)
        shape = tuple(self.extent() if i in dims else next(source) for i in range(rank))
        attrs = f" dims = [{', '.join(map(str, dims))}]"
        self.emit("broadcast", [x], shape, rules.broadcast_map(rank, dims), x.mag, x.lo, attrs=attrs)
        return True

    def build_permute(self) -> bool:
        candidates = [v for v in self.values if v.rank >= 1]
        if not candidates:
            return False
        x = self.pick(candidates)
        perm = self.draw(st.permutations(range(x.rank)))
        shape = tuple(x.shape[p] for p in perm)
        attrs = f" perm = [{', '.join(map(str, perm))}]"
        self.emit("permute", [x], shape, rules.permute_map(perm), x.mag, x.lo, attrs=attrs)
        return True

    def build_reduction(self, kind: str) -> bool:
        candidates = [v for v in self.values if v.rank >= 1]
        if not candidates:
            return False
        x = self.pick(candidates)
        # Reducing every axis (a rank-0 result) is allowed, but rarer.
        most = x.rank if self.draw(st.integers(0, 3)) == 0 else max(1, x.rank - 1)
        dims = self.draw(st.permutations(range(x.rank)))[: self.draw(st.integers(1, most))]
        if self.draw(st.integers(0, 3)) != 0:
            dims = sorted(dims)
        count = math.prod(x.shape[d] for d in dims)
        mag = x.mag * count if kind == "sum" else x.mag
        if mag > MAG_LIMIT:
            return False
        lo = (x.lo * count if kind == "sum" else x.lo) if x.lo else None
        attrs = f" dims = [{', '.join(map(str, dims))}]"
        shape = rules.reduce_shape(x.shape, dims)
        self.emit(kind, [x], shape, rules.reduce_map(x.rank, dims), mag, lo, attrs=attrs)
        return True

    def matmul_operand_shape(self, a: Shape) -> Shape:
        """A new right-hand side for `a`: [K], [K, N] or batched [..., K, N] (batch broadcasting both ways)."""
        k = a[-1]
        form = self.draw(st.integers(0, 3))
        if form == 0:
            return (k,)
        if form == 1:
            return (k, self.extent())
        batch_a = a[:-2] if len(a) >= 2 else ()
        # The result has max(len(batch_a), len(batch)) batch axes, then M (unless `a` is 1-D) and N.
        length = self.draw(st.integers(1, MAX_RANK - (2 if len(a) >= 2 else 1)))
        batch: list[int] = []
        for j in range(length):
            ja = j - (length - len(batch_a))
            if ja < 0:
                batch.append(self.extent())
                continue
            ea = batch_a[ja]
            choice = self.draw(st.integers(0, 2))
            batch.append(ea if choice == 0 else 1 if choice == 1 else (self.extent() if ea == 1 else ea))
        return (*batch, k, self.extent())

    def build_matmul(self) -> bool:
        candidates = [v for v in self.values if v.rank >= 1]
        if not candidates:
            return False
        x = self.pick(candidates)

        def rule(a: Value, b: Value) -> tuple[Shape, rules.AxisMap] | None:
            if a.elt != b.elt or b.rank == 0:
                return None
            try:
                shape, axis_map = rules.matmul_rule(a.shape, b.shape)
            except VerifyException:
                return None
            return (shape, axis_map) if len(shape) <= MAX_RANK else None

        pairs = [(a, b) for v in self.values for a, b in ((x, v), (v, x)) if rule(a, b) is not None]
        if self.can_add_input() and x.elt == "f32" and (not pairs or self.draw(st.booleans())):
            b = self.new_input(self.matmul_operand_shape(x.shape))
            pairs = [(x, b)]
            if rule(x, b) is None:  # a batch too long for MAX_RANK: drop to the 2-D form
                return False
        if not pairs:
            return False
        a, b = self.draw(st.sampled_from(pairs))
        found = rule(a, b)
        assert found is not None
        shape, axis_map = found
        k = a.shape[-1]
        mag = a.mag * b.mag * k
        if mag > MAG_LIMIT:
            return False
        self.emit("matmul", [a, b], shape, axis_map, mag, None)
        return True

    def build_linear(self) -> bool:
        candidates = [v for v in self.values if v.rank >= 1]
        if not candidates:
            return False
        x = self.pick(candidates)
        k = x.shape[-1]
        weights = [v for v in self.values if v.elt == x.elt and v.rank in (1, 2) and v.shape[-1] == k]
        if self.can_add_input() and x.elt == "f32" and (not weights or self.draw(st.booleans())):
            shape = (k,) if self.draw(st.integers(0, 3)) == 0 else (self.extent(), k)
            weights = [self.new_input(shape)]
        if not weights:
            return False
        w = self.pick(weights)
        bias: Value | None = None
        mode = self.draw(st.integers(0, 2))  # 0: none, 1: [N] (scalar for a 1-D weight), 2: scalar
        if mode:
            shape = (w.shape[0],) if mode == 1 and w.rank == 2 else ()
            biases = [v for v in self.values if v.elt == x.elt and v.shape == shape]
            if self.can_add_input() and x.elt == "f32" and (not biases or self.draw(st.booleans())):
                biases = [self.new_input(shape)]
            if biases:
                bias = self.pick(biases)
        shape, axis_map = rules.linear_rule(x.shape, w.shape, bias.shape if bias is not None else None)
        mag = x.mag * w.mag * k + (bias.mag if bias is not None else 0.0)
        if mag > MAG_LIMIT:
            return False
        operands = [x, w] if bias is None else [x, w, bias]
        self.emit("linear", operands, shape, axis_map, mag, None)
        return True


@st.composite
def fusion_programs(draw: st.DrawFn, max_ops: int = MAX_OPS) -> FuzzProgram:
    """A random valid single-device fusion-level module (see the module docstring)."""
    pool = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True))
    builder = _Builder(draw, pool)
    for _ in range(draw(st.integers(1, 2))):
        if builder.inputs and draw(st.booleans()):
            builder.new_input(builder.inputs[-1].shape)  # the same shape: elementwise ops combine them
        else:
            builder.new_input(builder.shape())
    # A list (rather than a count) balances short and long programs, and shrinks by deleting ops.
    kinds = draw(st.lists(st.sampled_from(OP_CHOICES), min_size=1, max_size=max_ops))
    builder.ops_left = max_ops  # helper ops (a div's denominator, a fallback) count too
    for i, kind in enumerate(kinds):
        if builder.ops_left <= 0:
            break
        builder.final_op = i == len(kinds) - 1 or builder.ops_left == 1
        builder.op(kind)

    results = [v for v in builder.values if v.name.startswith("%v")]
    returned = [results[-1]]
    others = sorted(results[:-1], key=lambda v: v.uses > 0)  # unused values first
    for _ in range(draw(st.integers(0, min(MAX_RESULTS - 1, len(others))))):
        returned.append(others.pop(draw(st.integers(0, len(others) - 1)) if draw(st.booleans()) else 0))
    args = ", ".join(f"{v.name}: {v.type}" for v in builder.inputs)
    signature = ", ".join(v.type for v in returned)
    text = (
        f"func.func @main({args}) -> ({signature}) {{\n"
        + "\n".join(builder.lines)
        + f"\n  func.return {', '.join(v.name for v in returned)} : {signature}\n}}\n"
    )
    return FuzzProgram(
        text,
        draw(st.integers(0, 2**16)),
        len(builder.lines),
        builder.num_stream_ops,
        builder.may_reject,
    )


# -- the differential check ------------------------------------------------------------------------------


class LoweringMismatch(AssertionError):
    """The lowered program crashed, did not verify, or computed something else than the reference."""


def pipeline_for(policy: str) -> str:
    return "stream-lowering" if policy == POLICIES[0] else f"stream-lowering{{policy={policy}}}"


def failure_report(
    text: str, lowered: str | None, what: str, *, num_streams: int, policy: str, seed: int, may_reject: bool = False
) -> str:
    """The program text, its lowered IR (when lowering got that far) and what went wrong."""
    parts = [
        f"{what}",
        f"-- program (num_streams={num_streams}, policy={policy}, input seed={seed}):",
        text.rstrip(),
    ]
    if lowered is not None:
        parts += [f"-- lowered ({pipeline_for(policy)}):", lowered.rstrip()]
    parts.append(
        "-- reproduce: save the program as repro.mlir, then "
        f"python tests/fuzz_programs.py repro.mlir --num-streams {num_streams} --policy {policy} --seed {seed}"
        + (" --may-reject" if may_reject else "")
    )
    return "\n".join(parts)


def check_lowering(
    text: str, *, num_streams: int = 4, policy: str = POLICIES[0], seed: int = 0, may_reject: bool = False
) -> object | None:
    """
    Parses and verifies `text`, runs it (the reference), lowers it with `--stream-lowering` (and
    `policy`), verifies the result, runs it with `num_streams` and compares with `mismatches`.
    Returns the lowered module; raises `LoweringMismatch` with a full report otherwise. With
    `may_reject`, the lowering may also refuse the program with a diagnostic (`PassFailedException`):
    then it returns None.
    """
    import torch
    from device_under_test import execute_lowered

    import hir
    from hir.diagnostics import verify_located
    from hir.runtime.compare import mismatches
    from hir.runtime.executor import compile_program
    from hir.runtime.inputs import random_inputs

    module = hir.parse(text)  # a generated program that does not verify is a generator bug: let it raise
    reference_program = compile_program(module)
    inputs = random_inputs(reference_program.input_types, seed)
    reference = reference_program([x.clone() for x in inputs])
    non_finite = [k for k, t in enumerate(reference) if not torch.isfinite(t).all()]
    assert not non_finite, f"generator bug: reference outputs {non_finite} are not finite\n{text}"

    def fail(what: str, lowered: str | None) -> LoweringMismatch:
        return LoweringMismatch(
            failure_report(
                text, lowered, what, num_streams=num_streams, policy=policy, seed=seed, may_reject=may_reject
            )
        )

    try:
        hir.run_pipeline(module, pipeline_for(policy))
    except PassFailedException as err:
        if may_reject:
            return None
        raise fail(f"stream-lowering failed: {type(err).__name__}: {err}", None) from err
    except Exception as err:
        raise fail(f"stream-lowering failed: {type(err).__name__}: {err}", None) from err
    lowered = str(module)
    try:
        verify_located(module)
    except Exception as err:
        raise fail(f"the lowered module does not verify: {err}", lowered) from err
    given = [x.clone() for x in inputs]
    try:
        outputs = execute_lowered(module, given, num_streams=num_streams)
    except Exception as err:
        raise fail(f"the lowered program crashed: {type(err).__name__}: {err}", lowered) from err
    problems = [
        f"output #{k}: {out.dtype} vs reference {ref.dtype}"
        for k, (out, ref) in enumerate(zip(outputs, reference))
        if out.dtype != ref.dtype
    ]
    # The inputs are float32, so an f64 output (behind a cast) still carries float32 rounding, which
    # a reordered reduction or a matmul on a slice changes: compare everything at float32 tolerance.
    problems += mismatches([out.float() for out in outputs], [ref.float() for ref in reference])
    problems += [f"input #{k} was overwritten" for k, (a, b) in enumerate(zip(given, inputs)) if not torch.equal(a, b)]
    if problems:
        raise fail("the lowered program differs from the reference:\n  " + "\n  ".join(problems), lowered)
    return module


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", help="a fusion-level program to check (e.g. a fuzzer failure)")
    parser.add_argument("--num-streams", type=int, default=4)
    parser.add_argument("--policy", choices=POLICIES, default=POLICIES[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--may-reject", action="store_true", help="a diagnosed refusal to lower is fine")
    parser.add_argument("--sample", type=int, metavar="N", help="print N generated programs instead")
    args = parser.parse_args(argv)
    if args.sample:
        for _ in range(args.sample):
            print(fusion_programs().example().text)
        return 0
    if not args.file:
        parser.error("give a FILE or --sample N")
    with open(args.file) as f:
        text = f.read()
    try:
        lowered = check_lowering(**_options(args), text=text, may_reject=args.may_reject)
    except LoweringMismatch as err:
        print(err)
        return 1
    if lowered is None:
        print("OK: stream-lowering refused the program with a diagnostic")
        return 0
    print(failure_report(text, str(lowered), "OK: the lowered program matches the reference", **_options(args)))
    return 0


def _options(args: argparse.Namespace) -> dict[str, object]:
    return {"num_streams": args.num_streams, "policy": args.policy, "seed": args.seed}


if __name__ == "__main__":
    sys.exit(_main())
