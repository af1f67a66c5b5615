"""
The bases of the fusion ops: each op computes one tensor with torch semantics (DESIGN contract:
names, operands, attributes) and exposes `axis_map()` (see `shape_rules`): for each result axis,
the operand axes it comes from. Every op prints as

    %r = fusion.OP %a, %b [dims = [..] | perm = [..] | ...] attr-dict : type(a), type(b) -> type(r)

from declarative formats on a few base classes defined here (unary, binary, ops with an axis
list). The ops themselves live by kind: `elementwise`, `shape`, `reductions`, `normalization`,
`contractions`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import AnyFloat, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.shaped_types import verify_shaped_type
from hir.dialects.syntax import BareWord, FloatLiteral, IntList, Scalar, array_values, int_array


def shape_of(value: SSAValue | Attribute) -> rules.Shape:
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return t.get_shape()


def element_type_of(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


class FusionOp(IRDLOperation, ABC):
    """
    Base of every fusion op: shared syntax, type checks and the axis-mapping interface.

    Verifies:
        The `#fusion.parallel` encoding of every operand and of the result fits its tensor (one
        parallel type per axis, a static `didx` extent is at least 1); the element types agree (by
        default every operand has the result's element type); the result shape is the one the
        operands imply (`?` matches any extent).
    """

    traits = traits_def(Pure())
    custom_directives = (IntList, BareWord, Scalar, FloatLiteral)

    @abstractmethod
    def axis_map(self) -> rules.AxisMap:
        """For each result axis, the `(operand index, operand axis)` pairs it comes from."""

    def extent_map(self) -> rules.AxisMap:
        """
        For each result axis, operand axes of the same extent: the axis map, plus the axes a
        loop cannot slice but whose extent the result keeps (a softmax's `dim`). Lowerings read
        a dynamic result extent from them.
        """
        return self.axis_map()

    def result_shape(self) -> rules.Shape:
        """The result shape the operands imply; ops whose result shape is free return it as is."""
        return shape_of(self.results[0])

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        """
        The properties of this op once a loop has removed `result_axis` from the result and
        `operand_axes[k]` from operand k (None: nothing removed). Only ops whose properties
        name axes (dims, perm) need to renumber them.
        """
        return dict(self.properties)

    def slice_sources(self, result: rules.Slicing) -> list[rules.Slicing | None] | None:
        """
        The slice of each operand that one loop iteration needs for the slice `result` of the
        result, when the axis map cannot say it (`fusion.reshape` splitting or merging the
        iterated axis); None: follow the axis map. The op then computes `result` from those
        slices as they are (no property renumbered). Raises `rules.SlicingError` when no slice
        of the operands gives it.
        """
        del result
        return None

    def verify_(self) -> None:
        # Operands and the result are tensors by their IRDL constraints (checked before this).
        for i, operand in enumerate(self.operands):
            verify_shaped_type(operand.type, f"operand #{i}")
        verify_shaped_type(self.results[0].type, "result")
        self.verify_element_types()
        expected = self.result_shape()
        if not rules.shapes_match(expected, shape_of(self.results[0])):
            raise VerifyException(
                f"result shape {rules.fmt(shape_of(self.results[0]))} does not match "
                f"the expected shape {rules.fmt(expected)}"
            )

    def verify_element_types(self) -> None:
        """By default every operand and the result share one element type."""
        result_elt = element_type_of(self.results[0])
        for i, operand in enumerate(self.operands):
            if element_type_of(operand) != result_elt:
                raise VerifyException(
                    f"operand #{i} has element type {element_type_of(operand)}, the result {result_elt}"
                )


# -- unary ops ------------------------------------------------------------------------------------


UNARY_FORMAT = "$x attr-dict `:` type($x) `->` type($result)"
BINARY_FORMAT = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"


def axes_format(name: str) -> str:
    """`%x NAME = [..] attr-dict : type(x) -> type(result)`"""
    return f"$x `{name}` `=` custom<IntList>(${name}) attr-dict `:` type($x) `->` type($result)"


def without_operand_axis(op: FusionOp, operand_axes: Sequence[int | None], name: str = "dims") -> dict[str, Attribute]:
    """
    `op`'s properties once a slice drops the operand axis `operand_axes[0]`, for ops whose axis
    list `name` names operand axes (reductions, flips, norms): the later ones renumbered.
    """
    removed = operand_axes[0]
    if removed is None:
        return dict(op.properties)
    dims = array_values(op.properties[name])  # type: ignore[arg-type]
    return dict(op.properties) | {name: int_array(d - (d > removed) for d in dims)}


class AxesFusionOp(FusionOp, ABC):
    """
    An op on one tensor with an axis-list property, written `%x NAME = [..]`: the subclass declares
    the property (`dims = prop_def(DenseArrayBase)`), names it in AXES and takes `axes_format(AXES)`.
    """

    AXES: ClassVar[str]

    x = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, x: SSAValue, axes: Sequence[int], result_type: Attribute):
        super().__init__(operands=[x], result_types=[result_type], properties={self.AXES: int_array(axes)})

    @property
    def axes(self) -> tuple[int, ...]:
        return array_values(self.properties[self.AXES])


class UnaryFusionOp(FusionOp, ABC):
    """
    An elementwise op on one tensor.

    Verifies:
        The result has the operand's shape.
    """

    x = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = UNARY_FORMAT

    def __init__(self, x: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[x], result_types=[result_type or x.type])

    def result_shape(self) -> rules.Shape:
        return shape_of(self.x)

    def axis_map(self) -> rules.AxisMap:
        return rules.elementwise_map(len(shape_of(self.x)), 1)


def verify_float(op: FusionOp) -> None:
    """Ops defined on floats only (exp, tanh, div): the element type is a float."""
    elt = element_type_of(op.results[0])
    if not isinstance(elt, AnyFloat):
        raise VerifyException(f"{op.name} needs a floating-point element type, got {elt}")


class FloatUnaryFusionOp(UnaryFusionOp, ABC):
    """
    An elementwise op defined on floats only.

    Verifies:
        The element type is a float (`f16`, `bf16`, `f32`, `f64`).
    """

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)


# -- binary elementwise ops -----------------------------------------------------------------------


class BinaryFusionOp(FusionOp, ABC):
    """
    An elementwise op on two tensors.

    Verifies:
        Both operands have the same shape (no implicit broadcasting: `fusion.broadcast` first),
        which is the result's.
    """

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = BINARY_FORMAT

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[lhs, rhs], result_types=[result_type or lhs.type])

    def result_shape(self) -> rules.Shape:
        a, b = shape_of(self.lhs), shape_of(self.rhs)
        if not rules.shapes_match(a, b):
            raise VerifyException(f"operands must have the same shape, got {rules.fmt(a)} and {rules.fmt(b)}")
        return a

    def axis_map(self) -> rules.AxisMap:
        return rules.elementwise_map(len(shape_of(self.lhs)), 2)
