"""
docs/tutorial.md runs as written: its `sh` and `python` blocks, in order, in one fresh folder (the
python blocks share one namespace, as one session would; the shell blocks run with bash, the
checkout's tools on PATH). A block that starts with `# GPU host only` runs with `--dry-run`
added to each command, which checks the command without a GPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial.md"
GPU_ONLY = "# GPU host only"
BLOCK = re.compile(r"^```(sh|python)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    return [(match.group(1), match.group(2)) for match in BLOCK.finditer(TUTORIAL.read_text())]


def test_the_tutorial_has_its_steps() -> None:
    kinds = [kind for kind, _ in blocks()]
    assert kinds.count("python") >= 2
    assert kinds.count("sh") >= 4
    text = "\n".join(code for _, code in blocks())
    for command in ("hir-opt", "hir-run", "--profile", "benchmarks/run_all.py"):
        assert command in text, command


def test_the_tutorial_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # As from the checkout's root: the benchmarks by their path, the files written next to them.
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    namespace: dict[str, object] = {"__name__": "__tutorial__"}
    for number, (kind, code) in enumerate(blocks(), 1):
        where = f"docs/tutorial.md, block {number} ({kind})"
        if kind == "python":
            exec(compile(code, where, "exec"), namespace)
            continue
        if code.startswith(GPU_ONLY):
            lines = [line for line in code.splitlines()[1:] if line.strip() and not line.startswith("#")]
            code = "\n".join(f"{line} --dry-run" for line in lines)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{where} failed:\n{code}\n{done.stdout}\n{done.stderr}"
    assert "fusion.matmul" in (tmp_path / "mlp.mlir").read_text()
    assert "hir.launch" in (tmp_path / "mlp.hir.mlir").read_text()
    assert (tmp_path / "prof" / "trace.json").is_file()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return  # the run says how to get the PNG; setup.sh installs matplotlib
    assert (tmp_path / "prof" / "timeline.png").read_bytes().startswith(b"\x89PNG")
