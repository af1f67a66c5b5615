"""
The frontend's coverage of torch code (tools/frontend_coverage.py): every case that imports
compiles and matches eager torch on random inputs; the ones it refuses are located errors; the
30 ops common in transformer code work (at least 28 of them); docs/frontend.md's coverage table
is up to date.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import hir
from hir.frontend.errors import FrontendError
from hir.tools import frontend_coverage
from hir.tools.frontend_coverage import CASES, Case, inputs_of

DOC = Path(__file__).resolve().parent.parent / "docs" / "frontend.md"

UNSUPPORTED = {
    "torch.special.expm1": "aten.expm1.default is not supported",
    "Tensor.scatter_add": "aten.scatter_add.default is not supported",
    "torch.prod": "aten.prod.dim_int is not supported",
    "torch.cumprod": "aten.cumprod.default is not supported",
    "torch.diagonal": "aten.diagonal.default is not supported",
    "x[mask]": "a boolean mask selects a data-dependent shape",
}
"""Cases the fusion dialect has no op for (their rows say `no`), and the errors they get."""

TRANSFORMER_OPS = (
    "torch.stack", "Tensor.split", "Tensor.chunk", "torch.gather", "torch.index_select", "Tensor.masked_fill",
    "torch.tril", "torch.triu", "torch.arange", "torch.clamp", "F.softplus", "torch.einsum", "torch.addmm",
    "torch.baddbmm", "Tensor.max(dim)", "torch.argmax", "torch.cumsum", "Tensor.repeat", "Tensor.expand_as",
    "torch.flip", "Tensor.var", "torch.linalg.vector_norm", "torch.floor_divide", "torch.minimum", "F.embedding",
    "F.silu(inplace=True)", "Tensor.add_, Tensor.mul_", "torch.topk", "torch.cat", "x[idx] (aten.index)",
)  # fmt: skip
"""The ops a user found missing, each as model code calls it."""

BY_NAME = {case.name: case for case in CASES}


def _matches_eager(case: Case) -> None:
    inputs = inputs_of(case)
    compiled = hir.compile(case.fn, inputs)
    for seed in (0, 1):  # compiled once, called on other tensors too
        args = inputs_of(case, seed)
        with torch.no_grad():
            expected = case.fn(*args)
        torch.testing.assert_close(compiled(*args), expected)


@pytest.mark.parametrize("name", [c.name for c in CASES if c.name not in UNSUPPORTED])
def test_case_matches_eager(name: str) -> None:
    _matches_eager(BY_NAME[name])


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_case_is_a_located_error(name: str) -> None:
    case = BY_NAME[name]
    with pytest.raises(FrontendError, match=rf"frontend_coverage.py:\d+: error: .*{re.escape(UNSUPPORTED[name])}"):
        hir.import_torch(case.fn, inputs_of(case))


def test_the_transformer_ops_compile() -> None:
    working = [name for name in TRANSFORMER_OPS if name not in UNSUPPORTED]
    assert len(set(TRANSFORMER_OPS)) == 30
    assert len(working) >= 28
    assert all(name in BY_NAME for name in TRANSFORMER_OPS)


def test_coverage_table_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    assert frontend_coverage.main(["--check", str(DOC)]) == 0, capsys.readouterr().err


def test_a_stale_table_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frontend_coverage, "CASES", (BY_NAME["torch.stack"], BY_NAME["torch.special.expm1"]))
    doc = tmp_path / "frontend.md"
    doc.write_text(f"# Title\n\n{frontend_coverage.BEGIN}\n{frontend_coverage.END}\n\nmore text\n")
    assert frontend_coverage.main(["--check", str(doc)]) == 1
    assert "the coverage section is stale: regenerate it with" in capsys.readouterr().err
    assert frontend_coverage.main(["--write", str(doc)]) == 0
    text = doc.read_text()
    assert "| `torch.stack` | yes |" in text
    assert "| `torch.special.expm1` | no: aten.expm1.default is not supported" in text
    assert text.startswith("# Title\n\n<!-- coverage:begin -->")
    assert text.endswith("<!-- coverage:end -->\n\nmore text\n")
    assert frontend_coverage.main(["--check", str(doc)]) == 0
