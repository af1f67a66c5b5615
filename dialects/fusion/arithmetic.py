"""
More elementwise arithmetic: `fusion.minimum`, the rounding divisions `fusion.floordiv` and
`fusion.truncdiv` (integer or float, torch's `rounding_mode`), `fusion.remainder` (Python's `%`,
the sign of the divisor), `fusion.fmod` (C's, the sign of the dividend), the bitwise
`fusion.bitand`, `fusion.bitor`, `fusion.bitxor` of integers, `fusion.log1p`, `fusion.expm1`, the
roundings `fusion.floor`, `fusion.ceil`, `fusion.round`, `fusion.trunc`, and `fusion.sign`. Same
forms as the ops of `elementwise`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType
from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from hir.dialects.fusion.ops import BinaryFusionOp, FloatUnaryFusionOp, UnaryFusionOp, element_type_of


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


class _BitwiseOp(BinaryFusionOp):
    """
    A bitwise op on integers, in two's complement (`i1` too: booleans' and, or, xor).

    Verifies:
        The element type is an integer type.
    """

    def verify_element_types(self) -> None:
        super().verify_element_types()
        if not isinstance(element_type_of(self.result), IntegerType):
            raise VerifyException(f"{self.name} needs an integer type, got {element_type_of(self.result)}")


@irdl_op_definition
class BitAndOp(_BitwiseOp):
    """
    `torch.bitwise_and(lhs, rhs)` (`lhs & rhs`), elementwise, on integers.

    Example:
        %c = fusion.bitand %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
    """

    name = "fusion.bitand"


@irdl_op_definition
class BitOrOp(_BitwiseOp):
    """
    `torch.bitwise_or(lhs, rhs)` (`lhs | rhs`), elementwise, on integers.

    Example:
        %c = fusion.bitor %a, %b : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi32>
    """

    name = "fusion.bitor"


@irdl_op_definition
class BitXorOp(_BitwiseOp):
    """
    `torch.bitwise_xor(lhs, rhs)` (`lhs ^ rhs`), elementwise, on integers (a hashed feature's
    mixing: `(ids * prime) ^ salt`).

    Example:
        %c = fusion.bitxor %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
    """

    name = "fusion.bitxor"


@irdl_op_definition
class Log1pOp(FloatUnaryFusionOp):
    """
    `log(1 + x)`, elementwise (`torch.log1p`: exact for small x, where `log(1 + x)` rounds to 0).

    Example:
        %y = fusion.log1p %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.log1p"


@irdl_op_definition
class FmodOp(_NumberBinaryOp):
    """
    `torch.fmod(lhs, rhs)`: the remainder of the division rounded toward zero (the sign of the
    dividend, C's `fmod`), elementwise.

    Example:
        %r = fusion.fmod %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.fmod"


@irdl_op_definition
class Expm1Op(FloatUnaryFusionOp):
    """
    `exp(x) - 1`, elementwise (`torch.expm1`: exact for small x, where `exp(x) - 1` rounds to 0).

    Example:
        %y = fusion.expm1 %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.expm1"


@irdl_op_definition
class FloorOp(FloatUnaryFusionOp):
    """
    `torch.floor(x)`: the largest integer not above x, elementwise.

    Example:
        %y = fusion.floor %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.floor"


@irdl_op_definition
class CeilOp(FloatUnaryFusionOp):
    """
    `torch.ceil(x)`: the smallest integer not below x, elementwise.

    Example:
        %y = fusion.ceil %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.ceil"


@irdl_op_definition
class RoundOp(FloatUnaryFusionOp):
    """
    `torch.round(x)`: the nearest integer, halves to even, elementwise.

    Example:
        %y = fusion.round %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.round"


@irdl_op_definition
class TruncOp(FloatUnaryFusionOp):
    """
    `torch.trunc(x)`: x rounded toward zero, elementwise.

    Example:
        %y = fusion.trunc %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.trunc"


@irdl_op_definition
class SignOp(UnaryFusionOp):
    """
    `torch.sign(x)`: -1, 0 or 1 by the sign of x (0 for zeros; NaN for NaN), elementwise.

    Verifies:
        The element type is a number type (not `i1`).

    Example:
        %y = fusion.sign %x : tensor<4x8xi32> -> tensor<4x8xi32>
    """

    name = "fusion.sign"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        if element_type_of(self.result) == IntegerType(1):
            raise VerifyException("fusion.sign needs a number type, not i1")
