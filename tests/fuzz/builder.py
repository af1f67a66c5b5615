"""
The op builders shared by the generators: each draws an op that fits the values built so far,
its result's placement (through a `Placement`: single device, or a mesh) and stream encoding, and
bounds its elements so that every program computes finite, exactly comparable values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hypothesis import strategies as st
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules

from .values import BOOL_OPS, ELEMENT_TYPES, FLOAT_OPS, Mesh, Shape, StreamAxis, Value

MAX_RANK = 4
MAX_INPUTS = 4
MAX_OPS = 10
MAX_RESULTS = 3
EXP_LIMIT = 8.0
PERIODIC_LIMIT = 16.0
"""sin and cos take only values bounded by this, unless they are computed exactly alike everywhere."""

UNARY = ("set", "neg", "abs", "relu", "exp", "tanh", "sin", "cos", "erf")
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
"""One in this many ops that stream-lowering would refuse is kept (the program may then be refused); the others change."""

Placement = tuple[int | None, Mesh]
"""A result's didx axis (or None) and mesh."""


class Placer(Protocol):
    """Where values live: `SingleDevice` below, or a mesh (tests/fuzz/multidevice.py)."""

    def input_placement(self, builder: Builder, shape: Shape) -> Placement: ...

    def result_placements(
        self, builder: Builder, op: str, operands: Sequence[Value], shape: Shape, axis_map: rules.AxisMap
    ) -> list[Placement]:
        """The placements the result may take, preferred first (empty: the op cannot be placed)."""
        ...

    def problem(
        self,
        op: str,
        operands: Sequence[Value],
        shape: Shape,
        axis_map: rules.AxisMap,
        placement: Placement,
        stream: StreamAxis | None,
    ) -> str | None:
        """Why stream-lowering would refuse the op so placed (with a diagnostic), if it would."""
        ...

    def known_bug(
        self,
        op: str,
        operands: Sequence[Value],
        shape: Shape,
        axis_map: rules.AxisMap,
        placement: Placement,
        stream: StreamAxis | None,
    ) -> str | None:
        """A known bug of the lowering that the op so placed would hit (it is then not generated)."""
        ...

    def stream_hint(
        self, operands: Sequence[Value], axis_map: rules.AxisMap, placement: Placement
    ) -> StreamAxis | None:
        """A stream axis worth taking often for the op so placed (None: no preference)."""
        ...


class SingleDevice:
    def input_placement(self, builder: Builder, shape: Shape) -> Placement:
        return None, ()

    def result_placements(
        self, builder: Builder, op: str, operands: Sequence[Value], shape: Shape, axis_map: rules.AxisMap
    ) -> list[Placement]:
        return [(None, ())]

    def problem(
        self,
        op: str,
        operands: Sequence[Value],
        shape: Shape,
        axis_map: rules.AxisMap,
        placement: Placement,
        stream: StreamAxis | None,
    ) -> str | None:
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
        return None

    def stream_hint(
        self, operands: Sequence[Value], axis_map: rules.AxisMap, placement: Placement
    ) -> StreamAxis | None:
        return None


def divisors(n: int) -> list[int]:
    """Chunk counts for an extent (any small count divides an extent of 0)."""
    return [d for d in range(1, max(n, 3) + 1) if n % d == 0]


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


def supports(op: str, elt: str, *, int_matmul: bool = True) -> bool:
    """Whether the verifier accepts `op` on `elt` and torch runs it (on the device under test)."""
    kind = ELEMENT_TYPES[elt].kind
    if kind == "bool":
        return op in BOOL_OPS
    if kind == "int":
        return op not in FLOAT_OPS and (int_matmul or op not in ("matmul", "linear"))
    return True


