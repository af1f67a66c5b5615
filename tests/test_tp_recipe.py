"""
docs/frontend.md's complete tensor-parallel recipe, run as the page gives it: the Python block of
"A complete recipe: torchrun" saved as a script and started on 2 gloo ranks, so that the
documented code stays runnable and correct.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ranks import run_ranks
from test_distributed import _output

DOC = Path(__file__).resolve().parent.parent / "docs" / "frontend.md"


def recipe() -> str:
    """The first Python block after the recipe's heading."""
    text = DOC.read_text()
    section = text[text.index("### A complete recipe: torchrun") :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "docs/frontend.md: the recipe has no python block"
    return match.group(1)


def test_recipe_is_a_whole_script() -> None:
    code = recipe()
    compile(code, "tp_layer_recipe.py", "exec")  # a syntax error fails here, before any rank starts
    for needed in ("dist.init_process_group", "hir.compile(", "param_layouts=", 'if __name__ == "__main__":'):
        assert needed in code


@pytest.mark.distributed
def test_recipe_runs_on_two_gloo_ranks(tmp_path: Path) -> None:
    script = tmp_path / "tp_layer_recipe.py"
    script.write_text(recipe())
    result = run_ranks([str(script)], timeout=300)
    assert result.returncode == 0, _output(result)
    assert "TP layer on 2 ranks: every rank's rows match the unsharded layer" in result.stdout, _output(result)
    assert "trained 3 steps: rank 0's loss" in result.stdout, _output(result)
