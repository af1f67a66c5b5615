"""`hir.launch`: a fusion computation run on the current stream, destination-passing."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import MemRefType, NoneAttr, TensorType
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import EffectInstance, IsolatedFromAbove
from xdsl.utils.exceptions import VerifyException

from hir.dialects.hir.base import (
    READS_CURRENT_STREAM,
    WRITES_DEVICE_QUEUE,
    HirEffects,
    build_directly,
    operand_segments,
    read,
    tensor_fits_buffer,
    tensor_type_of,
    verify_buffer_types,
    write,
)
from hir.dialects.hir.loops import YieldOp
from hir.dialects.syntax import parse_ins, parse_type_list, print_ins


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """
    Runs a fusion computation on the current stream, destination-passing: the region receives
    one tensor per `ins` buffer and yields one tensor per `outs` buffer, which is written there.

    A region argument may be given a type of its own with `as`: a `#fusion.parallel`-encoded
    global tensor whose local shape is the buffer's makes a *resharding* launch, a communication
    that `hir-lower-communication` turns into collectives (the runtime refuses to run one).

    Syntax:
        hir.launch ins(%arg = %buffer, ... : type [as tensor-type], ...) outs(%buffer, ... : type, ...) attr-dict {
          fusion ops
          hir.yield %values : types
        }

    Verifies:
        The region has one argument per `ins` buffer, a tensor with the buffer's shape and element
        type (or an encoded tensor whose local shape is the buffer's); it holds fusion ops only
        and ends with `hir.yield`, which yields one value per `outs` buffer that fits it the same
        way.

    Example:
        hir.launch ins(%x = %a, %y = %b : memref<8xf32>, memref<8xf32>) outs(%c : memref<8xf32>) {
          %s = fusion.add %x, %y : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
          %r = fusion.relu %s : tensor<8xf32> -> tensor<8xf32>
          hir.yield %r : tensor<8xf32>
        }
    """

    name = "hir.launch"

    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(HirEffects(), IsolatedFromAbove())

    def __init__(self, ins: Sequence[SSAValue], outs: Sequence[SSAValue], body: Region):
        segments = operand_segments(len(ins), len(outs))
        build_directly(self, [*ins, *outs], properties={"operandSegmentSizes": segments}, regions=[body])

    @property
    def is_resharding(self) -> bool:
        """
        Whether the region sees or yields global, encoded tensors: a communication still to be
        lowered (by hir-lower-communication), which the runtime refuses to run.
        """
        terminator = self.body.block.last_op
        values = [*self.body.block.args, *(terminator.operands if terminator is not None else ())]
        return any(isinstance(v.type, TensorType) and not isinstance(v.type.encoding, NoneAttr) for v in values)

    def effects(self) -> set[EffectInstance]:
        return {read(v) for v in self.ins} | {write(v) for v in self.outs} | {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE}

    def verify_(self) -> None:
        from hir.dialects.fusion import verify_fusion_region

        def mismatch(i: int, arg: SSAValue, buffer: SSAValue) -> str | None:
            if tensor_fits_buffer(arg.type, buffer.type):
                return None
            assert isinstance(buffer.type, MemRefType)
            return (
                f"region argument #{i} of type {arg.type} does not fit ins #{i}: {buffer.type} "
                f"(expected {tensor_type_of(buffer.type)} or an encoded tensor whose local shape fits)"
            )

        ins, outs = self.ins, self.outs
        verify_buffer_types(ins, "ins")
        verify_buffer_types(outs, "outs")
        for i, out in enumerate(outs):
            if out in outs[:i]:
                first = list(outs).index(out)
                raise VerifyException(
                    f"outs #{first} and #{i} are the same buffer: each yielded value needs a buffer of its own"
                )
        terminator = verify_fusion_region(
            self.body.block, ins, YieldOp, ins_name="ins buffers", holder="a launch region", arg_mismatch=mismatch
        )
        if len(terminator.operands) != len(outs):
            raise VerifyException(f"hir.yield gives {len(terminator.operands)} values for {len(outs)} outs buffers")
        for i, (value, buffer) in enumerate(zip(terminator.operands, outs)):
            if not tensor_fits_buffer(value.type, buffer.type):
                raise VerifyException(f"yielded value #{i} of type {value.type} does not fit outs #{i}: {buffer.type}")

    def print(self, printer: Printer) -> None:
        args = self.body.block.args
        # A resharding launch's region sees the global tensor, not the buffer's shape.
        ins = self.ins
        seen = [a.type if a.type != tensor_type_of(v.type) else None for a, v in zip(args, ins)]  # type: ignore[arg-type]
        print_ins(printer, args, ins, seen)
        printer.print_string(" outs(")
        printer.print_list(self.outs, printer.print_operand)
        if self.outs:
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.outs], printer.print_attribute)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=True)

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        pos = parser.pos
        ins = parse_ins(parser, allow_region_types=True)
        parser.parse_keyword("outs")
        parser.parse_punctuation("(")
        outs: list[UnresolvedOperand] = []
        outs_types: list[Attribute] = []
        if not parser.parse_optional_punctuation(")"):
            outs = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
            parser.parse_punctuation(":")
            outs_types = parse_type_list(parser)
            parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        buffers = parser.resolve_operands(ins.values, ins.types, pos)
        resolved_outs = parser.resolve_operands(outs, outs_types, pos)
        block_args = []
        for arg, t, seen in zip(ins.args, ins.types, ins.region_types):
            if not isinstance(t, MemRefType):
                parser.raise_error(f"ins buffers must be memrefs, got {t}", pos)
            block_args.append(arg.resolve(seen or tensor_type_of(t)))
        body = parser.parse_region(block_args)
        op = cls(buffers, resolved_outs, body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op
