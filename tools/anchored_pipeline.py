"""
`--pass-pipeline='builtin.module(cse,stream-lowering{backend=ring})'`: mlir-opt's anchored pipeline
syntax, reduced to hir-opt's `-p` list. Every hir pass is a module pass, so the anchor is
`builtin.module` (or `any`) and a nested op pipeline (`func.func(...)`) is refused with its column.
"""

from __future__ import annotations

import re

from hir.pipeline import PipelineError

ANCHORS = ("builtin.module", "any")
_ANCHOR = re.compile(r"\s*([\w.$-]+)\s*\(")


def module_pipeline(text: str) -> str:
    """The pass list inside `builtin.module(...)`; PipelineError (one line, with the column) otherwise."""
    anchor = _ANCHOR.match(text)
    if anchor is None:
        column = len(text) - len(text.lstrip()) + 1
        raise _error(text, column, "expected the pipeline wrapped in its anchor op, as in 'builtin.module(cse,dce)'")
    if anchor.group(1) not in ANCHORS:
        raise _error(
            text,
            anchor.start(1) + 1,
            f"hir-opt's passes run on the module: the anchor must be 'builtin.module', not '{anchor.group(1)}'",
        )
    opening = anchor.end() - 1
    closing = _closing_paren(text, opening)
    if closing is None:
        raise _error(text, len(text) + 1, f"expected ')' closing the '(' at column {opening + 1}")
    trailing = text[closing + 1 :]
    if trailing.strip():
        column = closing + 2 + len(trailing) - len(trailing.lstrip())
        raise _error(text, column, "expected the end of the pipeline after the anchor's ')'")
    inner = text[opening + 1 : closing]
    nested = _nested_anchor(inner)
    if nested is not None:
        raise _error(
            text,
            opening + 2 + nested,
            "nested op pipelines are not supported: hir passes are module passes, list them in builtin.module(...)",
        )
    return _without_blanks(inner)


def _without_blanks(inner: str) -> str:
    """`inner` without the blanks outside option braces (`cse, dce`), which mlir-opt allows and -p does not."""
    kept, braces = [], 0
    for char in inner:
        braces += (char == "{") - (char == "}")
        if braces > 0 or not char.isspace():
            kept.append(char)
    return "".join(kept)


def _closing_paren(text: str, opening: int) -> int | None:
    """The index of the `)` that closes the `(` at `opening`, skipping `{...}` option text."""
    depth, braces = 0, 0
    for index in range(opening, len(text)):
        char = text[index]
        if char == "{":
            braces += 1
        elif char == "}":
            braces = max(0, braces - 1)
        elif braces == 0 and char == "(":
            depth += 1
        elif braces == 0 and char == ")":
            depth -= 1
            if depth == 0:
                return index
    return None


def _nested_anchor(inner: str) -> int | None:
    """The index in `inner` of a `name(` outside option braces, which would be a nested op pipeline."""
    braces = 0
    for index, char in enumerate(inner):
        if char == "{":
            braces += 1
        elif char == "}":
            braces = max(0, braces - 1)
        elif braces == 0 and char == "(":
            name = re.search(r"[\w.$-]+\s*$", inner[:index])
            return name.start() if name else index
    return None


def _error(text: str, column: int, what: str) -> PipelineError:
    return PipelineError(f"malformed --pass-pipeline '{text}' at column {column}: {what}")
