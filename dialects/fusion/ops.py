"""
The fusion ops: each computes one tensor with torch semantics (DESIGN contract: names, operands,
attributes) and exposes `axis_map()` (see `shape_rules`): for each result axis, the operand axes
it comes from. Every op prints as

    %r = fusion.OP %a, %b [dims = [..] | perm = [..]] attr-dict : type(a), type(b) -> type(r)

from declarative formats on a few base classes: unary, binary, ops with an axis list (dims,
perm), matmul, linear with an optional bias.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import AnyFloat, DenseArrayBase, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.shaped_types import verify_shaped_type
from hir.dialects.syntax import IntList, array_values, int_array


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
        parallel type per axis, a `didx` axis's extent equals the mesh size, `stream(N)` divides
        its axis); the element types agree (by default every operand has the result's element
        type); the result shape is the one the operands imply (`?` matches any extent).
    """

    traits = traits_def(Pure())
    custom_directives = (IntList,)

    @abstractmethod
    def axis_map(self) -> rules.AxisMap:
        """For each result axis, the `(operand index, operand axis)` pairs it comes from."""

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


@irdl_op_definition
class SetOp(UnaryFusionOp):
    """
    A copy; when input and result sharding differ it is a *resharding* (a communication).

    Example:
        %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    """

    name = "fusion.set"


@irdl_op_definition
class NegOp(UnaryFusionOp):
    """
    `-x`, elementwise.

    Example:
        %y = fusion.neg %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.neg"


@irdl_op_definition
class AbsOp(UnaryFusionOp):
    """
    `abs(x)`, elementwise.

    Example:
        %y = fusion.abs %x : tensor<4x8xi32> -> tensor<4x8xi32>
    """

    name = "fusion.abs"


@irdl_op_definition
class ReluOp(UnaryFusionOp):
    """
    `relu(x)` (`max(x, 0)`), elementwise.

    Example:
        %y = fusion.relu %x : tensor<4x8xbf16> -> tensor<4x8xbf16>
    """

    name = "fusion.relu"


@irdl_op_definition
class ExpOp(FloatUnaryFusionOp):
    """
    `exp(x)`, elementwise.

    Example:
        %y = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.exp"


@irdl_op_definition
class TanhOp(FloatUnaryFusionOp):
    """
    `tanh(x)`, elementwise.

    Example:
        %y = fusion.tanh %x : tensor<4x8xf16> -> tensor<4x8xf16>
    """

    name = "fusion.tanh"


@irdl_op_definition
class CastOp(UnaryFusionOp):
    """
    Element-type conversion (the result type says to what), as `x.to(dtype)`.

    Verifies:
        Nothing about the element types: any element type converts to any other.

    Example:
        %y = fusion.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    """

    name = "fusion.cast"

    def verify_element_types(self) -> None:
        pass


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


@irdl_op_definition
class AddOp(BinaryFusionOp):
    """
    `lhs + rhs`, elementwise.

    Example:
        %c = fusion.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.add"


@irdl_op_definition
class SubOp(BinaryFusionOp):
    """
    `lhs - rhs`, elementwise.

    Example:
        %c = fusion.sub %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
    """

    name = "fusion.sub"


@irdl_op_definition
class MulOp(BinaryFusionOp):
    """
    `lhs * rhs`, elementwise.

    Example:
        %c = fusion.mul %a, %b : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    """

    name = "fusion.mul"


@irdl_op_definition
class DivOp(BinaryFusionOp):
    """
    `lhs / rhs`, elementwise (true division).

    Verifies:
        The element type is a float.

    Example:
        %c = fusion.div %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.div"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)


@irdl_op_definition
class MaximumOp(BinaryFusionOp):
    """
    `max(lhs, rhs)`, elementwise.

    Example:
        %c = fusion.maximum %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.maximum"


# -- shape ops ------------------------------------------------------------------------------------


@irdl_op_definition
class ExpandOp(AxesFusionOp):
    """
    `fusion.broadcast`: unsqueeze + expand, `dims` are the new axes of the result. A shape op on
    one device (no communication: the collective broadcast is `hir.broadcast`).

    Verifies:
        `dims` are distinct axes of the result, and the result without them has the operand's
        shape.

    Example:
        %y = fusion.broadcast %x dims = [0] : tensor<8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.broadcast"
    AXES: ClassVar[str] = "dims"

    dims = prop_def(DenseArrayBase)
    assembly_format = axes_format("dims")

    def result_shape(self) -> rules.Shape:
        result = shape_of(self.result)
        dims = array_values(self.dims)
        rules.check_dims(dims, len(result), "broadcast dims")
        kept = rules.reduce_shape(result, dims)
        if not rules.shapes_match(kept, shape_of(self.x)):
            raise VerifyException(
                f"broadcast of {rules.fmt(shape_of(self.x))} with new dims {list(dims)} "
                f"cannot produce {rules.fmt(result)}"
            )
        return result

    def axis_map(self) -> rules.AxisMap:
        return rules.broadcast_map(len(shape_of(self.result)), array_values(self.dims))

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        if result_axis is None:
            return dict(self.properties)
        return {"dims": int_array(d - (d > result_axis) for d in array_values(self.dims) if d != result_axis)}


