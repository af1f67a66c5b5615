"""Host loops: `hir.for`, `hir.stream_for` (iterations on pool streams, forked and joined), and `hir.yield`."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    EffectInstance,
    HasParent,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException

from hir.dialects.hir.base import (
    WRITES_DEVICE_QUEUE,
    CurrentStream,
    HirEffects,
    StreamType,
    build_directly,
    constant_index,
    write,
)


def _launch_op() -> type[IRDLOperation]:
    from hir.dialects.hir.launch import LaunchOp

    return LaunchOp


@irdl_op_definition
class YieldOp(IRDLOperation):
    """
    Terminator of `hir.for` and `hir.stream_for` (no operands, and implicit in their printed
    form) and of `hir.launch` (the values written to `outs`).

    Example:
        hir.launch ins(%x = %a : memref<8xf32>) outs(%c : memref<8xf32>) {
          %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
          hir.yield %y : tensor<8xf32>
        }
    """

    name = "hir.yield"

    values = var_operand_def()

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp, StreamForOp, _launch_op()), Pure()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        build_directly(self, values)


def print_loop_header(printer: Printer, iv: SSAValue, lb: SSAValue, ub: SSAValue, step: SSAValue) -> None:
    """` %i = %lb to %ub step %st`"""
    printer.print_string(" ")
    printer.print_ssa_value(iv)
    printer.print_string(" = ")
    printer.print_ssa_value(lb)
    printer.print_string(" to ")
    printer.print_ssa_value(ub)
    printer.print_string(" step ")
    printer.print_ssa_value(step)


def parse_loop_header(parser: Parser) -> tuple[Parser.UnresolvedArgument, SSAValue, SSAValue, SSAValue]:
    """`%i = %lb to %ub step %st`: the induction variable (unresolved) and the index bounds."""
    index = IndexType()
    iv = parser.parse_argument(expect_type=False)
    parser.parse_punctuation("=")
    lb = parser.parse_operand(index)
    parser.parse_keyword("to")
    ub = parser.parse_operand(index)
    parser.parse_keyword("step")
    step = parser.parse_operand(index)
    return iv, lb, ub, step


def verify_loop_bounds(lb: SSAValue, step: SSAValue) -> None:
    """Constant bounds the runtime would refuse: a step that is not positive, a negative lower bound."""
    if (value := constant_index(step)) is not None and value < 1:
        raise VerifyException(f"the step must be positive, got {value}")
    if (value := constant_index(lb)) is not None and value < 0:
        raise VerifyException(f"the lower bound must be >= 0 (loops iterate over indices), got {value}")


def verify_loop_body(op: Operation, body: Region, arg_types: Sequence[type[Attribute]], what: str) -> None:
    """The body's block arguments have these types, and its `hir.yield` carries no values."""
    args = body.block.args
    if len(args) != len(arg_types) or not all(isinstance(a.type, t) for a, t in zip(args, arg_types)):
        raise VerifyException(f"{op.name} body must have exactly {what}")
    if body.block.last_op is not None and body.block.last_op.operands:
        raise VerifyException(f"{op.name} carries no values: its hir.yield takes no operands")


def with_implicit_terminator(op: ForOp | StreamForOp) -> None:
    blocks = op.body.blocks
    last = blocks.first.last_op if len(blocks) == 1 and blocks.first is not None else None
    if len(blocks) == 1 and (last is None or not last.has_trait(IsTerminator)):
        # The common case, without xDSL's generic ensure_terminator and its implicit builder.
        blocks.first.add_op(YieldOp())  # type: ignore[union-attr]
        return
    for trait in op.get_traits_of_type(SingleBlockImplicitTerminator):
        ensure_terminator(op, trait)


def print_loop_body(printer: Printer, op: ForOp | StreamForOp) -> None:
    """` { body } {attributes}`: the region without its implicit `hir.yield`, then the attributes."""
    printer.print_string(" ")
    printer.print_region(op.body, print_entry_block_args=False, print_block_terminators=False)
    printer.print_op_attributes(op.attributes)


def parse_loop_attributes(parser: Parser, op: ForOp | StreamForOp) -> None:
    """The attributes after the body; a parsed body without a terminator gets its `hir.yield`."""
    op.attributes |= parser.parse_optional_attr_dict()
    with_implicit_terminator(op)


