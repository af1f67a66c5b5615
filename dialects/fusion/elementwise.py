"""
Elementwise fusion ops: unary (`fusion.neg`, `fusion.exp`, activations, `fusion.cast`, ...),
binary (`fusion.add`, ..., `fusion.pow`), `fusion.compare` (-> i1) and `fusion.where`. Operands
have one shape (no implicit broadcasting: `fusion.broadcast` first); a scalar is a 0-d
`fusion.full` broadcast to the shape (see `constants`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType, StringAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import (
    BinaryFusionOp,
    FloatUnaryFusionOp,
    FusionOp,
    UnaryFusionOp,
    element_type_of,
    shape_of,
    verify_float,
)


def verify_not_bool(op: FusionOp) -> None:
    """An op that torch refuses on bool tensors is refused on `i1` when verified, not when it runs."""
    if element_type_of(op.results[0]) == IntegerType(1):
        raise VerifyException(f"{op.name} needs a number type, not i1")


# -- unary ----------------------------------------------------------------------------------------


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

    Verifies:
        The element type is a number type (not `i1`): torch has no bool form of it.

    Example:
        %y = fusion.neg %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.neg"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_not_bool(self)


@irdl_op_definition
class AbsOp(UnaryFusionOp):
    """
    `abs(x)`, elementwise.

    Verifies:
        The element type is a number type (not `i1`): torch has no bool form of it.

    Example:
        %y = fusion.abs %x : tensor<4x8xi32> -> tensor<4x8xi32>
    """

    name = "fusion.abs"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_not_bool(self)


@irdl_op_definition
class ReluOp(UnaryFusionOp):
    """
    `relu(x)` (`max(x, 0)`), elementwise.

    Verifies:
        The element type is a number type (not `i1`): torch has no bool form of it.

    Example:
        %y = fusion.relu %x : tensor<4x8xbf16> -> tensor<4x8xbf16>
    """

    name = "fusion.relu"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_not_bool(self)


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
class LogOp(FloatUnaryFusionOp):
    """
    `log(x)`, the natural logarithm, elementwise (`-inf` at 0, NaN below, as torch.log).

    Example:
        %y = fusion.log %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.log"


@irdl_op_definition
class SinOp(FloatUnaryFusionOp):
    """
    `sin(x)`, elementwise (x in radians).

    Example:
        %y = fusion.sin %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.sin"


@irdl_op_definition
class CosOp(FloatUnaryFusionOp):
    """
    `cos(x)`, elementwise (x in radians).

    Example:
        %y = fusion.cos %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.cos"


@irdl_op_definition
class ErfOp(FloatUnaryFusionOp):
    """
    `erf(x)`, the Gauss error function, elementwise.

    Example:
        %y = fusion.erf %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.erf"


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


@irdl_op_definition
class SigmoidOp(FloatUnaryFusionOp):
    """
    `sigmoid(x)` (`1 / (1 + exp(-x))`), elementwise.

    Example:
        %y = fusion.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.sigmoid"


@irdl_op_definition
class SiluOp(FloatUnaryFusionOp):
    """
    `silu(x)` (`x * sigmoid(x)`), elementwise.

    Example:
        %y = fusion.silu %x : tensor<4x8xbf16> -> tensor<4x8xbf16>
    """

    name = "fusion.silu"


GELU_APPROXIMATIONS = ("none", "tanh")


