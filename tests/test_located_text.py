"""
`diagnostics.located_text`: a module's text and a copy whose ops are located where parsing that
text locates them (`hir.compile` lowers that copy instead of parsing its `fusion_text`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import hir
from hir.diagnostics import located_text

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").rglob("*.mlir"))


def _locations(module: object) -> list[tuple[str, str]]:
    return [(op.name, str(op.location)) for op in module.walk()]  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(REPO)) for p in EXAMPLES])
def test_the_copy_is_located_as_the_parse_of_its_text(path: Path) -> None:
    module = hir.parse_file(path)
    text, copy = located_text(module, "<copy>")
    assert text == str(module)
    parsed = hir.parse(text, "<copy>")
    assert _locations(copy) == _locations(parsed)
    assert all(op.location == parsed_op.location for op, parsed_op in zip(copy.walk(), parsed.walk()))
    assert _locations(module) != _locations(copy)  # the module itself keeps its own locations


def test_an_imported_block_is_located_as_its_parsed_text() -> None:
    block = torch.nn.Sequential(
        torch.nn.LayerNorm(16), torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16)
    )
    module = hir.import_torch(block, (torch.randn(4, 16),))
    text, copy = located_text(module, "<Sequential>")
    assert _locations(copy) == _locations(hir.parse(text, "<Sequential>"))
    assert len(list(copy.walk())) > 5