@irdl_op_definition
class ForOp(IRDLOperation):
    """
    A host loop `lb to ub step s` with an index block argument (no loop-carried values). Its
    body runs on the host once per index, in order; what it enqueues goes to the current stream.

    Syntax:
        hir.for %i = %lb to %ub step %step { body } attr-dict

    Verifies:
        The body has exactly one block argument, an index; its `hir.yield` takes no operands.

    Example:
        hir.for %i = %c0 to %c4 step %c1 {
          %k = arith.remui %i, %n : index
          %s = hir.stream %k
          hir.set_current_stream %s
          hir.synchronize %main
        }
    """

    name = "hir.for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(self, lb: SSAValue, ub: SSAValue, step: SSAValue, body: Region | Block):
        region = body if isinstance(body, Region) else Region(body)
        super().__init__(operands=[lb, ub, step], regions=[region])
        with_implicit_terminator(self)

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        verify_loop_body(self, self.body, (IndexType,), "one index block argument")
        verify_loop_bounds(self.lb, self.step)

    def print(self, printer: Printer) -> None:
        print_loop_header(printer, self.induction_var, self.lb, self.ub, self.step)
        print_loop_body(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv, lb, ub, step = parse_loop_header(parser)
        op = cls(lb, ub, step, parser.parse_region((iv.resolve(IndexType()),)))
        parse_loop_attributes(parser, op)
        return op


@irdl_op_definition
class StreamForOp(IRDLOperation):
    """
    A loop whose iterations run on pool streams, forked from and joined into the stream `main`:
    in iteration i, `%s` is pool stream (i mod num_streams), and it is the current stream.

    Before any iteration's work, every worker stream waits for `main` (the fork; all fork waits
    come first, since a fork inside iteration i+1 would also wait for what `main` waited for at
    the end of iteration i, the workers of iterations 0..i, serializing the pipeline). Iteration
    i makes its worker current, runs the body, makes `main` current again and has it wait for
    the worker (the join). So after the loop `main` is current (unchanged with no iteration) and
    has waited for all the work. The body may switch streams; the join waits for the worker only.
    A loop of one iteration with constant bounds runs it on `main` itself (`%s` is `main`, made
    current; no fork, no join): a worker would only make `main` wait for work it can run.

    `peel_first` asks `hir-expand-stream-loops` to emit the first iteration as straight-line code
    after the fork, when the bounds are constants: a schedule hint that never changes results.
    The op is executable as it is; `hir-expand-stream-loops` lowers it to the `hir.for` fork loop
    and main loop with explicit stream ops.

    Syntax:
        hir.stream_for %i = %lb to %ub step %step streams(%s) of %num_streams from %main [peel_first] { body } attr-dict

    Verifies:
        The body has exactly two block arguments, an index and a `!hir.stream`; its `hir.yield`
        takes no operands.

    Example:
        hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
          %row = hir.alias_select %a[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
          %out = hir.alias_select %b[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
          hir.launch ins(%x = %row : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
            %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
            hir.yield %y : tensor<8xf32>
          }
        }
    """  # noqa: E501 (MLIR as hir-opt prints it)

    name = "hir.stream_for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    num_streams = operand_def(IndexType)
    main = operand_def(StreamType)
    peel_first = opt_prop_def(UnitAttr)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), HirEffects(), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: SSAValue,
        ub: SSAValue,
        step: SSAValue,
        num_streams: SSAValue,
        main: SSAValue,
        body: Region | Block,
        peel_first: bool = False,
    ):
        region = body if isinstance(body, Region) else Region(body)
        props: dict[str, Attribute] = {"peel_first": UnitAttr()} if peel_first else {}
        build_directly(self, [lb, ub, step, num_streams, main], properties=props, regions=[region])
        with_implicit_terminator(self)

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    @property
    def worker(self) -> SSAValue:
        """The block argument holding iteration i's pool stream."""
        return self.body.block.args[1]

    def single_iteration(self) -> int | None:
        """The one index of a loop whose bounds are constants and that runs one iteration (which
        runs on `main`: no fork, no join), else None."""
        bounds = [constant_index(v) for v in (self.lb, self.ub, self.step)]
        if None in bounds or bounds[2] == 0:
            return None
        indices = range(*bounds)  # type: ignore[arg-type]
        return indices[0] if len(indices) == 1 else None

    def effects(self) -> set[EffectInstance]:
        # Besides its body's effects: it switches the current stream and enqueues the fork/join waits.
        return {write(resource=CurrentStream()), WRITES_DEVICE_QUEUE}

    def verify_(self) -> None:
        verify_loop_body(self, self.body, (IndexType, StreamType), "an index and a !hir.stream block argument")
        verify_loop_bounds(self.lb, self.step)
        if (count := constant_index(self.num_streams)) is not None and count < 1:
            raise VerifyException(f"the stream count must be >= 1, got {count}")

    def print(self, printer: Printer) -> None:
        print_loop_header(printer, self.induction_var, self.lb, self.ub, self.step)
        printer.print_string(" streams(")
        printer.print_ssa_value(self.worker)
        printer.print_string(") of ")
        printer.print_ssa_value(self.num_streams)
        printer.print_string(" from ")
        printer.print_ssa_value(self.main)
        if self.peel_first is not None:
            printer.print_string(" peel_first")
        print_loop_body(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> StreamForOp:
        iv, lb, ub, step = parse_loop_header(parser)
        parser.parse_keyword("streams")
        parser.parse_punctuation("(")
        worker = parser.parse_argument(expect_type=False)
        parser.parse_punctuation(")")
        parser.parse_keyword("of")
        num_streams = parser.parse_operand(IndexType())
        parser.parse_keyword("from")
        main = parser.parse_operand(StreamType())
        peel_first = parser.parse_optional_keyword("peel_first") is not None
        body = parser.parse_region((iv.resolve(IndexType()), worker.resolve(StreamType())))
        op = cls(lb, ub, step, num_streams, main, body, peel_first)
        parse_loop_attributes(parser, op)
        return op
