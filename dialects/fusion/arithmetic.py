"""
More elementwise arithmetic: `fusion.minimum`, the rounding divisions `fusion.floordiv` and
`fusion.truncdiv` (integer or float, torch's `rounding_mode`), `fusion.remainder` (Python's `%`,
the sign of the divisor) and `fusion.log1p`. Same forms as the ops of `elementwise`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType
from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from hir.dialects.fusion.ops import BinaryFusionOp, FloatUnaryFusionOp, element_type_of


@irdl_op_definition
class MinimumOp(BinaryFusionOp):
    """
    `min(lhs, rhs)`, elementwise (`torch.minimum`: a NaN operand gives NaN).

    Example:
        %c = fusion.minimum %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.minimum"


class _NumberBinaryOp(BinaryFusionOp):
    """
    An elementwise op on numbers.

    Verifies:
        The element type is a number type (not `i1`).
    """

    def verify_element_types(self) -> None:
        super().verify_element_types()
        if element_type_of(self.result) == IntegerType(1):
            raise VerifyException(f"{self.name} needs a number type, not i1")


@irdl_op_definition
class FloorDivOp(_NumberBinaryOp):
    """
    `torch.div(lhs, rhs, rounding_mode="floor")` (`lhs // rhs`), elementwise, on integers or
    floats. An integer division by zero is torch's error at run time.

    Example:
        %q = fusion.floordiv %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
    """

    name = "fusion.floordiv"


@irdl_op_definition
class TruncDivOp(_NumberBinaryOp):
    """
    `torch.div(lhs, rhs, rounding_mode="trunc")`, elementwise, on integers or floats (the quotient
    rounded toward zero).

    Example:
        %q = fusion.truncdiv %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.truncdiv"


@irdl_op_definition
class RemainderOp(_NumberBinaryOp):
    """
    `torch.remainder(lhs, rhs)` (Python's `lhs % rhs`: the result has the divisor's sign), elementwise.

    Example:
        %r = fusion.remainder %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
    """

    name = "fusion.remainder"


@irdl_op_definition
class Log1pOp(FloatUnaryFusionOp):
    """
    `log(1 + x)`, elementwise (`torch.log1p`: exact for small x, where `log(1 + x)` rounds to 0).

    Example:
        %y = fusion.log1p %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.log1p"