@dataclass
class Builder:
    draw: st.DrawFn
    pool: list[int]
    """The extents shapes are drawn from (shared, so ops can combine values)."""
    elt: str = "f32"
    """The element type of new inputs."""
    placer: Placer = field(default_factory=SingleDevice)
    int_matmul: bool = True
    """Integer matmul/linear (torch has none on CUDA)."""
    excluded: frozenset[str] = frozenset()
    """Element types never generated (a backend that cannot run them)."""
    inputs: list[Value] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    records: list[tuple[Value, str, tuple[Value, ...], str]] = field(default_factory=list)
    """Per line: the result, the op, its operands and attributes (to write the line again, `line`)."""
    ops_left: int = 0
    num_stream_ops: int = 0
    final_op: bool = False
    may_reject: bool = False
    facts: set[str] = field(default_factory=set)

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

    def pick_operand(self, candidates: Sequence[Value], op: str) -> Value:
        """The first operand of `op` (the multi-device builder prefers some)."""
        return self.pick(candidates)

    def supports(self, op: str, elt: str) -> bool:
        return supports(op, elt, int_matmul=self.int_matmul)

    def can_add_input(self) -> bool:
        return len(self.inputs) < MAX_INPUTS

    def new_input(self, shape: Shape, elt: str | None = None, placement: Placement | None = None) -> Value:
        assert self.can_add_input()
        elt = elt or self.elt
        didx, mesh = placement if placement is not None else self.placer.input_placement(self, shape)
        stream: StreamAxis | None = None
        free = [a for a in range(len(shape)) if a != didx]
        if free and self.draw(st.integers(0, 7)) == 7:  # inputs may carry a stream encoding too
            stream = (self.draw(st.sampled_from(free)), None)
        element = ELEMENT_TYPES[elt]
        value = Value(
            f"%arg{len(self.inputs)}", shape, elt, stream, False, stream, element.input_mag, None, True, didx, mesh
        )
        self.inputs.append(value)
        self.values.append(value)
        return value

    def encoding(
        self, shape: Shape, operands: Sequence[Value], axis_map: rules.AxisMap, didx: int | None
    ) -> tuple[StreamAxis | None, StreamAxis | None]:
        """The result's stream axis (or None: serial) and its hint; never the didx axis."""
        mapped: list[StreamAxis] = []
        for k, operand in enumerate(operands):
            if operand.hint is None:
                continue
            axis, chunks = operand.hint
            for r, sources in enumerate(axis_map):
                if (k, axis) in sources and (r, chunks) not in mapped and r != didx:
                    mapped.append((r, chunks))
        hint = mapped[0] if mapped else None
        free = [a for a in range(len(shape)) if a != didx]
        if not free:
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
            axis = self.draw(st.sampled_from(free))
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
        exact: bool | None = None,
        placement: Placement | None = None,
        stream: StreamAxis | type[Ellipsis] | None = ...,
    ) -> Value | None:
        """
        Appends `op` (its result placed by the placer unless `placement` is given, its stream
        axis drawn unless `stream` is given) and returns its result; None when the op cannot be
        placed so that stream-lowering accepts it (and no refusal was drawn), which emits nothing.
        """
        assert len(axis_map) == len(shape)
        elt = elt or operands[0].elt
        if placement is None:
            options = self.placer.result_placements(self, op, operands, shape, axis_map)
            if not options:
                return None
            placement = (
                options[0]
                if len(options) == 1 or self.draw(st.integers(0, 3))
                else self.draw(st.sampled_from(options[1:]))
            )
        didx, mesh = placement
        suggested = self.placer.stream_hint(operands, axis_map, placement)
        if stream is ... and suggested is not None and self.draw(st.integers(0, 2)) < 2:
            stream = hint = suggested
        elif stream is ...:
            stream, hint = self.encoding(shape, operands, axis_map, didx)
        else:
            hint = stream  # type: ignore[assignment]

        def problem(stream: StreamAxis | None) -> str | None:
            if stream is not None and (found := slicing_problem(op, operands, axis_map, stream, shape[stream[0]])):
                return found
            return self.placer.problem(op, operands, shape, axis_map, placement, stream)

        if self.placer.known_bug(op, operands, shape, axis_map, placement, stream) is not None:  # type: ignore[arg-type]
            if stream is None or self.placer.known_bug(op, operands, shape, axis_map, placement, None) is not None:
                return None
            stream = None
        if problem(stream) is not None:  # type: ignore[arg-type]
            if self.draw(st.integers(0, REFUSAL_RATE - 1)) == 0:
                self.may_reject = True  # a limitation the lowering must diagnose, now and then
            elif stream is not None and problem(None) is None:
                stream = None
            else:
                return None
        explicit = stream is None and self.draw(st.integers(0, 5)) == 5
        element = ELEMENT_TYPES[elt]
        if exact is None:
            exact = all(v.exact for v in operands)
        result = Value(
            f"%v{len(self.lines)}",
            shape,
            elt,
            stream,  # type: ignore[arg-type]
            explicit,
            hint,
            mag if element.kind != "bool" else 1.0,
            lo if lo and element.is_float else None,
            exact or not element.is_float,
            didx,
            mesh,
            op=op,
        )
        for operand in operands:
            operand.uses += 1
        if stream is not None:
            key = (stream[1], shape[stream[0]])  # type: ignore[index]
            for value, axes in slicings(operands, axis_map, stream, shape[stream[0]]).items():  # type: ignore[arg-type,index]
                value.slicings[key] = axes
        self.records.append((result, op, tuple(operands), attrs))
        self.lines.append(self.line(result, op, operands, attrs))
        self.values.append(result)
        self.ops_left -= 1
        self.num_stream_ops += stream is not None
        self.emitted(op, operands, result, axis_map)
        return result

    @staticmethod
    def line(result: Value, op: str, operands: Sequence[Value], attrs: str) -> str:
        """The text of an op, with its values' types as they are now."""
        args = ", ".join(v.name for v in operands)
        types = ", ".join(v.type for v in operands)
        return f"  {result.name} = fusion.{op} {args}{attrs} : {types} -> {result.type}"

    def emitted(self, op: str, operands: Sequence[Value], result: Value, axis_map: rules.AxisMap) -> None:
        """Called for every op emitted (a hook for the multi-device builder)."""

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
        if not done and self.ops_left > 0:
            self.fallback()

    def fallback(self) -> None:
        """An op that always fits (and brings magnitudes back to 1): a tanh of a float, else a copy."""
        floats = [v for v in self.values if v.element.is_float]
        if floats:
            self.unary("tanh", self.pick(floats), local=True)
        else:
            self.unary("set", self.pick(self.values), local=True)

    def unary(self, kind: str, x: Value, local: bool = False) -> Value | None:
        mag, lo, exact = x.mag, None, None
        if kind == "set":
            lo = x.lo
        elif kind == "exp":
            mag, lo, exact = math.exp(x.mag), math.exp(-x.mag), False
        elif kind in ("tanh", "sin"):
            mag, exact = min(x.mag, 1.0), False
        elif kind == "cos":
            mag, exact = 1.0, False
        elif kind == "erf":
            mag, exact = min(1.13 * x.mag, 1.0), False  # |erf(x)| <= 2|x|/sqrt(pi)
        placement = (x.didx, x.mesh) if local else None
        return self.emit(
            kind, [x], x.shape, rules.elementwise_map(x.rank, 1), mag, lo, exact=exact, placement=placement
        )

    def build_unary(self, kind: str) -> bool:
        candidates = [v for v in self.values if self.supports(kind, v.elt)]
        if kind == "exp":
            candidates = [v for v in candidates if v.mag <= EXP_LIMIT]
        if kind in ("sin", "cos"):
            # sin and cos pass their argument's absolute rounding error on to a result of magnitude
            # 1: an inexact argument in the hundreds (a sum computed in another order on the
            # devices) would differ by more than the float32 tolerance.
            candidates = [v for v in candidates if v.exact or v.mag <= PERIODIC_LIMIT]
        if not candidates:
            return False
        return self.unary(kind, self.pick(candidates)) is not None

    def build_cast(self) -> bool:
        x = self.pick(self.values)
        # An inexact float cast to an integer or a boolean could round to another value slice by slice.
        targets = [
            name
            for name, t in ELEMENT_TYPES.items()
            if name != x.elt and name not in self.excluded and (x.exact or t.is_float) and x.mag <= t.mag_limit
        ]
        if not targets:
            return False
        elt = self.draw(st.sampled_from(targets))
        to = ELEMENT_TYPES[elt]
        mag = 1.0 if to.kind == "bool" else x.mag
        lo = x.lo if to.is_float else None
        return (
            self.emit("cast", [x], x.shape, rules.elementwise_map(x.rank, 1), mag, lo, elt=elt, exact=x.exact)
            is not None
        )

    def build_binary(self, kind: str) -> bool:
        candidates = [v for v in self.values if self.supports(kind, v.elt)]
        if not candidates:
            return False
        a = self.pick(candidates)
        partners = [v for v in self.values if v.shape == a.shape and v.elt == a.elt]
        if kind == "div":
            return self.divide(a, partners)
        if len(partners) == 1 and self.can_add_input() and self.draw(st.booleans()):
            partners.append(self.new_input(a.shape, a.elt, self.placer_partner(a)))
        b = self.pick(partners)
        if self.draw(st.booleans()):
            a, b = b, a
        mag = a.mag * b.mag if kind == "mul" else a.mag + b.mag
        if mag > a.element.mag_limit:
            return False
        lo = None
        if a.lo and b.lo:
            lo = {"add": a.lo + b.lo, "mul": a.lo * b.lo, "maximum": max(a.lo, b.lo)}.get(kind)
        elif kind == "maximum":
            lo = a.lo or b.lo
        return self.emit(kind, [a, b], a.shape, rules.elementwise_map(a.rank, 2), mag, lo) is not None

    def placer_partner(self, a: Value) -> Placement | None:
        """A new input to combine with `a`: placed like it (None: as the placer likes)."""
        return (a.didx, a.mesh) if a.didx is not None or a.mesh else None

    def divide(self, a: Value, partners: list[Value]) -> bool:
        """`a / b` with `b` known positive: an existing value, or `exp(x)` / `exp(tanh(x))` built for it."""
        limit = a.element.mag_limit
        denominators = [v for v in partners if v.lo and a.mag / v.lo <= limit]
        if denominators:
            b = self.pick(denominators)
        else:
            x = self.pick(partners)
            small = x.mag <= 2.0
            if self.ops_left < (2 if small else 3):
                return False
            inner = x if small else self.unary("tanh", x, local=True)
            b = self.unary("exp", inner, local=True) if inner is not None else None
            if b is None or a.mag / b.lo > limit:  # type: ignore[operator]
                return False
        lo = a.lo / b.mag if a.lo else None
        mag = a.mag / b.lo  # type: ignore[operator]
        return self.emit("div", [a, b], a.shape, rules.elementwise_map(a.rank, 2), mag, lo) is not None

    def build_broadcast(self) -> bool:
        candidates = [v for v in self.values if v.rank < MAX_RANK]
        if not candidates:
            return False
        x = self.pick(candidates)
        new = self.draw(st.integers(1, MAX_RANK - x.rank))
        rank = x.rank + new
        dims = self.draw(st.permutations(range(rank)))[:new]
        kept = iter(x.shape)
        shape = tuple(self.extent() if d in dims else next(kept) for d in range(rank))
        attrs = f" dims = [{', '.join(map(str, dims))}]"
        return self.emit("broadcast", [x], shape, rules.broadcast_map(rank, dims), x.mag, x.lo, attrs=attrs) is not None

    def build_permute(self) -> bool:
        candidates = [v for v in self.values if v.rank >= 1]
        if not candidates:
            return False
        x = self.pick(candidates)
        perm = self.draw(st.permutations(range(x.rank)))
        attrs = f" perm = [{', '.join(map(str, perm))}]"
        shape = tuple(x.shape[p] for p in perm)
        return self.emit("permute", [x], shape, rules.permute_map(perm), x.mag, x.lo, attrs=attrs) is not None

    def reduction_dims(self, x: Value) -> list[int]:
        most = x.rank if self.draw(st.integers(0, 3)) == 0 else max(1, x.rank - 1)
        dims = self.draw(st.permutations(range(x.rank)))[: self.draw(st.integers(1, most))]
        return dims if self.draw(st.integers(0, 3)) == 0 else sorted(dims)

    def build_reduction(
        self, kind: str, dims: list[int] | None = None, x: Value | None = None, placement: Placement | None = None
    ) -> bool:
        if x is None:
            candidates = [v for v in self.values if v.rank >= 1 and self.supports(kind, v.elt)]
            if not candidates:
                return False
            x = self.pick_operand(candidates, kind)
        if dims is None:
            dims = self.reduction_dims(x)
        count = math.prod(x.shape[d] for d in dims)
        if count == 0 and kind != "sum":
            return False  # torch has no max/min over an empty axis (a located run-time error)
        mag = x.mag * count if kind == "sum" else x.mag
        if mag > x.element.mag_limit:
            return False
        lo = (x.lo * count if kind == "sum" else x.lo) if x.lo and count else None
        attrs = f" dims = [{', '.join(map(str, dims))}]"
        shape = rules.reduce_shape(x.shape, dims)
        exact = x.exact and kind != "sum"
        return (
            self.emit(
                kind, [x], shape, rules.reduce_map(x.rank, dims), mag, lo, attrs=attrs, exact=exact, placement=placement
            )
            is not None
        )

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

    def contraction_input(self, shape: Shape, like: Value, operand: int, op: str) -> Value:
        """A new operand of a matmul/linear with `like` (the placer may shard it to match)."""
        return self.new_input(shape, like.elt, self.contraction_placement(shape, like, operand, op))

    def contraction_placement(self, shape: Shape, like: Value, operand: int, op: str) -> Placement | None:
        return None

    def build_matmul(self) -> bool:
        candidates = [v for v in self.values if v.rank >= 1 and self.supports("matmul", v.elt)]
        if not candidates:
            return False
        x = self.pick_operand(candidates, "matmul")

        def rule(a: Value, b: Value) -> tuple[Shape, rules.AxisMap] | None:
            if a.elt != b.elt or b.rank == 0:
                return None
            try:
                shape, axis_map = rules.matmul_rule(a.shape, b.shape)
            except VerifyException:
                return None
            return (shape, axis_map) if len(shape) <= MAX_RANK else None

        pairs = [(a, b) for v in self.values for a, b in ((x, v), (v, x)) if rule(a, b) is not None]
        if self.can_add_input() and (not pairs or self.draw(st.booleans())):
            b = self.contraction_input(self.matmul_operand_shape(x.shape), x, 1, "matmul")
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
        if mag > a.element.mag_limit:
            return False
        return self.emit("matmul", [a, b], shape, axis_map, mag, None, exact=False) is not None

    def build_linear(self) -> bool:
        candidates = [v for v in self.values if v.rank >= 1 and self.supports("linear", v.elt)]
        if not candidates:
            return False
        x = self.pick_operand(candidates, "linear")
        k = x.shape[-1]
        weights = [v for v in self.values if v.elt == x.elt and v.rank in (1, 2) and v.shape[-1] == k]
        if self.can_add_input() and (not weights or self.draw(st.booleans())):
            shape = (k,) if self.draw(st.integers(0, 3)) == 0 else (self.extent(), k)
            weights = [self.contraction_input(shape, x, 1, "linear")]
        if not weights:
            return False
        w = self.pick(weights)
        bias: Value | None = None
        mode = self.draw(st.integers(0, 2))  # 0: none, 1: [N] (scalar for a 1-D weight), 2: scalar
        if mode:
            shape = (w.shape[0],) if mode == 1 and w.rank == 2 else ()
            biases = [v for v in self.values if v.elt == x.elt and v.shape == shape]
            if self.can_add_input() and (not biases or self.draw(st.booleans())):
                biases = [self.contraction_input(shape, x, 2, "linear")]
            if biases:
                bias = self.pick(biases)
        shape, axis_map = rules.linear_rule(x.shape, w.shape, bias.shape if bias is not None else None)
        mag = x.mag * w.mag * k + (bias.mag if bias is not None else 0.0)
        if mag > x.element.mag_limit:
            return False
        operands = [x, w] if bias is None else [x, w, bias]
        return self.emit("linear", operands, shape, axis_map, mag, None, exact=False) is not None


def input_element_type(draw: st.DrawFn, excluded: frozenset[str] = frozenset()) -> str:
    """The element type of a program's inputs: float32 half the time, then the others alike."""
    if draw(st.booleans()):
        return "f32"
    return draw(st.sampled_from([name for name in ELEMENT_TYPES if name != "f32" and name not in excluded]))


def extent_pool(draw: st.DrawFn, always: Sequence[int] = ()) -> list[int]:
    """1-3 extents from 1..6 (plus `always`), and now and then 0 (empty tensors)."""
    pool = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True))
    pool += [e for e in always if e not in pool]
    if draw(st.integers(0, 9)) == 0:
        pool.append(0)
    return pool
