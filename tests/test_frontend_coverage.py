"""
The frontend's coverage of torch code (tools/frontend_coverage.py): every case that imports
compiles and matches eager torch on random inputs; the ones it refuses are located errors; the
30 ops common in transformer code work (at least 28 of them); docs/frontend.md's coverage table
is up to date. One pass over the cases does all of it (each is captured once).
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
    "torch.special.i0": "aten.i0.default is not supported",
    "torch.linalg.cholesky": "aten.linalg_cholesky_ex.default is not supported",
    "torch.fft.rfft": "Fourier transforms (torch.fft) are not supported",
    "x[mask]": "a boolean mask selects a data-dependent shape",
    "torch.where(mask) (one argument)": "aten.nonzero.default returns as many values as its input's data selects",
    "torch.exp (complex)": "aten.exp.default on complex tensors is not supported",
    "torch.bincount": "aten.bincount.default returns a result whose shape depends on its input's values",
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


def _run(case: Case) -> str:
    """The case's row: compiled and checked against eager on two inputs (`yes`), or the refusal."""
    if case.name in UNSUPPORTED:
        pattern = rf"frontend_coverage.py:\d+: error: .*{re.escape(UNSUPPORTED[case.name])}"
        with pytest.raises(FrontendError, match=pattern) as err:
            hir.import_torch(case.fn, inputs_of(case))
        return frontend_coverage.refusal(err.value)
    compiled = hir.compile(case.fn, inputs_of(case))
    for seed in (0, 1):  # compiled once, called on other tensors too
        args = inputs_of(case, seed)
        with torch.no_grad():
            expected = case.fn(*args)
        torch.testing.assert_close(compiled(*args), expected, msg=lambda m, name=case.name: f"{name}: {m}")
    return "yes"


def test_every_case_matches_eager_or_is_refused_and_the_table_is_up_to_date() -> None:
    statuses = [_run(case) for case in CASES]
    section = frontend_coverage.render(statuses=statuses)
    assert frontend_coverage.updated(DOC.read_text(), section) == DOC.read_text(), (
        f"docs/frontend.md: the coverage section is stale: regenerate it with `{frontend_coverage.COMMAND}`"
    )


def test_the_transformer_ops_compile() -> None:
    working = [name for name in TRANSFORMER_OPS if name not in UNSUPPORTED]
    assert len(set(TRANSFORMER_OPS)) == 30
    assert len(working) >= 28
    assert all(name in BY_NAME for name in TRANSFORMER_OPS)


def test_the_generator_writes_and_checks_the_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frontend_coverage, "CASES", (BY_NAME["torch.stack"], BY_NAME["torch.special.i0"]))
    doc = tmp_path / "frontend.md"
    doc.write_text(f"# Title\n\n{frontend_coverage.BEGIN}\n{frontend_coverage.END}\n\nmore text\n")
    assert frontend_coverage.main(["--check", str(doc)]) == 1
    assert "the coverage section is stale: regenerate it with" in capsys.readouterr().err
    assert frontend_coverage.main(["--write", str(doc)]) == 0
    text = doc.read_text()
    assert "| `torch.stack` | yes |" in text
    assert "| `torch.special.i0` | no: aten.i0.default is not supported" in text
    assert text.startswith("# Title\n\n<!-- coverage:begin -->")
    assert text.endswith("<!-- coverage:end -->\n\nmore text\n")
    assert frontend_coverage.main(["--check", str(doc)]) == 0