def verify_choice(what: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise VerifyException(f"{what} must be one of {', '.join(choices)}, got {value}")


@irdl_op_definition
class GeluOp(FloatUnaryFusionOp):
    """
    `torch.nn.functional.gelu(x, approximate=...)`, elementwise: `approximate = none` is the exact
    `x * Phi(x)` (erf), `approximate = tanh` the tanh approximation.

    Verifies:
        `approximate` is `none` or `tanh`.

    Example:
        %y = fusion.gelu %x approximate = tanh : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.gelu"

    approximate = prop_def(StringAttr)
    assembly_format = "$x `approximate` `=` custom<BareWord>($approximate) attr-dict `:` type($x) `->` type($result)"

    def __init__(self, x: SSAValue, approximate: str = "none", result_type: Attribute | None = None):
        FusionOp.__init__(
            self,
            operands=[x],
            result_types=[result_type or x.type],
            properties={"approximate": StringAttr(approximate)},
        )

    def verify_element_types(self) -> None:
        super().verify_element_types()
        if self.approximate.data not in GELU_APPROXIMATIONS:
            raise VerifyException(
                f"approximate must be one of {', '.join(GELU_APPROXIMATIONS)}, got {self.approximate.data}"
            )


@irdl_op_definition
class SqrtOp(FloatUnaryFusionOp):
    """
    `sqrt(x)`, elementwise.

    Example:
        %y = fusion.sqrt %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.sqrt"


@irdl_op_definition
class RsqrtOp(FloatUnaryFusionOp):
    """
    `1 / sqrt(x)`, elementwise.

    Example:
        %y = fusion.rsqrt %x : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.rsqrt"


@irdl_op_definition
class ReciprocalOp(FloatUnaryFusionOp):
    """
    `1 / x`, elementwise.

    Example:
        %y = fusion.reciprocal %x : tensor<4x8xf16> -> tensor<4x8xf16>
    """

    name = "fusion.reciprocal"


# -- binary ---------------------------------------------------------------------------------------


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

    Verifies:
        The element type is a number type (not `i1`): torch has no bool form of it.

    Example:
        %c = fusion.sub %a, %b : tensor<4x8xi64>, tensor<4x8xi64> -> tensor<4x8xi64>
    """

    name = "fusion.sub"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_not_bool(self)


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


@irdl_op_definition
class PowOp(BinaryFusionOp):
    """
    `lhs ** rhs`, elementwise (`torch.pow`). A scalar exponent is a 0-d `fusion.full` broadcast to
    the shape.

    Verifies:
        The element type is a float (integer powers: cast first).

    Example:
        %c = fusion.pow %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.pow"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)


COMPARE_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CompareOp(BinaryFusionOp):
    """
    `lhs PREDICATE rhs`, elementwise, as `arith.cmpf`/`arith.cmpi`: `eq`, `ne`, `lt`, `le`, `gt`,
    `ge` (torch.eq, ..., torch.ge; integers compare signed, floats ordered: a NaN operand gives
    false, except `ne`, which gives true). The result is `i1`.

    Verifies:
        `predicate` is one of `eq`, `ne`, `lt`, `le`, `gt`, `ge`; both operands have one element
        type; the result's is `i1`.

    Example:
        %m = fusion.compare lt, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
    """

    name = "fusion.compare"

    predicate = prop_def(StringAttr)
    assembly_format = (
        "custom<BareWord>($predicate) `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(self, predicate: str, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        FusionOp.__init__(
            self, operands=[lhs, rhs], result_types=[result_type], properties={"predicate": StringAttr(predicate)}
        )

    def verify_element_types(self) -> None:
        if self.predicate.data not in COMPARE_PREDICATES:
            raise VerifyException(
                f"predicate must be one of {', '.join(COMPARE_PREDICATES)}, got {self.predicate.data}"
            )
        if element_type_of(self.lhs) != element_type_of(self.rhs):
            raise VerifyException(
                f"operands have element types {element_type_of(self.lhs)} and {element_type_of(self.rhs)}"
            )
        verify_bool(self.result, "the result")


def verify_bool(value: SSAValue, what: str) -> None:
    elt = element_type_of(value)
    if elt != IntegerType(1):
        raise VerifyException(f"{what} must have element type i1, got {elt}")


@irdl_op_definition
class WhereOp(FusionOp):
    """
    `torch.where(condition, lhs, rhs)` (`arith.select` on tensors): `lhs` where `condition` is
    true, `rhs` elsewhere.

    Verifies:
        `condition` is `i1`; the three operands have the result's shape; `lhs` and `rhs` the
        result's element type.

    Example:
        %y = fusion.where %m, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.where"

    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(self, condition: SSAValue, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[condition, lhs, rhs], result_types=[result_type or lhs.type])

    def result_shape(self) -> rules.Shape:
        shapes = [shape_of(v) for v in (self.condition, self.lhs, self.rhs)]
        if not all(rules.shapes_match(shapes[0], s) for s in shapes[1:]):
            raise VerifyException(f"operands must have one shape, got {', '.join(rules.fmt(s) for s in shapes)}")
        return shape_of(self.lhs)

    def verify_element_types(self) -> None:
        verify_bool(self.condition, "the condition")
        result_elt = element_type_of(self.result)
        for name, value in (("lhs", self.lhs), ("rhs", self.rhs)):
            if element_type_of(value) != result_elt:
                raise VerifyException(f"{name} has element type {element_type_of(value)}, the result {result_elt}")

    def axis_map(self) -> rules.AxisMap:
        return rules.elementwise_map(len(shape_of(self.result)), 3)
