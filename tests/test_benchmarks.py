"""
The benchmarks run on GPUs, but stay importable on CPU: their command lines parse, the steps of
benchmarks/run_all.py name flags the benchmarks have, the runner writes its logs and summary,
host_overhead.py runs (small) on CPU, and gemm_rs.py and matmul_ar.py run every variant (small)
on 2 CPU processes over gloo, each result checked.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hir.tools.hir_run import build_parser as hir_run_parser

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def benchmark(name: str) -> ModuleType:
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # the benchmarks import one another as scripts do
    return importlib.import_module(name)


@pytest.mark.parametrize(
    "name",
    [
        "ag_gemm",
        "gemm_rs",
        "matmul_ar",
        "host_overhead",
        "race_check_cost",
        "timeline",
        "run_all",
        "compile_time",
        "tp_mlp",
        "tp_layer",
        "attention_block",
        "kv_cache_decode",
        "segment_policies",
        "model_blocks",
    ],
)
def test_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        benchmark(name).build_parser().parse_args(["--help"])
    assert exit.value.code == 0
    assert capsys.readouterr().out.startswith("usage:")


def test_every_step_command_parses() -> None:
    """A typo in a step's flags fails here, not after an hour on the GPUs."""
    run_all = benchmark("run_all")
    parsers = {
        f"benchmarks/{name}.py": benchmark(name).build_parser()
        for name in (
            "ag_gemm",
            "gemm_rs",
            "matmul_ar",
            "host_overhead",
            "race_check_cost",
            "compile_time",
            "tp_mlp",
            "tp_layer",
            "attention_block",
            "kv_cache_decode",
            "segment_policies",
            "model_blocks",
        )
    }
    checked = 0
    for step in run_all.STEPS:
        for command in step.commands:
            argv = run_all.resolve(command, 2, Path("out"), step.quick)
            script = next((a for a in argv if a in parsers or a == "hir.tools.hir_run"), None)
            if script is None:
                continue
            rest = argv[argv.index(script) + 1 :]
            parser = hir_run_parser() if script == "hir.tools.hir_run" else parsers[script]
            parser.parse_args(rest)  # exits on an unknown flag
            checked += 1
    assert checked >= 7


def test_run_all_writes_logs_and_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_all = benchmark("run_all")
    py = sys.executable
    steps = (
        run_all.Step(
            "table", "prints a table", ((py, "-c", "import os; print('M=1: 0.5 ms', os.environ['NCCL_NVLS_ENABLE'])"),)
        ),
        run_all.Step("broken", "fails", ((py, "-c", "import sys; print('partial'); sys.exit(3)"),)),
        run_all.Step("slow", "outlasts its timeout", ((py, "-c", "import time; time.sleep(60)"),)),
        run_all.Step("two-gpus", "needs two processes", (run_all.torchrun("2", "x.py"),)),
    )
    monkeypatch.setattr(run_all, "STEPS", steps)
    monkeypatch.setattr(run_all, "PROBES", [[py, "-c", "print('GPU 0: some GPU')"]])
    assert run_all.main(["--gpus", "1", "--out", str(tmp_path), "--timeout", "1"]) == 1
    summary = (tmp_path / "summary.md").read_text()
    assert "## table: ok" in summary
    assert "M=1: 0.5 ms 0" in summary  # the output, run with NVLink multicast off
    assert "## broken: FAILED (1 of 1 commands)" in summary
    assert "partial" in (tmp_path / "broken.out").read_text()
    assert "## slow: FAILED" in summary
    assert "timed out after 1 s" in (tmp_path / "slow.err").read_text()
    assert "## two-gpus: skipped: needs 2 GPUs" in summary
    assert "GPU 0: some GPU" in (tmp_path / "environment.txt").read_text()


def test_run_all_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    run_all = benchmark("run_all")
    assert run_all.main(["--dry-run", "--gpus", "4", "--only", "gemm-rs,nccl-examples"]) == 0
    lines = capsys.readouterr().out.splitlines()
    commands = [line for line in lines if not line.startswith("#")]
    assert len(commands) == 2
    assert "--pipelines nccl,copy-engine," in commands[0]
    assert all("NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1" in c for c in commands)
    assert "--nproc-per-node 2 tests/distributed_driver.py" in commands[0]  # the examples are 2-device
    assert "--nproc-per-node 4 benchmarks/gemm_rs.py" in commands[1]


def test_host_overhead_on_cpu(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    host_overhead = benchmark("host_overhead")
    argv = ["host_overhead.py", "--device", "cpu", "--iterations", "8", "--width", "16", "--repeats", "3"]
    monkeypatch.setattr(sys, "argv", [*argv, "--warmup", "1", "--chain", "20"])
    host_overhead.main()  # checks its results against torch.relu and the chain's sum first
    out = capsys.readouterr().out
    assert "104 hir ops executed per run (4 + 8 per iteration of the fork and main loops, 8 outside them)" in out
    assert "ratio hir/hand (host, median of per-turn ratios):" in out
    assert "straight-line chain of 20 arith.addi" in out


@pytest.mark.distributed
@pytest.mark.parametrize("name", ["gemm_rs", "matmul_ar"])
def test_row_parallel_benchmarks_on_cpu(name: str, tmp_path: Path) -> None:
    """Every default variant of the benchmark runs on 2 gloo ranks and matches the reference."""
    from ranks import run_ranks

    argv = ["--device", "cpu", "--sizes", "32x16", "--k", "32", "--reps", "1", "--warmup", "1"]
    result = run_ranks([str(BENCHMARKS / f"{name}.py"), *argv], timeout=120)
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr[-3000:]}"
    assert result.returncode == 0, output
    rows = dict(re.findall(r"^  (\S.*?) +[0-9.]+  x.*\[([0-9.e+-]+)\]", result.stdout, re.MULTILINE))
    variants = benchmark(name).VARIANTS
    assert len([r for r in rows if r.startswith("hir ")]) == len(variants), output
    assert all(float(error) == 0.0 for error in rows.values()), output  # f32, two terms: exact
    assert "WRONG" not in result.stdout, output
