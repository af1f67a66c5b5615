"""
`--verify-diagnostics`: the diagnostics of a chunk must be exactly the ones its annotations expect,
as in mlir-opt:

    // expected-error@+1 {{operands must have the same shape}}
    %0 = fusion.add %a, %b : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32>

`expected-error|warning|note|remark`, then `@+N` / `@-N` (lines below / above), `@above` / `@below`
(the nearest line above / below that is not an annotation), `@unknown` (a diagnostic without a
location) or nothing (this line), then `{{text}}`: a substring of the message, or with
`expected-error-re` a message whose `{{...}}` parts are regular expressions. A diagnostic no
annotation expects and an annotation no diagnostic matches are errors, in mlir-opt's words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.utils.exceptions import DiagnosticException, MultipleSpansParseError, ParseError

SEVERITIES = ("error", "warning", "note", "remark")


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    message: str
    file: str | None = None  # None: no location
    line: int = 0
    column: int = 0

    @property
    def location(self) -> str | None:
        return f"{self.file}:{self.line}:{self.column}" if self.file is not None else None


_SEVERITY = rf"(?P<severity>{'|'.join(SEVERITIES)})"
_LOCATED = re.compile(rf"^(?P<file>.+):(?P<line>\d+):(?P<column>\d+): {_SEVERITY}: (?P<message>.*)$")
_UNLOCATED = re.compile(rf"^(?:<unknown>: )?{_SEVERITY}: (?P<message>.*)$")


def diagnostics_of(error: ParseError | DiagnosticException) -> list[Diagnostic]:
    """The diagnostic an exception reports, then its notes (a parse error's other spans)."""
    if isinstance(error, ParseError):
        where = error.span.get_location()
        found = [Diagnostic("error", error.msg, where.file, where.line, where.col)]
        if isinstance(error, MultipleSpansParseError):
            for span, message in error.refs:
                at = span.get_location()
                text = message or (error.ref_text or "").strip().rstrip(":") or "see here"
                found.append(Diagnostic("note", text, at.file, at.line, at.col))
        return found
    # Our verifier and passes say `file:line:col: error: message` (see hir.diagnostics), notes on
    # the lines after it; xDSL's own exceptions have no location. The IR dump xDSL appends after
    # a blank line is not part of the diagnostic.
    lines = str(error).split("\n\n")[0].strip().splitlines() or [type(error).__name__]
    found = [_parse_line(lines[0], default_severity="error")]
    found += [d for d in (_parse_line(line) for line in lines[1:]) if d.severity == "note"]
    return found


def _parse_line(line: str, default_severity: str = "") -> Diagnostic:
    if match := _LOCATED.match(line):
        return Diagnostic(match["severity"], match["message"], match["file"], int(match["line"]), int(match["column"]))
    if match := _UNLOCATED.match(line):
        return Diagnostic(match["severity"], match["message"])
    return Diagnostic(default_severity, line.strip())


@dataclass
class Expectation:
    severity: str
    text: str
    line: int | None  # the line the diagnostic must be on; None: a diagnostic without location
    at_line: int  # where the annotation is written
    at_column: int
    pattern: re.Pattern[str] | None = None  # for expected-*-re
    matched: bool = field(default=False, compare=False)

    def matches(self, message: str) -> bool:
        return self.pattern.search(message) is not None if self.pattern else self.text in message


_ANNOTATION = re.compile(
    r"expected-(?P<severity>error|note|remark|warning)(?P<re>-re)? *"
    r"(?:@(?P<where>[+-][0-9]+|above|below|unknown))? *\{\{(?P<text>.*)\}\}$"
)
# What looks like the start of an annotation: one that then fails to match is a mistake, not prose.
_ANNOTATION_START = re.compile(r"expected-(?:error|note|remark|warning)(?:-re)?(?=@|\s*\{)")


@dataclass
class Source:
    """The text of one chunk of an input, and where it starts in the file (line 1 of the chunk is `first_line`)."""

    name: str
    text: str
    first_line: int = 1

    def line_text(self, line: int) -> str | None:
        lines = self.text.split("\n")
        k = line - self.first_line
        return lines[k] if 0 <= k < len(lines) else None


class DiagnosticVerifier:
    """Checks the diagnostics of one chunk against its annotations; `problems` are the failures, as messages."""

    def __init__(self, source: Source):
        self.source = source
        self.problems: list[str] = []
        self.expectations = self._scan()

    def _scan(self) -> list[Expectation]:
        expectations: list[Expectation] = []
        lines = self.source.text.split("\n")
        last_plain_line = self.source.first_line  # the last line without an annotation
        waiting_for_plain_line: list[Expectation] = []  # @below annotations
        for k, text in enumerate(lines):
            line = self.source.first_line + k
            match = _ANNOTATION.search(text.rstrip())
            if match is None:
                if start := _ANNOTATION_START.search(text):
                    self.problems.append(
                        self._at(
                            line,
                            start.start() + 1,
                            "malformed annotation, expected e.g. `expected-error@+1 {{message}}`",
                        )
                    )
                for e in waiting_for_plain_line:
                    e.line = line
                waiting_for_plain_line.clear()
                last_plain_line = line
                continue
            expectation = Expectation(match["severity"], match["text"], line, line, match.start() + 1)
            if match["re"]:
                expectation.pattern = self._regex(expectation)
                if expectation.pattern is None:
                    continue
            where = match["where"] or ""
            if where == "unknown":
                expectation.line = None
            elif where == "above":
                expectation.line = last_plain_line
            elif where == "below":
                expectation.line = self.source.first_line + len(lines) - 1  # if no plain line follows
                waiting_for_plain_line.append(expectation)
            elif where:
                expectation.line = line + int(where)
            expectations.append(expectation)
        return expectations

    def _regex(self, expectation: Expectation) -> re.Pattern[str] | None:
        """`literal{{regex}}literal` as one regular expression; None (and a problem) if it does not compile."""
        parts = re.split(r"\{\{(.*?)\}\}", expectation.text)
        try:
            return re.compile("".join(part if k % 2 else re.escape(part) for k, part in enumerate(parts)))
        except re.error as err:
            self.problems.append(
                self._at(expectation.at_line, expectation.at_column, f"invalid regular expression in annotation: {err}")
            )
            return None

    def process(self, diagnostic: Diagnostic) -> None:
        """Marks the annotation that expects `diagnostic`, or records it as unexpected."""
        if diagnostic.file is not None and diagnostic.file != self.source.name:
            candidates: list[Expectation] = []  # a location in another file: nothing here can expect it
        else:
            line = diagnostic.line if diagnostic.file is not None else None
            candidates = [e for e in self.expectations if e.line == line and e.matches(diagnostic.message)]
        for e in candidates:
            if e.severity == diagnostic.severity:
                e.matched = True
                return
        if candidates:
            near = candidates[-1]
            self.problems.append(
                self._at(
                    near.at_line,
                    near.at_column,
                    f"'{diagnostic.severity}' diagnostic emitted when expecting a '{near.severity}'",
                )
            )
            return
        message = f"unexpected {diagnostic.severity}: {diagnostic.message}"
        if diagnostic.file is None:
            self.problems.append(f"error: {message}")
        else:
            self.problems.append(self._at(diagnostic.line, diagnostic.column, message, diagnostic.file))

    def finish(self) -> list[str]:
        """All problems, after the annotations that nothing matched are added."""
        for e in self.expectations:
            if not e.matched:
                self.problems.append(
                    self._at(e.at_line, e.at_column, f'expected {e.severity} "{e.text}" was not produced')
                )
        return self.problems

    def _at(self, line: int, column: int, message: str, file: str | None = None) -> str:
        """`file:line:col: error: message`, then the source line and a caret under the column."""
        text = f"{file or self.source.name}:{line}:{column}: error: {message}"
        if file in (None, self.source.name) and (source_line := self.source.line_text(line)) is not None:
            text += f"\n{source_line}\n{' ' * (column - 1)}^"
        return text


def has_annotations(text: str) -> bool:
    """Whether a source holds any `expected-*` annotation (well-formed or not)."""
    return _ANNOTATION_START.search(text) is not None


def verify_chunk(source: Source, diagnostics: Sequence[Diagnostic]) -> list[str]:
    """The failures of one chunk: unexpected diagnostics, then annotations that were not matched."""
    verifier = DiagnosticVerifier(source)
    for diagnostic in diagnostics:
        verifier.process(diagnostic)
    return verifier.finish()
