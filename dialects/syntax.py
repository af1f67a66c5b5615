"""Parsing/printing pieces shared by the assembly formats of both dialects."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, IntegerType, StringAttr, f64, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer


def parse_int_list(parser: Parser) -> list[int]:
    """`[1, 2, 3]`"""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def int_array(values: Iterable[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, tuple(values))


def array_values(attr: Attribute) -> tuple[int, ...]:
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.iter_values())


def format_int_list(values: Iterable[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def parse_type_list(parser: Parser) -> list[Attribute]:
    """An undelimited, non-empty `t1, t2, ...` list."""
    types = [parser.parse_type()]
    while parser.parse_optional_punctuation(","):
        types.append(parser.parse_type())
    return types


def parse_assignments(parser: Parser) -> list[tuple[Parser.UnresolvedArgument, UnresolvedOperand]]:
    """`%arg = %value, ...` (non-empty): region arguments bound to operands, as scf.for's iter_args."""

    def assignment() -> tuple[Parser.UnresolvedArgument, UnresolvedOperand]:
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        return arg, parser.parse_unresolved_operand()

    pairs = [assignment()]
    while parser.parse_optional_punctuation(","):
        pairs.append(assignment())
    return pairs


def print_assignments(printer: Printer, args: Sequence[SSAValue], values: Sequence[SSAValue]) -> None:
    """`%arg = %value, ...`"""
    printer.print_list(
        zip(args, values),
        lambda pair: (printer.print_ssa_value(pair[0]), printer.print_string(" = "), printer.print_ssa_value(pair[1])),
    )


@dataclass
class InsList:
    """A parsed `ins(%arg = %value, ... : type, ...)`: region arguments bound to operands."""

    args: list[Parser.UnresolvedArgument]
    values: list[UnresolvedOperand]
    types: list[Attribute]
    region_types: list[Attribute | None]
    """Per value, the type its region argument has instead of the default (`type as region_type`)."""


def parse_ins(parser: Parser, allow_region_types: bool = False) -> InsList:
    """
    `ins(%arg = %value, ... : type, ...)`, possibly empty; with `allow_region_types`, a type may
    be followed by `as TYPE`, the type the region argument has.
    """

    def typed() -> tuple[Attribute, Attribute | None]:
        t = parser.parse_type()
        return t, parser.parse_type() if allow_region_types and parser.parse_optional_keyword("as") else None

    parser.parse_keyword("ins")
    parser.parse_punctuation("(")
    if parser.parse_optional_punctuation(")"):
        return InsList([], [], [], [])
    pairs = parse_assignments(parser)
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, typed)
    parser.parse_punctuation(")")
    return InsList([a for a, _ in pairs], [v for _, v in pairs], [t for t, _ in types], [r for _, r in types])


def print_ins(
    printer: Printer,
    args: Sequence[SSAValue],
    values: Sequence[SSAValue],
    region_types: Sequence[Attribute | None] | None = None,
) -> None:
    """` ins(%arg = %value, ... : type [as region_type], ...)`"""

    def typed(k: int) -> None:
        printer.print_attribute(values[k].type)
        if region_types is not None and region_types[k] is not None:
            printer.print_string(" as ")
            printer.print_attribute(region_types[k])  # type: ignore[arg-type]

    printer.print_string(" ins(")
    print_assignments(printer, args, values)
    if values:
        printer.print_string(" : ")
        printer.print_list(range(len(values)), typed)
    printer.print_string(")")


def print_types(printer: Printer, types: Sequence[Attribute]) -> None:
    printer.print_list(types, printer.print_attribute)


@irdl_custom_directive
class IntList(CustomDirective):
    """An i64 dense-array property written `[0, 1]` (like MLIR's `custom<DenseI64Array>`)."""

    values: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.values.set(state, int_array(parse_int_list(parser)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_string(format_int_list(array_values(self.values.get(op))))


@irdl_custom_directive
class BareWord(CustomDirective):
    """A string property written as a bare identifier, e.g. `kind = sum`."""

    word: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.word.set(state, StringAttr(parser.parse_identifier()))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        word = self.word.get(op)
        assert isinstance(word, StringAttr)
        printer.print_string(word.data)


def parse_scalar(parser: Parser) -> IntegerAttr | FloatAttr:
    """
    A number: an integer (`3`, `-1`, `true`/`false` as 1/0) becomes an i64 attribute, a float
    (`0.5`, `1.0e-05`, `inf`, `-inf`, `nan`) an f64 attribute.
    """
    negative = parser.parse_optional_punctuation("-") is not None
    if (word := parser.parse_optional_keyword("inf")) is not None or parser.parse_optional_keyword("nan"):
        value = math.inf if word else math.nan
        return FloatAttr(-value if negative else value, f64)
    start = parser.pos
    number = parser.parse_optional_number(allow_boolean=not negative)
    if number is None:
        parser.raise_error("expected a number (an integer, a float, true, false, inf or nan)")
    if negative:
        number = -number
    if isinstance(number, int) and not -(2**63) <= number < 2**63:
        parser.raise_error(f"integer {number} does not fit in 64 bits", start, parser.pos)
    if isinstance(number, float) and math.isinf(number):
        parser.raise_error("float literal out of range (write inf or -inf)", start, parser.pos)
    return IntegerAttr(number, i64) if isinstance(number, int) else FloatAttr(number, f64)


def print_scalar(printer: Printer, value: Attribute) -> None:
    """Inverse of `parse_scalar`: `3`, `5.000000e-01`, `-inf`, `nan`."""
    if isinstance(value, IntegerAttr):
        printer.print_string(str(value.value.data))
        return
    assert isinstance(value, FloatAttr)
    number = value.value.data
    if math.isnan(number):
        printer.print_string("nan")
    elif math.isinf(number):
        printer.print_string("inf" if number > 0 else "-inf")
    else:
        printer.print_float(number, f64)


@irdl_custom_directive
class Scalar(CustomDirective):
    """
    A number written bare: `3`, `-2`, `0.5`, `1.0e-05`, `-inf`, `nan`; `true`/`false` mean 1/0,
    and are how the value prints when the op's result has element type i1.
    """

    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.value.set(state, parse_scalar(parser))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        value = self.value.get(op)
        result_type = op.results[0].type if op.results else None
        if isinstance(value, IntegerAttr) and getattr(result_type, "element_type", None) == IntegerType(1):
            printer.print_string("true" if value.value.data else "false")  # an i1 result: a boolean
        else:
            print_scalar(printer, value)


@irdl_custom_directive
class FloatLiteral(CustomDirective):
    """An f64 property written as a bare float, e.g. `eps = 1.000000e-05` (an integer is accepted)."""

    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        value = parse_scalar(parser)
        self.value.set(state, FloatAttr(float(value.value.data), f64))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        print_scalar(printer, self.value.get(op))
