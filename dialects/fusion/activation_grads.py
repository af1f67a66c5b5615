"""
The backward of activations as one elementwise op each: `fusion.gelu_backward` and
`fusion.silu_backward` (what autograd records for gelu and silu). One op, one kernel (torch's own
`gelu_backward`), where the decomposed formula is about ten elementwise ops over the activation.
The operands are the output gradient (`lhs`) and the activation's input (`rhs`), of one shape and
float element type; the result is the input gradient.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def

from hir.dialects.fusion.elementwise import GELU_APPROXIMATIONS, verify_choice
from hir.dialects.fusion.ops import BinaryFusionOp, FusionOp, verify_float


@irdl_op_definition
class GeluBackwardOp(BinaryFusionOp):
    """
    `torch.ops.aten.gelu_backward(grad, x, approximate=...)`, elementwise: `grad * gelu'(x)`, the
    derivative of `fusion.gelu` with the same `approximate` (`none`: erf, `tanh`: the tanh
    approximation). `lhs` is the output gradient, `rhs` the gelu's input.

    Verifies:
        The element type is a float; `approximate` is `none` or `tanh`.

    Example:
        %dx = fusion.gelu_backward %dy, %x approximate = none : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
    """

    name = "fusion.gelu_backward"

    approximate = prop_def(StringAttr)
    assembly_format = (
        "$lhs `,` $rhs `approximate` `=` custom<BareWord>($approximate) attr-dict "
        "`:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(self, grad: SSAValue, x: SSAValue, approximate: str = "none", result_type: Attribute | None = None):
        FusionOp.__init__(
            self,
            operands=[grad, x],
            result_types=[result_type or grad.type],
            properties={"approximate": StringAttr(approximate)},
        )

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)
        verify_choice("approximate", self.approximate.data, GELU_APPROXIMATIONS)


@irdl_op_definition
class SiluBackwardOp(BinaryFusionOp):
    """
    `torch.ops.aten.silu_backward(grad, x)`, elementwise: `grad * sigmoid(x) * (1 + x * (1 -
    sigmoid(x)))`, the derivative of `fusion.silu`. `lhs` is the output gradient, `rhs` the silu's
    input.

    Verifies:
        The element type is a float.

    Example:
        %dx = fusion.silu_backward %dy, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.silu_backward"

    def verify_element_types(self) -> None:
        super().verify_element_types()
        verify_float(self)
