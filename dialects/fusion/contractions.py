"""Contractions: `fusion.matmul` and `fusion.linear`."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import FusionOp, shape_of


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


def accumulates_rows(op: FusionOp) -> bool:
    """
    A GEMM of rows by one matrix: a linear without bias or a matmul, of 2-D weights. Its rows
    flattened, `torch.addmm` computes it and adds a residual in the same kernel.
    """
    if isinstance(op, LinearOp):
        return op.bias is None and len(shape_of(op.w)) == 2
    return isinstance(op, MatmulOp) and len(shape_of(op.operands[1])) == 2
