"""
`fusion.full`: a tensor with every element one number; a scalar is its 0-d form.

Scalars are tensors, not attributes on the elementwise ops: `x * 0.5` is a 0-d `fusion.full`,
a `fusion.broadcast` to x's shape (a view at run time: no copy) and `fusion.mul`. So each
elementwise op keeps one form, one verifier and one axis map; equal constants fold with `cse`;
and the IR stays the dataflow MLIR's tensor dialects write (`arith.constant dense<..>` splats,
`linalg.fill`, `tosa.const` with broadcasting).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import FusionOp, element_type_of, shape_of

FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38}
"""The largest finite value of each float type narrower than f64 (f64 literals parse finite or not at all)."""


@irdl_op_definition
class FullOp(FusionOp):
    """
    `torch.full(shape, value, dtype)`: the result type gives the shape and element type; `value`
    is written as a number (`2`, `-1`, `5.000000e-01`, `-inf`, `nan`; `true`/`false` for `i1`).

    Axis map: every result axis is made, not read (maps to nothing), so a stream loop slices it
    freely: each iteration makes its own slice.

    Verifies:
        The shape is static; an integer element type gets an integer value within its range
        (`i1`: 0 or 1, `ui8`: 0 to 255), a float type a number it holds (or `inf`, `-inf`, `nan`).

    Example:
        %c = fusion.full 5.000000e-01 : tensor<4x8xf32>
    """

    name = "fusion.full"

    value = prop_def(IntegerAttr | FloatAttr)
    result = result_def(TensorType)

    assembly_format = "custom<Scalar>($value) attr-dict `:` type($result)"

    def __init__(self, value: int | float, result_type: Attribute):
        attr = parse_value(value)
        super().__init__(result_types=[result_type], properties={"value": attr})

    @property
    def number(self) -> int | float:
        return self.value.value.data

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.result)
        if DYNAMIC_INDEX in shape:
            raise VerifyException(f"the shape {rules.fmt(shape)} must be static")
        return shape

    def verify_element_types(self) -> None:
        elt = element_type_of(self.result)
        if isinstance(elt, AnyFloat):
            largest = FLOAT_MAX.get(elt.name)
            if largest is not None and math.isfinite(self.number) and abs(self.number) > largest:
                raise VerifyException(f"value {self.number} overflows {elt} (largest finite {largest:.6g})")
            return
        assert isinstance(elt, IntegerType)
        if isinstance(self.value, FloatAttr):
            raise VerifyException(f"an {elt} tensor needs an integer value, got {self.number}")
        width = elt.width.data
        if width == 1:
            low, high = 0, 1
        elif elt.signedness.data == Signedness.UNSIGNED:
            low, high = 0, 2**width - 1
        else:
            low, high = -(2 ** (width - 1)), 2 ** (width - 1) - 1
        if not low <= self.number <= high:
            raise VerifyException(f"value {self.number} is out of range for {elt} ([{low}, {high}])")

    def axis_map(self) -> rules.AxisMap:
        return rules.generated_map(len(shape_of(self.result)))


def parse_value(value: int | float) -> IntegerAttr | FloatAttr:
    """`value` as the property holds it: an i64 integer or an f64 float."""
    if isinstance(value, bool | int):
        return IntegerAttr(int(value), i64)
    return FloatAttr(float(value), f64)
