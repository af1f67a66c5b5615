"""
Builds fusion ops for the importer: result types with the operands' stream layout carried through
each op's axis map, torch's broadcasting and type promotion spelled out with `fusion.broadcast`
and `fusion.cast`, and scalar constants.

A stream axis of an operand becomes the stream axis of the result axis it maps to (the same map
the passes use to slice operands), so a chain of ops on a `[stream, serial]` input runs in one
host loop. An op that drops an operand's stream axis (a sum over it, a contraction of it) is an
error at the user's line: one loop cannot run both.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute, Block, SSAValue

from hir.dialects import fusion
from hir.dialects.parallel_encoding import DIDX, SERIAL, STREAM, ParallelAttr, layout_of
from hir.dialects.shape_rules import operand_axis_to_result_axis
from hir.frontend.errors import FrontendError

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
        self._constants: dict[tuple[float, Attribute], SSAValue] = {}
        self.name_hint: str | None = None
        self.where = "<program>"

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
                    raise self.error(f"{plain.name}: its operands are streamed along different axes or chunk counts")
                stream = (target, chunks)
        if stream is None and didx is None and not mesh:
            return self.emit(plain)
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
        return self.constant(x, element)

    def constant(self, value: float, element: Attribute) -> SSAValue:
        """A 0-d `fusion.full`: broadcast where it is used (a view at run time)."""
        key = (float(value), element)
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
        result = self.typed(lambda t: kind(x, dims, t), [x], kept, element_of(x))
        return self.unsqueeze(result, dims) if keepdim else result

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


def is_float(element: Attribute) -> bool:
    return not isinstance(element, IntegerType)


def _broadcast_shapes(a: Shape, b: Shape, emitter: Emitter) -> Shape:
    rank = max(len(a), len(b))
    a1, b1 = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a1, b1):
        if x != y and 1 not in (x, y):
            raise emitter.error(f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(out)


def has_didx(value: SSAValue) -> bool:
    return DIDX in layout_of(value.type).kinds
