"""
Normalizations: `fusion.softmax`, `fusion.layer_norm`, `fusion.rms_norm`. Ops rather than
decompositions, so that torch's numerically careful kernels run them and the IR reads as the
model does; `fusion-segment` fuses them with their elementwise neighbours like any other op.

The normalized axes map to nothing in the axis maps: each result element reads the whole axis,
so a stream loop can slice only the other (leading) axes, and refuses to slice these.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Sequence

from xdsl.dialects.builtin import I64, DenseArrayBase, FloatAttr, IntegerAttr, TensorType, f64, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import FusionOp, UnaryFusionOp, shape_of, verify_float, without_operand_axis
from hir.dialects.syntax import array_values, int_array


@irdl_op_definition
class SoftmaxOp(UnaryFusionOp):
    """
    `torch.softmax(x, dim)`: `exp(x - max) / sum(exp(x - max))` along `dim`.

    Verifies:
        `dim` is an axis of the operand; the element type is a float.

    Example:
        %y = fusion.softmax %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.softmax"

    dim = prop_def(IntegerAttr[I64])
    assembly_format = "$x `dim` `=` $dim attr-dict `:` type($x) `->` type($result)"

    def __init__(self, x: SSAValue, dim: int, result_type: Attribute | None = None):
        FusionOp.__init__(
            self, operands=[x], result_types=[result_type or x.type], properties={"dim": IntegerAttr(dim, i64)}
        )

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        rules.check_dims([self.dim.value.data], len(shape), "dim")
        return shape

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)

    def axis_map(self) -> rules.AxisMap:
        return rules.normalize_map(len(shape_of(self.x)), 1, [self.dim.value.data])

    def extent_map(self) -> rules.AxisMap:
        return rules.elementwise_map(len(shape_of(self.x)), 1)

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        removed, dim = operand_axes[0], self.dim.value.data
        if removed is None or removed == dim:
            return dict(self.properties)
        return {"dim": IntegerAttr(dim - (removed < dim), i64)}


def verify_norm(shape: rules.Shape, dims: Sequence[int], eps: float, affine: Sequence[tuple[str, SSAValue]]) -> None:
    """A norm over `dims` of a tensor of `shape`: trailing dims, a finite eps >= 0, weights of the normalized axes."""
    rules.check_trailing_dims(dims, len(shape), "dims")
    if not (math.isfinite(eps) and eps >= 0):
        raise VerifyException(f"eps must be finite and >= 0, got {eps}")
    normalized = tuple(shape[d] for d in dims)
    for name, value in affine:
        if not rules.shapes_match(shape_of(value), normalized):
            raise VerifyException(
                f"{name} has shape {rules.fmt(shape_of(value))}, the normalized axes {rules.fmt(normalized)}"
            )


class NormFusionOp(FusionOp, ABC):
    """
    A normalization over the trailing axes `dims` with an optional elementwise weight (and bias),
    whose shape is those axes' extents.

    Verifies:
        `dims` are the trailing axes of `x`, in order; `eps` is finite and >= 0; the weight and
        bias have the shape of the normalized axes and the result's element type, which is a
        float; the result has the shape of `x`.
    """

    # The subclasses declare the operands, `x`, an optional `weight`, ..., so that IRDL keeps their order.
    dims = prop_def(DenseArrayBase)
    eps = prop_def(FloatAttr)
    result = result_def(TensorType)

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        verify_norm(shape, array_values(self.dims), self.eps.value.data, self.affine_operands())
        return shape

    def affine_operands(self) -> list[tuple[str, SSAValue]]:
        return [("weight", self.weight)] if self.weight is not None else []

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)

    def axis_map(self) -> rules.AxisMap:
        return rules.normalize_map(len(shape_of(self.x)), len(self.operands), array_values(self.dims))

    def extent_map(self) -> rules.AxisMap:
        return rules.elementwise_map(len(shape_of(self.x)), 1)

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        return without_operand_axis(self, operand_axes)


@irdl_op_definition
class LayerNormOp(NormFusionOp):
    """
    `torch.nn.functional.layer_norm(x, normalized_shape, weight, bias, eps)` over the trailing
    axes `dims`: `(x - mean) / sqrt(var + eps) * weight + bias` (biased variance). Written
    `fusion.layer_norm %x[, %weight[, %bias]] dims = [..] eps = ..`: a bias needs a weight (pass a
    `fusion.full` of ones for a bias alone).

    Verifies:
        A bias comes with a weight, and has its shape.

    Example:
        %y = fusion.layer_norm %x, %w dims = [1] eps = 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.layer_norm"

    x = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$x (`,` $weight^ (`,` $bias^)?)? `dims` `=` custom<IntList>($dims) `eps` `=` custom<FloatLiteral>($eps) "
        "attr-dict `:` type($x) (`,` type($weight)^ (`,` type($bias)^)?)? `->` type($result)"
    )

    def __init__(
        self,
        x: SSAValue,
        weight: SSAValue | None,
        bias: SSAValue | None,
        dims: Sequence[int],
        eps: float,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            operands=[x, [weight] if weight else [], [bias] if bias else []],
            result_types=[result_type or x.type],
            properties={"dims": int_array(dims), "eps": FloatAttr(eps, f64)},
        )

    def affine_operands(self) -> list[tuple[str, SSAValue]]:
        if self.bias is not None and self.weight is None:
            raise VerifyException("a bias needs a weight (pass a fusion.full of ones)")
        return super().affine_operands() + ([("bias", self.bias)] if self.bias is not None else [])


@irdl_op_definition
class RmsNormOp(NormFusionOp):
    """
    `torch.nn.functional.rms_norm(x, normalized_shape, weight, eps)` over the trailing axes
    `dims`: `x / sqrt(mean(x^2) + eps) * weight`.

    Example:
        %y = fusion.rms_norm %x, %w dims = [1] eps = 1.000000e-06 : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
    """

    name = "fusion.rms_norm"

    x = operand_def(TensorType)
    weight = opt_operand_def(TensorType)

    assembly_format = (
        "$x (`,` $weight^)? `dims` `=` custom<IntList>($dims) `eps` `=` custom<FloatLiteral>($eps) "
        "attr-dict `:` type($x) (`,` type($weight)^)? `->` type($result)"
    )

    def __init__(
        self,
        x: SSAValue,
        weight: SSAValue | None,
        dims: Sequence[int],
        eps: float,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            operands=[x, [weight] if weight else []],
            result_types=[result_type or x.type],
            properties={"dims": int_array(dims), "eps": FloatAttr(eps, f64)},
        )
