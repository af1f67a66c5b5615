"""
Outputs on a sub-mesh (docs/multidevice.md, "Outputs on a sub-mesh"): an output whose global
type's mesh leaves a rank out is not held there. On 2 gloo ranks: `Program`, `Session` and
`hir.compile` (tests/sub_mesh_driver.py), and `hir-run --check` / `--outputs` on the send/recv
between the one-device meshes [0] and [1], against eager torch on random data.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from ranks import run_ranks

import hir

TESTS = Path(__file__).resolve().parent
SEND_RECV = TESTS / "resharding" / "send_recv_one_device_meshes.mlir"

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(
        not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo"
    ),
]


def _output(result: object) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"[-4000:]  # type: ignore[attr-defined]


def test_program_session_and_compile_on_2_ranks() -> None:
    result = run_ranks([str(TESTS / "sub_mesh_driver.py")], timeout=180)
    cases = re.findall(r"^CASE (\S+) (.*)$", result.stdout, re.M)
    assert result.returncode == 0, _output(result)
    assert len(cases) == 4, _output(result)
    assert all(verdict == "OK" for _, verdict in cases), _output(result)


def test_hir_run_check_and_outputs(tmp_path: Path) -> None:
    """Rank 0 does not hold the output: --check compares it on rank 1, --outputs gets it from there."""
    x = torch.randn(1, 4, generator=torch.Generator().manual_seed(11))
    inputs, outputs = tmp_path / "in.pt", tmp_path / "out.pt"
    torch.save([x], inputs)
    args = ["-m", "hir.tools.hir_run", str(SEND_RECV), "--check", "--inputs", str(inputs), "--outputs", str(outputs)]
    result = run_ranks(args, timeout=90)
    assert result.returncode == 0, _output(result)
    expected = (
        "check: OK (the fusion-level reference against the program lowered by -p 'stream-lowering': 1 output "
        "matches; compared on the ranks that hold each: output #0 on rank 1)"
    )
    assert result.stdout.count(expected) == 1, _output(result)  # rank 0 reports, once
    (saved,) = torch.load(outputs)
    torch.testing.assert_close(saved, x.clone(), rtol=0, atol=0)  # eager torch: a set is a copy


def test_hir_run_prints_an_output_rank_0_does_not_hold(tmp_path: Path) -> None:
    lowered = tmp_path / "lowered.mlir"
    lowered.write_text(str(hir.run_pipeline(hir.parse_file(SEND_RECV), "stream-lowering")))
    result = run_ranks(["-m", "hir.tools.hir_run", str(lowered), "--seed", "2"], timeout=90)
    assert result.returncode == 0, _output(result)
    from hir.runtime.inputs import random_inputs

    program = hir.compile_program(hir.parse_file(lowered))
    (x,) = random_inputs(program.global_input_types, seed=2)
    assert f"output #0: (1, 4) torch.float32 sum={x.double().sum().item():.6g}" in result.stdout, _output(result)


# hir-run's main on each rank, recording the rank's exit status (and what it printed on stderr)
# before it exits; rank 0 waits for rank 1's record, since the first rank to exit ends the job.
RECORDING_RANK = """
import contextlib
import io
import os
import sys
import time
from pathlib import Path

from hir.tools.hir_run import main

rank, folder = os.environ["RANK"], Path(os.environ["RECORD_DIR"])
err = io.StringIO()
try:
    with contextlib.redirect_stderr(err):
        main(sys.argv[1:])
    code = 0
except SystemExit as exit:
    code = exit.code
(folder / f"rank{rank}.err").write_text(err.getvalue())
(folder / f"rank{rank}.status").write_text(str(code))
# Each rank waits for the other's status before exiting: the launcher ends the job at the first
# rank that fails, which would kill the other before it writes its own.
other = folder / f"rank{1 - int(rank)}.status"
deadline = time.monotonic() + 30
while not other.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
sys.exit(code)
"""


def test_hir_run_check_fails_on_every_rank_when_the_holder_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    The lowered program without its send and receive: rank 1's output is never written (NaN,
    poisoned). Rank 0, which does not hold it, reports rank 1's comparison; both ranks exit 1.
    """
    text = str(hir.run_pipeline(hir.parse_file(SEND_RECV), "stream-lowering"))
    broken = "\n".join(line for line in text.splitlines() if not re.search(r"hir\.(send|recv|wait)\b", line))
    assert broken.count("hir.send") == broken.count("hir.recv") == 0
    lowered = tmp_path / "broken.mlir"
    lowered.write_text(broken)
    script = tmp_path / "recording_rank.py"
    script.write_text(RECORDING_RANK)
    monkeypatch.setenv("RECORD_DIR", str(tmp_path))
    result = run_ranks([str(script), str(lowered), "--reference", str(SEND_RECV), "--poison"], timeout=90)
    assert result.returncode != 0, _output(result)
    statuses = [(tmp_path / f"rank{r}.status").read_text() for r in (0, 1)]
    errors = [(tmp_path / f"rank{r}.err").read_text() for r in (0, 1)]
    assert statuses == ["1", "1"], (statuses, errors)
    assert re.search(
        r"error: check failed: .* differ \(rank 0 of 2\)\n  output #0: .*nan.* \(on rank 1\)", errors[0]
    ), errors
    assert "differ (rank 0 reports where) (rank 1 of 2)" in errors[1], errors
    assert not any("Traceback" in e for e in errors), errors
