"""Reductions: `fusion.sum`, `fusion.max`, `fusion.min`, `fusion.mean` over `dims` (dropped from the result)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import AxesFusionOp, axes_format, shape_of, verify_float, without_operand_axis
from hir.dialects.syntax import array_values


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
        return without_operand_axis(self, operand_axes)


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


@irdl_op_definition
class MeanOp(ReductionFusionOp):
    """
    Mean over the axes `dims` (the result drops them), as `torch.mean(x, dims)`.

    Verifies:
        The element type is a float.

    Example:
        %m = fusion.mean %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
    """

    name = "fusion.mean"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)
