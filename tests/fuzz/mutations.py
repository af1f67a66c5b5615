"""
Invalid-input fuzzing: textual mutations of valid programs, and `hir-opt` run in process on them.

`mutants(base)` draws 1-3 edits of a program's tokens: delete, duplicate or swap tokens, change a
number, an element type, a keyword or attribute value (`serial`/`stream`/`didx`, `dims`, `perm`,
`mesh`, an op name) or an SSA name, or insert a token. `run_hir_opt(text, pipeline)` runs
hir-opt's `main` in this process (no interpreter start per example) under a time budget and
returns its exit status and output. The test (tests/test_fuzz_invalid_input.py) requires of every
mutant a located error (`file:line:col: error:`) or a valid program that then lowers and runs
correctly, never a Python traceback and never a hang.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from hypothesis import strategies as st

TOKEN = re.compile(
    r"""
    (?P<string>"[^"\n]*")
  | (?P<shape>(?:(?:\d+|\?)x)+\w+)
  | (?P<ssa>%[\w.$-]+)
  | (?P<symbol>@[\w.$]+)
  | (?P<number>-?\d+(?:\.\d+)?(?:e-?\d+)?)
  | (?P<word>[A-Za-z_][\w.$]*)
  | (?P<punct>->|::|[^\s\w])
  | (?P<space>\s+)
    """,
    re.VERBOSE,
)
ELEMENT_TYPE_WORDS = ("f32", "f64", "f16", "bf16", "i1", "i8", "i16", "i32", "i64", "index", "i0", "ui8")
KEYWORDS = (
    "serial",
    "stream",
    "didx",
    "mesh",
    "dims",
    "perm",
    "axis",
    "chunks",
    "root",
    "into",
    "ins",
    "outs",
    "as",
    "to",
    "step",
    "symmetric",
    "tensor",
    "memref",
    "strided",
    "offset",
    "#fusion.parallel",
    "fusion.add",
    "fusion.matmul",
    "fusion.sum",
    "fusion.set",
    "fusion.segment",
    "fusion.yield",
    "hir.launch",
    "hir.for",
    "hir.yield",
    "hir.allocate",
    "hir.alias_select",
    "hir.allgather",
    "hir.wait",
    "hir.synchronize",
    "hir.set_current_stream",
    "func.return",
    "arith.constant",
)
NUMBERS = (0, 1, -1, 2, 3, 7, 64, 2**31, 2**63, 10**30)
PUNCTUATION = ("(", ")", "[", "]", "{", "}", "<", ">", ",", ":", "=", "->", "x", "?")
MUTATIONS = ("delete", "duplicate", "swap", "number", "type", "keyword", "ssa", "insert")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str


def tokenize(text: str) -> list[Token]:
    """The tokens of `text`, whitespace included; the extents and element type of a shape (`4x8xf32`) apart."""
    tokens = []
    for m in TOKEN.finditer(text):
        if m.lastgroup == "shape":
            for part in re.split(r"(x)", m.group()):
                tokens.append(Token("number" if part.isdigit() else "punct" if part == "x" else "word", part))
        else:
            tokens.append(Token(m.lastgroup or "punct", m.group()))
    return tokens


@st.composite
def mutants(draw: st.DrawFn, base: str) -> tuple[str, list[str]]:
    """`base` with 1-3 edits, and what they were (for the report)."""
    tokens = tokenize(base)
    edits: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        solid = [k for k, t in enumerate(tokens) if t.kind != "space"]
        if not solid:
            break
        kind = draw(st.sampled_from(MUTATIONS))
        k = draw(st.sampled_from(solid))
        old = tokens[k].text
        if kind == "delete":
            del tokens[k]
        elif kind == "duplicate":
            tokens.insert(k, tokens[k])
        elif kind == "swap":
            j = draw(st.sampled_from(solid))
            tokens[k], tokens[j] = tokens[j], tokens[k]
            old = f"{old} <-> {tokens[k].text}"
        elif kind == "number":
            numbers = [j for j in solid if tokens[j].kind == "number"] or [k]
            k = draw(st.sampled_from(numbers))
            old = tokens[k].text
            value = (
                draw(st.sampled_from(NUMBERS)) if draw(st.booleans()) else _int(old) + draw(st.sampled_from((-1, 1)))
            )
            tokens[k] = Token("number", str(value))
        elif kind == "type":
            types = [j for j in solid if tokens[j].text in ELEMENT_TYPE_WORDS] or [k]
            k = draw(st.sampled_from(types))
            old = tokens[k].text
            tokens[k] = Token("word", draw(st.sampled_from(ELEMENT_TYPE_WORDS)))
        elif kind == "keyword":
            words = [j for j in solid if tokens[j].kind == "word"] or [k]
            k = draw(st.sampled_from(words))
            old = tokens[k].text
            tokens[k] = Token("word", draw(st.sampled_from(KEYWORDS)))
        elif kind == "ssa":
            names = [*sorted({t.text for t in tokens if t.kind == "ssa"}), "%undefined", "%0", "%arg0"]
            uses = [j for j in solid if tokens[j].kind == "ssa"] or [k]
            k = draw(st.sampled_from(uses))
            old = tokens[k].text
            tokens[k] = Token("ssa", draw(st.sampled_from(names)))
        else:
            tokens.insert(k, Token("punct", draw(st.sampled_from(PUNCTUATION + KEYWORDS))))
        edits.append(f"{kind} at token {k} ({old!r} -> {tokens[k].text!r})" if k < len(tokens) else kind)
    return "".join(t.text for t in tokens), edits


def _int(text: str) -> int:
    try:
        return int(float(text))
    except ValueError:
        return 0


class Hang(Exception):
    """The time budget of one example ran out."""


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raises `Hang` in this thread when `seconds` pass (only the main thread can be interrupted)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise Hang(f"no result within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class ToolRun:
    status: int
    stdout: str
    stderr: str


def run_hir_opt(path: Path, args: list[str], budget: float) -> ToolRun:
    """
    `hir-opt PATH ARGS` in this process; an exception other than SystemExit propagates (hir-opt
    would print `hir-opt: internal error: ...`, and with HIR_TRACEBACK=1, set here, the traceback).
    """
    from hir.diagnostics import TRACEBACK_VARIABLE
    from hir.tools.hir_opt import main

    out, err = io.StringIO(), io.StringIO()
    status = 0
    tracebacks = mock.patch.dict(os.environ, {TRACEBACK_VARIABLE: "1"})
    with time_budget(budget), tracebacks, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(path), *args])
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else 1
    return ToolRun(status, out.getvalue(), err.getvalue())


def located_error(output: str, path: Path) -> bool:
    """Whether the output holds an MLIR-style located error naming the input file."""
    return re.search(rf"^{re.escape(str(path))}:\d+:\d+: error: ", output, re.MULTILINE) is not None
