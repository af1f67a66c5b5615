"""
Ops along one axis that read all of it: `fusion.cumsum` and `fusion.cumprod` (prefix sums and
products), `fusion.prod` (the product, dropping the axis), `fusion.argmax` and `fusion.argmin`
(the index of the extreme element), `fusion.topk` (the indices of the k largest or smallest).
Index results are `i64`, as torch's. Values at those indices are a `fusion.gather` of them (the
frontend builds `max(dim)` and `topk`'s values so).

Axis `dim` maps to nothing in the axis maps: every result element reads the whole axis, so a loop
can slice only the other axes.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, IntegerAttr, IntegerType, StringAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import FusionOp, element_type_of, shape_of

TOPK_ORDERS = ("largest", "smallest")


def _dim(op: FusionOp) -> int:
    return op.dim.value.data  # type: ignore[attr-defined]


def _without_operand_axis(op: FusionOp, operand_axes: Sequence[int | None]) -> dict[str, Attribute]:
    removed, dim = operand_axes[0], _dim(op)
    if removed is None or removed == dim:
        return dict(op.properties)
    return {**op.properties, "dim": IntegerAttr(dim - (removed < dim), i64)}


def _verify_i64(op: FusionOp) -> None:
    if element_type_of(op.results[0]) != IntegerType(64):
        raise VerifyException(
            f"the result holds indices: its element type must be i64, got {element_type_of(op.results[0])}"
        )
    if element_type_of(op.operands[0]) == IntegerType(1):
        raise VerifyException("the operand must be a number type, not i1")


class _AlongDim(FusionOp):
    x = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = "$x `dim` `=` $dim attr-dict `:` type($x) `->` type($result)"

    def __init__(self, x: SSAValue, dim: int, result_type: Attribute):
        FusionOp.__init__(self, operands=[x], result_types=[result_type], properties={"dim": IntegerAttr(dim, i64)})

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        return _without_operand_axis(self, operand_axes)


class _Scan(_AlongDim):
    """
    A running reduction along `dim`: `dim` stays whole in a slice.

    Verifies:
        `dim` is an axis; the result has the operand's shape and element type.
    """

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        rules.check_dims([_dim(self)], len(shape), "dim")
        return shape

    def axis_map(self) -> rules.AxisMap:
        return rules.normalize_map(len(shape_of(self.x)), 1, [_dim(self)])

    def extent_map(self) -> rules.AxisMap:
        return rules.elementwise_map(len(shape_of(self.x)), 1)


@irdl_op_definition
class CumsumOp(_Scan):
    """
    `torch.cumsum(x, dim)`: element i along `dim` is the sum of elements 0..i.

    Example:
        %s = fusion.cumsum %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.cumsum"


@irdl_op_definition
class CumprodOp(_Scan):
    """
    `torch.cumprod(x, dim)`: element i along `dim` is the product of elements 0..i.

    Example:
        %p = fusion.cumprod %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.cumprod"


class _Reduction(_AlongDim):
    """
    A reduction along `dim`.

    Verifies:
        `dim` is an axis; the result has the operand's shape without `dim`.
    """

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        rules.check_dims([_dim(self)], len(shape), "dim")
        return rules.reduce_shape(shape, [_dim(self)])

    def axis_map(self) -> rules.AxisMap:
        return rules.reduce_map(len(shape_of(self.x)), [_dim(self)])


@irdl_op_definition
class ProdOp(_Reduction):
    """
    `torch.prod(x, dim)`: the product along `dim` (the result drops it).

    Verifies:
        the result has the operand's element type.

    Example:
        %p = fusion.prod %x dim = 1 : tensor<4x8xf32> -> tensor<4xf32>
    """

    name = "fusion.prod"


class ArgReductionFusionOp(_Reduction):
    """
    The index along `dim` of the extreme element (the first one on ties); the result drops `dim`.

    Verifies:
        the result is `i64`.
    """

    def verify_element_types(self) -> None:
        _verify_i64(self)


@irdl_op_definition
class ArgMaxOp(ArgReductionFusionOp):
    """
    `torch.argmax(x, dim)`: the index of the largest element along `dim` (the result drops it).

    Example:
        %i = fusion.argmax %x dim = 1 : tensor<4x8xf32> -> tensor<4xi64>
    """

    name = "fusion.argmax"


@irdl_op_definition
class ArgMinOp(ArgReductionFusionOp):
    """
    `torch.argmin(x, dim)`: the index of the smallest element along `dim` (the result drops it).

    Example:
        %i = fusion.argmin %x dim = 0 : tensor<4x8xf32> -> tensor<8xi64>
    """

    name = "fusion.argmin"


@irdl_op_definition
class TopkOp(FusionOp):
    """
    `torch.topk(x, k, dim, largest)[1]`: the indices along `dim` of the k largest (`largest`) or
    smallest (`smallest`) elements, in that order (torch's `sorted=True`); the result has extent
    k on `dim`. `torch.sort` is its k = extent form.

    Verifies:
        `dim` is an axis; the order is `largest` or `smallest`; 0 <= k <= the extent of `dim`;
        the result is `i64` of the operand's shape with k on `dim`.

    Example:
        %i = fusion.topk largest, %x k = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x2xi64>
    """

    name = "fusion.topk"

    x = operand_def(TensorType)
    order = prop_def(StringAttr)
    k = prop_def(IntegerAttr[I64])
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = (
        "custom<BareWord>($order) `,` $x `k` `=` $k `dim` `=` $dim attr-dict `:` type($x) `->` type($result)"
    )

    def __init__(self, x: SSAValue, k: int, dim: int, largest: bool, result_type: Attribute):
        FusionOp.__init__(
            self,
            operands=[x],
            result_types=[result_type],
            properties={
                "order": StringAttr(TOPK_ORDERS[0] if largest else TOPK_ORDERS[1]),
                "k": IntegerAttr(k, i64),
                "dim": IntegerAttr(dim, i64),
            },
        )

    @property
    def largest(self) -> bool:
        return self.order.data == TOPK_ORDERS[0]

    def result_shape(self) -> rules.Shape:
        shape, dim, k = list(shape_of(self.x)), _dim(self), self.k.value.data
        rules.check_dims([dim], len(shape), "dim")
        if not 0 <= k <= shape[dim] and shape[dim] >= 0:
            raise VerifyException(f"k = {k} is out of range for an axis of extent {shape[dim]}")
        shape[dim] = k
        return tuple(shape)

    def verify_element_types(self) -> None:
        if self.order.data not in TOPK_ORDERS:
            raise VerifyException(f"the order must be one of {', '.join(TOPK_ORDERS)}, got {self.order.data}")
        _verify_i64(self)

    def axis_map(self) -> rules.AxisMap:
        return rules.normalize_map(len(shape_of(self.x)), 1, [_dim(self)])

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        return _without_operand_axis(self, operand_axes)
