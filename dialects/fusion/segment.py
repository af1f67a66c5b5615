"""
`fusion.segment`: a group of fusion ops run as one kernel, and the checks every region of fusion
ops bound to values shares (`fusion.segment` and `hir.launch`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from hir.dialects.fusion.ops import FusionOp
from hir.dialects.shaped_types import verify_shaped_type
from hir.dialects.syntax import parse_ins, parse_type_list, print_ins


@irdl_op_definition
class YieldOp(IRDLOperation):
    """
    Terminator of `fusion.segment`: the segment's results.

    Example:
        %r = fusion.segment ins(%x = %a : tensor<4x8xf32>) -> tensor<4x8xf32> {
          %n = fusion.neg %x : tensor<4x8xf32> -> tensor<4x8xf32>
          fusion.yield %n : tensor<4x8xf32>
        }
    """

    name = "fusion.yield"

    values = var_operand_def(TensorType)

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(SegmentOp), Pure()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class SegmentOp(IRDLOperation):
    """
    A group of fusion ops run as one kernel (made by `fusion-segment`). The region sees one
    argument per operand (same type) and yields the results; it is isolated from above. One
    result type may go without parentheses; `-> ()` is a segment without results.

    Syntax:
        %results = fusion.segment ins(%arg = %operand, ... : type, ...) -> (type, ...) attr-dict {
          fusion ops
          fusion.yield %values : types
        }

    Verifies:
        The region has one argument per operand, of the operand's type; it holds fusion ops only
        and ends with `fusion.yield`, whose types are the segment's result types.

    Example:
        %r = fusion.segment ins(%x = %a : tensor<4x8xf32>) -> tensor<4x8xf32> {
          %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
          %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
          fusion.yield %n : tensor<4x8xf32>
        }
    """

    name = "fusion.segment"

    ins = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())

    def __init__(self, ins: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[ins], result_types=[result_types], regions=[body])

    @property
    def yield_op(self) -> YieldOp:
        terminator = self.body.block.last_op
        assert isinstance(terminator, YieldOp)
        return terminator

    @property
    def inner_ops(self) -> list[FusionOp]:
        return [op for op in self.body.block.ops if isinstance(op, FusionOp)]

    def verify_(self) -> None:
        def mismatch(i: int, arg: SSAValue, operand: SSAValue) -> str | None:
            return (
                None
                if arg.type == operand.type
                else f"region argument #{i} has type {arg.type}, operand #{i} {operand.type}"
            )

        for i, operand in enumerate(self.ins):
            verify_shaped_type(operand.type, f"operand #{i}")
        for i, result in enumerate(self.outs):
            verify_shaped_type(result.type, f"result #{i}")
        terminator = verify_fusion_region(
            self.body.block, self.ins, YieldOp, ins_name="operands", holder="a segment", arg_mismatch=mismatch
        )
        if [v.type for v in terminator.operands] != [r.type for r in self.outs]:
            raise VerifyException("fusion.yield types must equal the segment's result types")

    def print(self, printer: Printer) -> None:
        print_ins(printer, self.body.block.args, self.ins)
        printer.print_string(" -> ")
        types = [r.type for r in self.outs]
        if len(types) == 1:
            printer.print_attribute(types[0])
        else:
            printer.print_string("(")
            printer.print_list(types, printer.print_attribute)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=True)

    @classmethod
    def parse(cls, parser: Parser) -> SegmentOp:
        pos = parser.pos
        ins = parse_ins(parser)
        parser.parse_punctuation("->")
        if parser.parse_optional_punctuation("("):
            result_types = []  # `-> ()`: a segment whose values are all dead has no results
            if not parser.parse_optional_punctuation(")"):
                result_types = parse_type_list(parser)
                parser.parse_punctuation(")")
        else:
            result_types = [parser.parse_type()]
        attributes = parser.parse_optional_attr_dict_with_keyword()
        operands = parser.resolve_operands(ins.values, ins.types, pos)
        body = parser.parse_region([arg.resolve(t) for arg, t in zip(ins.args, ins.types)])
        op = cls(operands, result_types, body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op


def verify_fusion_region(
    block: Block,
    ins: Sequence[SSAValue],
    terminator_type: type[Operation],
    *,
    ins_name: str,
    holder: str,
    arg_mismatch: Callable[[int, SSAValue, SSAValue], str | None],
) -> Operation:
    """
    The checks of a region of fusion ops bound to the values `ins` (`fusion.segment`, `hir.launch`):
    one block argument per value, each as `arg_mismatch` accepts it (it returns what is wrong, or
    None), fusion ops only, ending with a `terminator_type`, which it returns.
    """
    if len(block.args) != len(ins):
        raise VerifyException(f"the region takes {len(block.args)} arguments for {len(ins)} {ins_name}")
    for i, (arg, value) in enumerate(zip(block.args, ins)):
        if (problem := arg_mismatch(i, arg, value)) is not None:
            raise VerifyException(problem)
    terminator = block.last_op
    if not isinstance(terminator, terminator_type):
        raise VerifyException(f"the region must end with {terminator_type.name}")  # type: ignore[attr-defined]
    for op in block.ops:
        if op is not terminator and not isinstance(op, FusionOp):
            raise VerifyException(f"{holder} holds fusion ops only, found {op.name}")
    return terminator