@irdl_op_definition
class PermuteOp(AxesFusionOp):
    """
    `x.permute(perm)`: result axis i is operand axis perm[i].

    Verifies:
        `perm` is a permutation of the operand's axes; the result's shape is the operand's,
        permuted.

    Example:
        %t = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    """

    name = "fusion.permute"
    AXES: ClassVar[str] = "perm"

    perm = prop_def(DenseArrayBase)
    assembly_format = axes_format("perm")

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        perm = array_values(self.perm)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"perm {list(perm)} is not a permutation of the {len(shape)} operand axes")
        return tuple(shape[p] for p in perm)

    def axis_map(self) -> rules.AxisMap:
        return rules.permute_map(array_values(self.perm))

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        if result_axis is None:
            return dict(self.properties)
        perm = array_values(self.perm)
        removed = perm[result_axis]
        return {"perm": int_array(p - (p > removed) for i, p in enumerate(perm) if i != result_axis)}


# -- reductions -----------------------------------------------------------------------------------


class ReductionFusionOp(AxesFusionOp, ABC):
    """
    Reduces the axes `dims`; the result drops them.

    Verifies:
        `dims` names at least one axis, each axis of the operand at most once; the result's shape
        is the operand's without them.
    """

    AXES: ClassVar[str] = "dims"

    dims = prop_def(DenseArrayBase)
    assembly_format = axes_format("dims")

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        dims = array_values(self.dims)
        if not dims:
            raise VerifyException("dims must name at least one axis to reduce")
        rules.check_dims(dims, len(shape), "dims")
        return rules.reduce_shape(shape, dims)

    def axis_map(self) -> rules.AxisMap:
        return rules.reduce_map(len(shape_of(self.x)), array_values(self.dims))

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        removed = operand_axes[0]
        if removed is None:
            return dict(self.properties)
        return {"dims": int_array(d - (d > removed) for d in array_values(self.dims))}


@irdl_op_definition
class SumOp(ReductionFusionOp):
    """
    Sum over the axes `dims` (the result drops them).

    Example:
        %s = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
    """

    name = "fusion.sum"


@irdl_op_definition
class MaxOp(ReductionFusionOp):
    """
    Maximum over the axes `dims` (the result drops them).

    Example:
        %m = fusion.max %x dims = [0, 2] : tensor<2x4x8xf32> -> tensor<4xf32>
    """

    name = "fusion.max"


@irdl_op_definition
class MinOp(ReductionFusionOp):
    """
    Minimum over the axes `dims` (the result drops them).

    Example:
        %m = fusion.min %x dims = [1] : tensor<4x8xi32> -> tensor<4xi32>
    """

    name = "fusion.min"


# -- contractions ---------------------------------------------------------------------------------


@irdl_op_definition
class MatmulOp(FusionOp):
    """
    `torch.matmul` (1-D promotion, batch broadcasting).

    Verifies:
        Both operands have rank >= 1 and the same contraction extent (the last axis of `a`, the
        first of a 1-D `b` or the second to last of `b`); batch axes broadcast; the result's
        shape is torch.matmul's: `[batch..., M, N]`, without `M` for a 1-D `a` and without `N`
        for a 1-D `b`.

    Example:
        %c = fusion.matmul %a, %b : tensor<64x128xbf16>, tensor<128x32xbf16> -> tensor<64x32xbf16>
    """

    name = "fusion.matmul"

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)"

    def __init__(self, a: SSAValue, b: SSAValue, result_type: Attribute):
        super().__init__(operands=[a, b], result_types=[result_type])

    def result_shape(self) -> rules.Shape:
        return rules.matmul_rule(shape_of(self.a), shape_of(self.b))[0]

    def axis_map(self) -> rules.AxisMap:
        return rules.matmul_rule(shape_of(self.a), shape_of(self.b))[1]


@irdl_op_definition
class LinearOp(FusionOp):
    """
    `torch.nn.functional.linear(x, w, bias)`: `x @ w.T + bias`.

    Verifies:
        `x` has rank >= 1; `w` is `[N, K]` or `[K]`, with `K` the last extent of `x`; `bias`, when
        present, is `[N]` or a scalar (with a 1-D `w`, a scalar only); the result is
        `[x's leading axes..., N]` (no `N` for a 1-D `w`).

    Example:
        %y = fusion.linear %x, %w, %bias : tensor<8x64xf32>, tensor<32x64xf32>, tensor<32xf32> -> tensor<8x32xf32>
    """

    name = "fusion.linear"

    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$x `,` $w (`,` $bias^)? attr-dict `:` type($x) `,` type($w) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(self, x: SSAValue, w: SSAValue, bias: SSAValue | None, result_type: Attribute):
        super().__init__(operands=[x, w, [bias] if bias else []], result_types=[result_type])

    def _rule(self) -> tuple[rules.Shape, rules.AxisMap]:
        bias = shape_of(self.bias) if self.bias is not None else None
        return rules.linear_rule(shape_of(self.x), shape_of(self.w), bias)

    def result_shape(self) -> rules.Shape:
        return self._rule()[0]

    def axis_map(self) -> rules.AxisMap:
        return self._rule()[1]
