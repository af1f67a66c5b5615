"""
Builds fusion ops for the importer: result types with the operands' stream layout carried through
each op's axis map, torch's broadcasting and type promotion spelled out with `fusion.broadcast`
and `fusion.cast`, and scalar constants.

A stream axis of an operand becomes the stream axis of the result axis it maps to (the same map
the passes use to slice operands), so a chain of ops on a `[stream, serial]` input runs in one
host loop. An op that drops an operand's stream axis (a sum over it, a contraction of it) is an
error at the user's line: one loop cannot run both.

A reshape that splits or merges the stream axis has no axis map for it; `Emitter.reshape` puts
the stream on the outer factor of the axis's group instead, with a layout that
`shape_rules.reshape_slicing` (the rule the lowering applies) reads as the same rows of the operand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import IntegerType, Signedness, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from hir.dialects import fusion
from hir.dialects.parallel_encoding import DIDX, SERIAL, STREAM, ParallelAttr, layout_of
from hir.dialects.shape_rules import (
    Slicing,
    SlicingError,
    fmt,
    operand_axis_to_result_axis,
    reshape_groups,
    reshape_map,
    reshape_slicing,
)
from hir.frontend.errors import FrontendError, SourceLine

if TYPE_CHECKING:
    from torch.fx import Node

Shape = tuple[int, ...]


def shape_of(value: SSAValue) -> Shape:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def element_of(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


def with_shape(like: TensorType, shape: Shape, element: Attribute | None = None) -> TensorType:
    """`like`'s encoding on another shape of the same rank (plain when `like` has none)."""
    return TensorType(element or like.element_type, shape, like.encoding)


