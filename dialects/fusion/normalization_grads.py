"""
The input gradients of the norms: `fusion.layer_norm_backward` and `fusion.rms_norm_backward`
(what a training step's backward records for `F.layer_norm` and `F.rms_norm`). One op each, so
that the runtime runs torch's fused norm backward kernel, where the decomposed formula is about
a dozen elementwise ops and reductions, in f32 for a bf16 norm. The gradients of the weight and
the bias are sums over the rows that the frontend writes as such (`sum(grad * norm(x))`,
`sum(grad)`): on a mesh, their sum over the devices is an all-reduce of its own.

The normalized axes map to nothing, as for the norms: a loop can slice only the leading axes.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, TensorType, f64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.normalization import verify_norm
from hir.dialects.fusion.ops import FusionOp, shape_of, verify_float, without_operand_axis
from hir.dialects.syntax import array_values, int_array


class NormBackwardFusionOp(FusionOp, ABC):
    """
    The gradient with respect to `x` of a norm over the trailing axes `dims` (with an optional
    elementwise weight), given the gradient `grad` of the norm's result.

    Verifies:
        `grad` and `x` have one shape, the result's; `dims` are their trailing axes, in order;
        `eps` is finite and >= 0; the weight has the shape of the normalized axes; one float
        element type.
    """

    grad = operand_def(TensorType)
    x = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    dims = prop_def(DenseArrayBase)
    eps = prop_def(FloatAttr)
    result = result_def(TensorType)

    assembly_format = (
        "$grad `,` $x (`,` $weight^)? `dims` `=` custom<IntList>($dims) `eps` `=` custom<FloatLiteral>($eps) "
        "attr-dict `:` type($grad) `,` type($x) (`,` type($weight)^)? `->` type($result)"
    )

    def __init__(
        self,
        grad: SSAValue,
        x: SSAValue,
        weight: SSAValue | None,
        dims: Sequence[int],
        eps: float,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            operands=[grad, x, [weight] if weight else []],
            result_types=[result_type or x.type],
            properties={"dims": int_array(dims), "eps": FloatAttr(eps, f64)},
        )

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        if not rules.shapes_match(shape_of(self.grad), shape):
            raise VerifyException(
                f"the gradient {rules.fmt(shape_of(self.grad))} and x {rules.fmt(shape)} must have one shape"
            )
        affine = [("weight", self.weight)] if self.weight is not None else []
        verify_norm(shape, array_values(self.dims), self.eps.value.data, affine)
        return shape

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)

    def axis_map(self) -> rules.AxisMap:
        dims = array_values(self.dims)
        return tuple(() if i in dims else ((0, i), (1, i)) for i in range(len(shape_of(self.x))))

    def extent_map(self) -> rules.AxisMap:
        return rules.elementwise_map(len(shape_of(self.x)), 2)

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        return without_operand_axis(self, operand_axes)


@irdl_op_definition
class LayerNormBackwardOp(NormBackwardFusionOp):
    """
    The gradient with respect to `x` of `fusion.layer_norm %x, %weight, %bias dims eps` (the bias
    does not enter it): torch's `native_layer_norm_backward`'s first result.

    Example:
        %dx = fusion.layer_norm_backward %dy, %x, %w dims = [1] eps = 1.000000e-05 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    """  # noqa: E501 (MLIR as hir-opt prints it)

    name = "fusion.layer_norm_backward"


@irdl_op_definition
class RmsNormBackwardOp(NormBackwardFusionOp):
    """
    The gradient with respect to `x` of `fusion.rms_norm %x, %weight dims eps`.

    Example:
        %dx = fusion.rms_norm_backward %dy, %x dims = [1] eps = 1.000000e-06 : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
    """  # noqa: E501 (MLIR as hir-opt prints it)

    name = "fusion.rms_norm_backward"
