"""
Located diagnostics: every op parsed from text remembers its `file:line:col`, and verifier, pass
and runtime errors name it, MLIR style:

    ex.mlir:3:8: error: 'fusion.add' op operands must have the same shape, got 4x8 and 4x4
"""

from __future__ import annotations

import contextlib
import io
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue, TypeAttribute
from xdsl.irdl import AttributeInvT
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

# xDSL's string-literal pattern nests a `+` in a `*` (`(?:[^"...]+|escape)*"`): an unterminated
# string backtracks exponentially in the length of the rest of its line (40 characters: hours).
# The same language, one character per step, fails in linear time.
MLIRLexer._unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

_NO_BRACKETS = r'[^<>"()\n]*'
_SHAPED_TYPE_TEXT = re.compile(
    rf"(?:tensor|memref)<{_NO_BRACKETS}(?:<{_NO_BRACKETS}(?:<{_NO_BRACKETS}>{_NO_BRACKETS})*>{_NO_BRACKETS})*>"
)
"""
The text of a tensor or memref type with at most two levels of `<...>` inside and no string,
parenthesis or arrow (`affine_map<(d0) -> ...>` and quoted text are left to xDSL's parser).
"""

MAX_NESTING_DEPTH = 64
"""
The deepest nesting of ops a module may have (a module, a function, loops, a launch, its ops).
Real programs nest a handful of ops deep; the parser refuses deeper nesting with a located
error, since xDSL's verifier and printer recurse once per level and past about 150 levels exhaust
Python's stack.
"""

MAX_ATTRIBUTE_DEPTH = 32
"""
The deepest nesting of attributes and types in one another (`[[...]]`, `tensor<tensor<...>>`,
`((f32))`). Real ones nest a few levels deep (`tensor<..., #fusion.parallel<[...], mesh = [...]>>`);
xDSL's parser and printer recurse several frames per level.
"""