class Emitter:
    """Appends fusion ops to `block`; `error(message)` raises at the user's line being imported."""

    def __init__(self, block: Block):
        self.block = block
        self._constants: dict[tuple[float, float, Attribute], SSAValue] = {}
        self.name_hint: str | None = None
        self.where = "<program>"
        self.origins: dict[Operation, SourceLine] = {}
        """The user's line each op was made for, where the importer knows it."""
        self.made_for: dict[Operation, Node] = {}
        """The graph node (torch.fx) each op was made for: an op that does not verify names its ATen op."""
        self.wrapped_indices: dict[tuple[SSAValue, int, Block], SSAValue] = {}
        """Index tensors with their negative values wrapped, by index, axis extent and block (aten_indexing)."""
        self.on_mesh = False
        """Whether the program runs on a mesh (its ops that draw random numbers are refused there)."""

    def error(self, message: str) -> FrontendError:
        return FrontendError(f"{self.where}: error: {message}")

    # -- generic op creation ---------------------------------------------------------------------

    def emit(self, op: fusion.FusionOp) -> SSAValue:
        self.block.add_op(op)
        result = op.results[0]
        if self.name_hint:
            result.name_hint = self.name_hint
        return result

    def typed(self, make, operands: Sequence[SSAValue], shape: Shape, element: Attribute) -> SSAValue:
        """
        Builds `make(result_type)` with the result type inferred from the operands' layouts: the
        stream and didx axes follow the op's axis map, the mesh is the operands'.
        """
        plain = make(TensorType(element, shape))
        stream: tuple[int, int] | None = None  # (result axis, chunks)
        didx: int | None = None
        mesh: tuple[int, ...] = ()
        for k, operand in enumerate(operands):
            layout = layout_of(operand.type)
            mesh = mesh or layout.mesh
            for axis, kind in ((layout.stream_axis, STREAM), (layout.didx_axis, DIDX)):
                if axis is None:
                    continue
                target = operand_axis_to_result_axis(plain.axis_map(), k, axis)
                if target is None:
                    raise self.error(
                        f"{plain.name} drops the {kind} axis {axis} of its operand #{k} (it reduces or contracts "
                        f"it), which the frontend does not lower: keep {kind} axes on axes that every op keeps"
                    )
                if kind == DIDX:
                    if didx not in (None, target):
                        raise self.error(f"{plain.name}: its operands are sharded along different axes")
                    didx = target
                    continue
                chunks = layout.stream_chunks or 0
                if stream not in (None, (target, chunks)):
                    raise self.error(
                        f"{plain.name}: its operands are streamed along different axes or chunk counts "
                        f"({_describe_stream(*stream)} and {_describe_stream(target, chunks)} of the result); "
                        "a view that splits a streamed axis changes the iteration count to its outer factor"
                    )
                stream = (target, chunks)
        if stream is None and didx is None and not mesh:
            return self.emit(plain)
        plain.drop_all_references()  # replaced by the typed op below: its operands must not count it as a use
        kinds = [SERIAL] * len(shape)
        chunks = [0] * len(shape)
        if stream is not None:
            kinds[stream[0]] = STREAM
            chunks[stream[0]] = stream[1]
        if didx is not None:
            kinds[didx] = DIDX
        return self.emit(make(TensorType(element, shape, ParallelAttr(kinds, chunks, mesh))))

    # -- elementwise -----------------------------------------------------------------------------

    def unary(self, kind: type[fusion.UnaryFusionOp], x: SSAValue) -> SSAValue:
        return self.typed(lambda t: kind(x, t), [x], shape_of(x), element_of(x))

    def cast(self, x: SSAValue, element: Attribute) -> SSAValue:
        if element_of(x) == element:
            return x
        return self.typed(lambda t: fusion.CastOp(x, t), [x], shape_of(x), element)

    def binary(
        self, kind: type[fusion.BinaryFusionOp], a: SSAValue | float, b: SSAValue | float, element: Attribute
    ) -> SSAValue:
        """`a OP b` with torch's broadcasting; scalars become constants of `element`."""
        a, b = self._operand(a, b, element), self._operand(b, a, element)
        a, b = self.cast(a, element), self.cast(b, element)
        a, b = self.broadcast_pair(a, b)
        return self.typed(lambda t: kind(a, b, t), [a, b], shape_of(a), element)

    def broadcast_pair(self, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
        """Both operands broadcast to their common shape, as torch does."""
        target = _broadcast_shapes(shape_of(a), shape_of(b), self)
        like = a if shape_of(a) == target else b if shape_of(b) == target else None
        return self.broadcast_to(a, target, like), self.broadcast_to(b, target, like)

    def _operand(self, x: SSAValue | float, other: SSAValue | float, element: Attribute) -> SSAValue:
        if isinstance(x, SSAValue):
            return x
        if not isinstance(other, SSAValue):
            raise self.error("an op on two Python scalars has no tensor to compute on")
        return self.constant(_wrapped(x, element), element)

    def constant(self, value: float, element: Attribute) -> SSAValue:
        """A 0-d `fusion.full`: broadcast where it is used (a view at run time)."""
        # The sign too: -0.0 == 0.0 (a `torch.where(m, -0.0, 0.0)` took one constant for both).
        sign = math.copysign(1.0, value) if isinstance(value, float) else 1.0
        key = (value, sign, element)
        if key not in self._constants:
            name_hint, self.name_hint = self.name_hint, "cst"
            # Constants go first in the block, so that one value serves every use (and cse has nothing to do).
            op = fusion.FullOp(value, TensorType(element, ()))
            first = self.block.first_op
            if first is None:
                self.block.add_op(op)
            else:
                self.block.insert_op_before(op, first)
            op.results[0].name_hint = "cst"
            self.name_hint = name_hint
            self._constants[key] = op.results[0]
        return self._constants[key]

    # -- shapes ----------------------------------------------------------------------------------

    def broadcast_to(self, x: SSAValue, shape: Shape, like: SSAValue | None = None) -> SSAValue:
        """torch's expand of `x` to `shape`; the result takes `like`'s layout (a value of that shape)."""
        source = shape_of(x)
        if source == shape:
            return x
        lead = len(shape) - len(source)
        expanded = [lead + i for i, e in enumerate(source) if e == 1 and shape[lead + i] != 1]
        if expanded:
            x = self.squeeze(x, [i - lead for i in expanded])
        dims = sorted([*range(lead), *expanded])
        if like is not None:
            result_type = with_shape(like.type, shape, element_of(x))
            return self.emit(fusion.ExpandOp(x, dims, result_type))
        return self.typed(lambda t: fusion.ExpandOp(x, dims, t), [x], shape, element_of(x))

    def unsqueeze(self, x: SSAValue, axes: Sequence[int]) -> SSAValue:
        """New axes of extent 1 at `axes` of the result (a broadcast to extent 1)."""
        rank = len(shape_of(x)) + len(axes)
        axes = sorted(a % rank for a in axes)
        shape = list(shape_of(x))
        for a in axes:
            shape.insert(a, 1)
        return self.typed(lambda t: fusion.ExpandOp(x, axes, t), [x], tuple(shape), element_of(x))

    def squeeze(self, x: SSAValue, axes: Sequence[int]) -> SSAValue:
        """Drops axes of extent 1 (a sum over one element: exact; or the operand of their unsqueeze)."""
        axes = sorted(a for a in axes if shape_of(x)[a] == 1)
        if not axes:
            return x
        owner = x.owner
        if isinstance(owner, fusion.ExpandOp) and list(owner.axes) == axes:
            return owner.x
        return self.reduce(fusion.SumOp, x, axes, keepdim=False)

    def reduce(self, kind: type[fusion.ReductionFusionOp], x: SSAValue, dims: Sequence[int], keepdim: bool) -> SSAValue:
        shape = shape_of(x)
        dims = sorted({d % len(shape) for d in dims}) if shape else []
        if not dims:
            return x
        kept = tuple(e for i, e in enumerate(shape) if i not in dims)
        if element_of(x) == IntegerType(1) and kind in (fusion.MaxOp, fusion.MinOp):  # any / all of booleans
            counted = self.reduce(kind, self.cast(x, IntegerType(32)), dims, keepdim)
            return self.cast(counted, IntegerType(1))
        result = self.typed(lambda t: kind(x, dims, t), [x], kept, element_of(x))
        return self.unsqueeze(result, dims) if keepdim else result

    def reshape(self, x: SSAValue, shape: Shape, what: str = "the reshape") -> SSAValue:
        """
        `fusion.reshape` of `x` to `shape`. A stream axis that the reshape keeps as an axis of its own
        maps through (`typed`); one that it splits or merges goes on the outer factor of its group
        (`stream_after_reshape`). `what` names the view in errors.
        """

        def make(t: TensorType) -> fusion.ReshapeOp:
            return fusion.ReshapeOp(x, t)

        layout = layout_of(x.type)
        axis = layout.stream_axis
        source = shape_of(x)
        if axis is None or layout.didx_axis is not None or layout.mesh or _keeps(source, shape, axis):
            return self.typed(make, [x], shape, element_of(x))
        target, chunks = stream_after_reshape(source, shape, axis, layout.stream_chunks, self, what)
        kinds = [SERIAL] * len(shape)
        counts = [0] * len(shape)
        kinds[target], counts[target] = STREAM, chunks or 0
        return self.emit(make(TensorType(element_of(x), shape, ParallelAttr(kinds, counts))))

    def permute(self, x: SSAValue, perm: Sequence[int]) -> SSAValue:
        shape = shape_of(x)
        perm = [p % len(shape) for p in perm]
        if perm == list(range(len(shape))):
            return x
        return self.typed(lambda t: fusion.PermuteOp(x, perm, t), [x], tuple(shape[p] for p in perm), element_of(x))

    def erase_unused(self) -> None:
        """Drops ops whose results nothing uses (unsqueezes that a broadcast looked through)."""
        for op in reversed(list(self.block.ops)):
            if isinstance(op, fusion.FusionOp) and not any(r.uses for r in op.results):
                op.detach()
                op.erase()

    def set_type(self, x: SSAValue, t: TensorType) -> SSAValue:
        """`fusion.set` to another layout of the same tensor (an output layout)."""
        if x.type == t:
            return x
        return self.emit(fusion.SetOp(x, t))


def _describe_stream(axis: int, chunks: int) -> str:
    return f"stream on axis {axis}" if not chunks else f"stream({chunks}) on axis {axis}"


def _keeps(source: Shape, shape: Shape, axis: int) -> bool:
    """Whether the reshape keeps operand axis `axis` as a result axis of its own (its axis map has it)."""
    return operand_axis_to_result_axis(reshape_map(source, shape), 0, axis) is not None


def stream_after_reshape(
    source: Shape, shape: Shape, axis: int, chunks: int | None, emitter: Emitter, what: str
) -> tuple[int, int | None]:
    """
    The result's stream axis and chunk count (None: plain `stream`) for a reshape of `source` to
    `shape` that splits or merges the operand's stream axis `axis` (`chunks` N for `stream(N)`).

    The stream goes on the outer factor of the axis's group (`reshape_groups`), the only result
    axis whose slices are whole slices of the operand, and only when the stream axis leads its
    group. Candidates, in order, each kept when `reshape_slicing` reads it as chunks of the
    operand's stream axis itself (the rows the operand's iterations hold, never strided):
      1. the operand's iteration count P (its extent for `stream`, N for `stream(N)`): `stream` when
         the outer factor has extent P, else `stream(P)`. A merge `[B, S, H] -> [B*S, H]` of a
         `stream` on B gives `stream(B)` (chunk i: the S rows of former index i), a split back
         `[B*S, H] -> [B, S, H]` of that gives `stream` on B again;
      2. plain `stream` on the outer factor (its extent as the count): a split of a `stream` axis
         of extent E into (T, E/T) iterates T blocks of E/T former indices (P = E iterations would
         need T to divide into E pieces, which it cannot), and a split of `stream(N)` whose N does
         not divide T iterates T.
    """
    group = next((g for g in reshape_groups(source, shape) if axis in g[0]), None)
    kind = "stream" if chunks is None else f"stream({chunks})"
    change = f"{what} ({fmt(source)} -> {fmt(shape)})"
    if group is None:
        raise emitter.error(f"{change} drops the {kind} axis {axis} of its operand")
    group_a, group_b = group
    how = "splits" if len(group_a) == 1 else "merges" if len(group_b) == 1 else "regroups"
    moved = (
        f"{change} {how} operand axes {list(group_a)} ({fmt([source[a] for a in group_a])}) into result axes "
        f"{list(group_b)} ({fmt([shape[b] for b in group_b])})"
    )
    if axis != group_a[0]:
        raise emitter.error(
            f"{moved}, and the {kind} axis {axis} is an inner factor: each of its indices is strided in the "
            f"result, so no stream loop reads it; stream operand axis {group_a[0]} (the outer factor) instead, "
            "or keep the streamed axis out of the view"
        )
    outer = group_b[0]
    pieces = chunks if chunks is not None else source[axis]
    candidates: list[int | None] = [None if shape[outer] == pieces else pieces, None]
    for count in candidates:
        try:
            slicing = reshape_slicing(source, shape, Slicing((outer,), count))
        except SlicingError:
            continue
        if slicing is not None and slicing.axes == (axis,):
            return outer, count
    raise emitter.error(
        f"{moved}, and no stream layout of result axis {outer} (the outer factor) reads whole rows of the "
        f"{kind} axis {axis}: use a stream(N) whose N divides both {source[axis]} and {shape[outer]}, or keep the "
        "streamed axis out of the view"
    )


def is_float(element: Attribute) -> bool:
    return not isinstance(element, IntegerType)


def _broadcast_shapes(a: Shape, b: Shape, emitter: Emitter) -> Shape:
    rank = max(len(a), len(b))
    a1, b1 = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a1, b1):
        if x != y and 1 not in (x, y):
            raise emitter.error(f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(y if x == 1 else x)  # torch's rule: an extent of 1 takes the other's, 0 included
    return tuple(out)


def has_didx(value: SSAValue) -> bool:
    return DIDX in layout_of(value.type).kinds


def _wrapped(value: float, element: Attribute) -> float:
    """
    An integer scalar operand as torch converts it to an integer tensor's type: wrapped modulo
    2^width (`uint8 + 300` adds 44, `uint8 > -1` compares with 255).
    """
    if not isinstance(element, IntegerType) or element.width.data == 1 or not isinstance(value, int):
        return value
    width = element.width.data
    if element.signedness.data == Signedness.UNSIGNED:
        return value % 2**width
    return (value + 2 ** (width - 1)) % 2**width - 2 ** (width - 1)
