"""
The malformed-input corpus (tests/corpus/malformed/*.mlir): hand-written adversarial inputs, one
per file, each recording what hir-opt must say about it. A file with `expected-error`
annotations must give exactly those located diagnostics (`hir-opt --verify-diagnostics`); a file
marked `// Accepted:` must be accepted; one marked `// Refused: MESSAGE` (a bad pass option,
which has no position in the file) must exit 1 with `hir-opt: error: ... MESSAGE`. An optional
first line `// ARGS: ...` adds hir-opt arguments (a pipeline). Every file runs in this process with a time budget: no Python exception
(an internal error re-raises, HIR_TRACEBACK=1), no hang, no wrong accept.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from fuzz.mutations import run_hir_opt

CORPUS = Path(__file__).resolve().parent / "corpus" / "malformed"
FILES = sorted(CORPUS.glob("*.mlir"))
BUDGET = 30.0
"""Seconds one file may take (tens of milliseconds when all is well; more on a loaded machine)."""


def arguments(text: str) -> list[str]:
    first = text.split("\n", 1)[0]
    return shlex.split(first.removeprefix("// ARGS:")) if first.startswith("// ARGS:") else []


def test_the_corpus_is_large_and_every_file_says_what_it_expects() -> None:
    assert len(FILES) >= 150
    for path in FILES:
        text = path.read_text()
        markers = ("expected-error" in text, "// Accepted:" in text, "// Refused:" in text)
        assert sum(markers) == 1, f"{path.name}: say what is expected"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_malformed_input(path: Path) -> None:
    text = path.read_text()
    result = run_hir_opt(path, ["--verify-diagnostics", *arguments(text)], BUDGET)
    if "// Refused: " in text:
        message = text.split("// Refused: ", 1)[1].split("\n", 1)[0]
        assert result.status == 1, f"{path.name} was accepted"
        assert result.stderr.startswith("hir-opt: error: "), result.stderr
        assert message in result.stderr, result.stderr
        return
    assert result.status == 0, f"{path.name}:\n{result.stderr}"
    assert "error" not in result.stderr, f"{path.name}:\n{result.stderr}"