class LocatedParser(Parser):
    """
    A parser that gives every op without an explicit `loc(...)` its source position.

    Positions come from a table of line starts built once (binary search per op), so parsing
    stays linear in the file size; xDSL's `Span.get_location` counts the newlines from the start
    of the file at every call, which made parsing quadratic.
    """

    def __init__(self, ctx, input: str | bytes, name: str = "<unknown>", line_offset: int = 0):
        if isinstance(input, bytes):
            input = decode_source(input, name, line_offset)
        super().__init__(ctx, input, name)
        self.line_offset = line_offset
        self._line_starts: list[int] | None = None
        self._depth = 0
        self._attribute_depth = 0
        self._enclosing_forward_references: list[dict[str, dict[int, ForwardDeclaredValue]]] = []
        self._forward_use_spans: dict[int, Span] = {}
        self._shaped_types: dict[str, TypeAttribute] = {}

    # -- each distinct tensor / memref type is parsed once -----------------------------------------
    # A module repeats a handful of types on every op (`tensor<64x32xf32, #fusion.parallel<...>>`),
    # and parsing them was 70 % of parsing a module. The same text means the same type within one
    # input (aliases are defined before their uses and never redefined), and attributes are
    # immutable, so the parsed type is reused and the lexer resumes after its text.

    def parse_optional_type(self) -> TypeAttribute | None:
        start = self._current_token.span.start
        match = _SHAPED_TYPE_TEXT.match(self.lexer.input.content, start)
        if match is None:
            with self._nested_attribute(start):
                return super().parse_optional_type()
        text = match.group()
        known = self._shaped_types.get(text)
        if known is not None:
            self._resume_from(match.end())
            return known
        with self._nested_attribute(start):
            parsed = super().parse_optional_type()
        between = self.lexer.input.content[match.end() : self._current_token.span.start]
        if parsed is not None and self._current_token.span.start >= match.end() and not between.strip():
            self._shaped_types[text] = parsed  # xDSL's parser read exactly that text
        return parsed

    def parse_optional_attribute(self) -> Attribute | None:
        with self._nested_attribute(self._current_token.span.start):
            return super().parse_optional_attribute()

    @contextlib.contextmanager
    def _nested_attribute(self, start: int) -> Iterator[None]:
        """One more level of attributes and types in one another; past MAX_ATTRIBUTE_DEPTH, a located error."""
        self._attribute_depth += 1
        try:
            if self._attribute_depth > MAX_ATTRIBUTE_DEPTH:
                self.raise_error(
                    f"nesting too deep: more than {MAX_ATTRIBUTE_DEPTH} attributes or types nested in one another",
                    start,
                )
            yield
        finally:
            self._attribute_depth -= 1

    # -- a region's values are not visible outside it ----------------------------------------------
    # xDSL lets a definition inside a region resolve a forward reference made outside it (`hir.for
    # %i = %c0 to %n step %i { ... }`, the step naming the loop's own induction variable), and the
    # op then keeps an unresolved placeholder as operand. Each region gets its own forward
    # references, as in MLIR; a definition that would resolve an enclosing one is an error at the use.

    def resolve_operand(self, operand: UnresolvedOperand, type: AttributeInvT) -> SSAValue[AttributeInvT]:
        value = super().resolve_operand(operand, type)
        if isinstance(value, ForwardDeclaredValue):
            self._forward_use_spans.setdefault(id(value), operand.span)
        return value

    def parse_optional_region(self, arguments: Iterable[Parser.Argument] | None = None) -> Region | None:
        outer = self.forward_ssa_references
        self._enclosing_forward_references.append(outer)
        self.forward_ssa_references = {}
        opening = self._current_token.span
        try:
            region = super().parse_optional_region(arguments)
        except ParseError as e:
            # xDSL reports a block that ends without `}` as a missing block label (`^bb`), with the
            # message " in block definition": say which region is left open instead.
            if e.msg != " in block definition":
                raise
            line, column = self._line_and_column(opening.start)
            where = f"line {line + self.line_offset}:{column}"
            at = self._current_token
            if at.kind is MLIRTokenKind.EOF:
                message = f"the input ends inside the region opened at {where}: expected '}}'"
            else:
                message = f"expected an operation or '}}' to close the region opened at {where}"
            self.raise_error(message, at.span)
        finally:
            self._enclosing_forward_references.pop()
            inner, self.forward_ssa_references = self.forward_ssa_references, outer
        for name, references in inner.items():  # still unresolved: the enclosing scope may define them
            pending = outer.setdefault(name, {})
            for index, value in references.items():
                if (earlier := pending.get(index)) is None:
                    pending[index] = value
                elif earlier.type != value.type:
                    span = self._forward_use_spans.get(id(value))
                    self.raise_error(f"%{name} is used with type {value.type} here and {earlier.type} before", span)
                else:
                    value.replace_all_uses_with(earlier)
        return region

    def _register_ssa_definition(self, name: str, values: Sequence[SSAValue], span: Span) -> None:
        for references in self._enclosing_forward_references:
            if name in references:
                use = next(iter(references[name].values()))
                self.raise_error(
                    f"%{name} is used outside the region that defines it (a region's values are not visible "
                    "outside it, and a loop's bounds cannot name its induction variable)",
                    self._forward_use_spans.get(id(use), span),
                )
        super()._register_ssa_definition(name, values, span)

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        self._depth += 1
        try:
            if self._depth > MAX_NESTING_DEPTH:
                self.raise_error(f"nesting too deep: more than {MAX_NESTING_DEPTH} ops nested in one another", start)
            op = super().parse_operation()
        except (ValueError, OverflowError, VerifyException) as err:
            # An attribute or type refused its parameters while the op was parsed (an i64 out of
            # range, `3 : ui8` for arith.constant, an f32 where an index is expected).
            self.raise_error(str(err), start, self._end_of_parsed(start))
        finally:
            self._depth -= 1
        if isinstance(op.location, UnknownLoc):
            line, col = self._line_and_column(start)
            op.location = FileLineColLoc(
                StringAttr(self.lexer.input.name), IntAttr(line + self.line_offset), IntAttr(col)
            )
        return op

    def _end_of_parsed(self, start: int) -> int:
        """Where the text parsed since `start` ends: before the current token and the blanks before it."""
        text, end = self.lexer.input.content, self._current_token.span.start
        while end > start + 1 and text[end - 1].isspace():
            end -= 1
        return end

    def _line_and_column(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        if self._line_starts is None:
            source = self.lexer.input
            find, newline = source.content.find, source.newline
            starts = [0]
            at = find(newline)  # type: ignore[arg-type]
            while at != -1:
                starts.append(at + 1)
                at = find(newline, at + 1)  # type: ignore[arg-type]
            self._line_starts = starts
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        if allow_implicit_module and self._current_token.kind is MLIRTokenKind.EOF:
            # Nothing but blanks and comments: an empty module, as mlir-opt reads it (xDSL: "Could
            # not parse entire input!").
            module = ModuleOp([])
            module.location = FileLineColLoc(
                StringAttr(self.lexer.input.name), IntAttr(1 + self.line_offset), IntAttr(1)
            )
            return module
        try:
            module = super().parse_module(allow_implicit_module)
        except (ValueError, OverflowError, VerifyException) as err:  # outside any op: an alias definition
            self.raise_error(str(err), self._current_token.span)
        except RecursionError:  # nesting the limits above do not count (locations, affine maps, dense literals)
            self.raise_error(
                "nesting too deep: the input nests brackets in one another more deeply than the parser can follow",
                self._current_token.span,
            )
        first = module.ops.first
        if isinstance(module.location, UnknownLoc) and first is not None:
            module.location = first.location  # an implicit module: errors on it name where it starts
        return module


def located_text(module: ModuleOp, name: str) -> tuple[str, ModuleOp]:
    """
    The module's text, and a copy of the module whose ops carry their `name:line:col` in that
    text, where `LocatedParser` would locate them: what parsing the text gives, without the parse
    (a compiled function's lowering starts from its imported module's text, 10 to 20 times the
    cost of a copy).
    """
    copy = module.clone()
    stream = io.StringIO()
    printer = _LocatingPrinter(stream=stream)
    printer.print_op(copy)
    filename = StringAttr(name)
    for op, line, column in printer.positions:
        op.location = FileLineColLoc(filename, IntAttr(line), IntAttr(column))
    return stream.getvalue(), copy


class _LocatingPrinter(Printer):
    """A printer that records where each op starts: its 1-based line and column."""

    def __init__(self, stream: io.StringIO) -> None:
        super().__init__(stream=stream)
        self.positions: list[tuple[Operation, int, int]] = []

    def print_op(self, op: Operation) -> None:
        self.positions.append((op, self._current_line + 1, self._current_column + 1))
        super().print_op(op)


def decode_source(data: bytes, name: str, line_offset: int = 0) -> str:
    """The text of a source file; invalid UTF-8 is a ParseError at the offending byte's line and column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        text = data.decode("utf-8", errors="replace")
        at = len(data[: err.start].decode("utf-8", errors="replace"))
        span = Span(at, at + 1, Input(text, name), line_offset)
        raise ParseError(span, f"the file is not valid UTF-8 ({err.reason}: byte 0x{data[err.start]:02x})") from None


def location_of(op: Operation) -> str | None:
    """`file:line:col` of `op`, or of its closest ancestor that has one."""
    current: Operation | None = op
    while current is not None:
        loc = current.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        current = current.parent_op()
    return None


def located(op: Operation, message: str) -> str:
    """`file:line:col: error: 'op.name' op message`."""
    prefix = location_of(op) or "<unknown>"
    return f"{prefix}: error: '{op.name}' op {message}"


class LocatedError(DiagnosticException):
    """A verifier, pass or runtime error that names the op's source position."""

    def __init__(self, op: Operation, message: str):
        super().__init__(located(op, message))
        self.op = op
        self.message = message


class UserError(DiagnosticException, ValueError):
    """
    Something the user gave is wrong and no op of the program is to blame: a file, an option, the
    process job. Tools print it as `tool: error: message`; the message says what is wrong with what.
    """


def verify_located(module: ModuleOp) -> None:
    """
    `module.verify()` plus dominance, but the error names the first failing op's location.

    Cost: linear in the module (each op verified once; the walk that finds the failing op runs
    only after a failure), plus `check_dominance`.
    """
    try:
        module.verify()
    except VerifyException as err:
        for op in module.walk():
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException as inner:
                raise LocatedError(op, _strip_prefix(str(inner))) from None
        raise LocatedError(module, _strip_prefix(str(err))) from None
    check_dominance(module)


def check_dominance(module: ModuleOp) -> None:
    """
    Every operand is defined before its use, in the same block or an enclosing one (single-block
    regions, as all of ours are). xDSL's verifier does not check this, and a pass that moves or
    clones ops could otherwise produce a program that reads a value never produced.

    Cost: one visit of each op and a set lookup per operand. The values in scope are kept while
    walking: a block's arguments and, after each op (and its regions), the op's results; they
    leave the scope with their block. Recursion follows the nesting of regions only.
    """
    in_scope: set[SSAValue] = set()

    def check_block(block: Block) -> None:
        entered: list[SSAValue] = list(block.args)
        in_scope.update(entered)
        for user in block.ops:
            for k, value in enumerate(user.operands):
                if value not in in_scope:
                    name = f"%{value.name_hint}" if value.name_hint else "a value"
                    raise LocatedError(user, f"operand #{k} ({name}) is used before it is defined, or out of its scope")
            for region in user.regions:
                for inner in region.blocks:
                    check_block(inner)
            in_scope.update(user.results)
            entered.extend(user.results)
        in_scope.difference_update(entered)

    for region in module.regions:
        for block in region.blocks:
            check_block(block)


def _strip_prefix(message: str) -> str:
    return message.removeprefix("Operation does not verify: ")


def format_parse_error(error: ParseError) -> str:
    """`file:line:col: error: message` followed by the source line and a caret."""
    where = error.span.get_location()
    context = error.span.print_with_context().split("\n", 1)[1].rstrip("\n")
    return f"{where}: error: {error.msg}\n{context}"


def internal_error(tool: str, error: BaseException, doing: str | None = None) -> str:
    """
    The one line a tool prints for an exception that is a bug of ours, not a diagnostic: what was
    raised, the op being processed when one can be found (in the innermost frame that holds one),
    what the tool was doing, and how to see the traceback.
    """
    if isinstance(error, RecursionError):
        what = "the module is nested too deeply to process (Python's recursion limit)"
    else:
        text = str(error).strip().splitlines()
        what = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    op = _innermost_op(error)
    where = f" (at '{op.name}', {location_of(op) or 'no location'})" if op is not None else ""
    during = f" while {doing}" if doing else ""
    return (
        f"{tool}: internal error: {what}{where}{during}; this is a bug in hir, not in the input: "
        f"set {TRACEBACK_VARIABLE}=1 to see the traceback"
    )


TRACEBACK_VARIABLE = "HIR_TRACEBACK"
"""Set to 1 to get the Python traceback of an internal error instead of its one-line summary."""


def _innermost_op(error: BaseException) -> Operation | None:
    """The op a local variable of the innermost frame that has one refers to (modules and functions last)."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    fallback: Operation | None = None
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            if isinstance(value, Operation):
                if value.name not in ("builtin.module", "func.func"):
                    return value
                fallback = fallback or value
    return fallback
