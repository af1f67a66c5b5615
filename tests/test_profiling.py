"""
Profiling: under a torch profiler every fusion and hir op a program runs is a range named after
the op and its source position; without one the plain steps run; `hir-run --profile DIR` writes
the Chrome trace and its timeline PNG (runtime/timeline.py), or says how to get the PNG.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile
from xdsl.ir import Operation

import hir
from hir.dialects import hir as hir_dialect
from hir.runtime import compiler, executor, timeline
from hir.runtime.compiler import range_name
from hir.tools.hir_run import main as hir_run_main

REPO = Path(__file__).resolve().parent.parent
SET_STREAM = "examples/set_stream.mlir"

# Two stream-parallel launches: a matmul of row blocks, then a segment of two elementwise ops.
PROGRAM = """\
func.func @main(%a: tensor<4x8x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8x8xf32, #fusion.parallel<[stream, serial, serial]>> {
  %m = fusion.matmul %a, %b : tensor<4x8x16xf32>, tensor<16x8xf32> -> tensor<4x8x8xf32, #fusion.parallel<[stream, serial, serial]>>
  %e = fusion.exp %m : tensor<4x8x8xf32, #fusion.parallel<[stream, serial, serial]>> -> tensor<4x8x8xf32, #fusion.parallel<[stream, serial, serial]>>
  %r = fusion.neg %e : tensor<4x8x8xf32, #fusion.parallel<[stream, serial, serial]>> -> tensor<4x8x8xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %r : tensor<4x8x8xf32, #fusion.parallel<[stream, serial, serial]>>
}
"""


def op_ranges(prof: profile) -> Counter[str]:
    return Counter(e.name for e in prof.events() if e.name.startswith(("hir.", "fusion.")))


def expected_ranges(function: Operation, trip_count: int) -> Counter[str]:
    """Each fusion and hir op, as often as it runs: once per iteration of each enclosing hir.for."""
    expected: Counter[str] = Counter()
    for op in function.walk():
        if op is function or op.dialect_name() not in ("fusion", "hir") or op.name in ("hir.yield", "fusion.yield"):
            continue
        launch = op.parent_op()
        if isinstance(launch, hir_dialect.LaunchOp) and len(launch.body.block.ops) == 2:
            continue  # a single-op launch runs its op's out= kernel: the launch is the range
        loops, parent = 0, op.parent_op()
        while parent is not None:
            loops += isinstance(parent, hir_dialect.ForOp)
            parent = parent.parent_op()
        expected[range_name(op)] += trip_count**loops
    return expected


def test_ranges_name_the_ops_of_a_lowered_program(tmp_path: Path) -> None:
    source = tmp_path / "pipeline.mlir"
    source.write_text(PROGRAM)
    lowered = hir.run_pipeline(hir.parse_file(source), "stream-lowering")
    program = hir.compile_program(lowered)
    a, b = torch.randn(4, 8, 16), torch.randn(16, 8)
    program([a, b])
    assert "profiled_body" not in vars(program)  # no profiler, no ranges: the plain steps ran

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        (out,) = program([a, b], num_streams=2)
    torch.testing.assert_close(out, -torch.exp(a @ b))
    ranges = op_ranges(prof)
    assert ranges == expected_ranges(program.func, trip_count=4)
    names = set(ranges)
    assert f"hir.launch fusion.exp, fusion.neg @ {source}:3:3" in names  # a segment of two ops
    assert ranges[f"hir.launch fusion.matmul @ {source}:2:3"] == 4  # one per stream iteration

    # The reference (fusion level) names its ops too.
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        hir.execute(hir.parse_file(source), [a, b])
    assert op_ranges(prof) == Counter(
        {f"fusion.matmul @ {source}:2:3": 1, f"fusion.exp @ {source}:3:3": 1, f"fusion.neg @ {source}:4:3": 1}
    )


def test_race_checked_programs_are_profiled_too() -> None:
    lowered = hir.run_pipeline(hir.parse_file(REPO / SET_STREAM), "stream-lowering")
    program = hir.compile_program(lowered, race_check=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        program([torch.randn(4, 8)])
    assert op_ranges(prof) == expected_ranges(program.func, trip_count=4)


def test_without_a_profiler_no_range_is_entered(monkeypatch: pytest.MonkeyPatch) -> None:
    entered: list[str] = []

    class CountingRange:
        def __init__(self, name: str) -> None:
            entered.append(name)

        def __enter__(self) -> None:
            pass

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(compiler, "profiler_range_type", lambda: CountingRange)
    program = hir.compile_program(hir.run_pipeline(hir.parse_file(REPO / SET_STREAM), "stream-lowering"))
    x = torch.randn(4, 8)
    program([x])
    assert entered == []
    monkeypatch.setattr(executor, "profiler_active", lambda: True)
    program([x])
    assert Counter(entered) == expected_ranges(program.func, trip_count=4)


def hir_run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """`hir-run ARGS` in this process, from the repository root: exit status, stdout, stderr."""
    code = 0
    try:
        hir_run_main([str(a) for a in args])
    except SystemExit as exit:
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def trace_ranges(trace: Path) -> Counter[str]:
    events = json.loads(trace.read_text())["traceEvents"]
    return Counter(e["name"] for e in events if e.get("ph") == "X" and e["name"].startswith(("hir.", "fusion.")))


def test_hir_run_profile_without_matplotlib_writes_the_trace_and_says_how_to_get_the_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    code, out, err = hir_run(capsys, SET_STREAM, "--check", "--profile", tmp_path / "prof")
    assert code == 0, err
    assert "check: OK" in out
    trace = tmp_path / "prof" / "trace.json"
    assert f"profile: wrote {trace}" in err
    assert f"the timeline PNG needs matplotlib: pip install -e '{REPO.resolve()}[plot]'" in err
    assert not (tmp_path / "prof" / "timeline.png").exists()
    lowered = hir.run_pipeline(hir.parse_file(SET_STREAM), "stream-lowering")
    assert trace_ranges(trace) == expected_ranges(lowered.body.block.first_op, trip_count=4)  # type: ignore[arg-type]
    assert trace_ranges(trace)[f"hir.launch fusion.set @ {SET_STREAM}:5:3"] == 4


def test_hir_run_profile_draws_the_timeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib", reason="the timeline PNG needs matplotlib (pip install -e '.[plot]')")
    code, _, err = hir_run(capsys, REPO / SET_STREAM, "--check", "--profile", tmp_path)  # the lowered program
    assert code == 0, err
    png = tmp_path / "timeline.png"
    assert f"and {png}" in err
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    rows = timeline.timeline_rows(timeline.load_events(tmp_path / "trace.json"))
    labels = [row.label for row in rows]
    assert labels[:2] == ["host: ops", "host: nested 1"]
    streams = labels[2:]  # a GPU's kernels, one row per stream; none on CPU
    if torch.cuda.is_available():
        assert streams
        assert all(label.startswith("stream ") for label in streams), labels
    else:
        assert streams == []
    launches = [s for s in rows[1].spans if s.name.startswith("hir.launch")]
    assert len(launches) == 4
    assert all(s.color == "tab:blue" for s in launches)


def test_hir_run_profile_into_a_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").write_text("")
    code, _, err = hir_run(capsys, REPO / SET_STREAM, "--profile", tmp_path / "taken")
    assert code == 1
    assert err.strip() == f"hir-run: error: --profile {tmp_path / 'taken'}: not a directory"


def test_timeline_rows_nest_host_ranges_and_split_gpu_streams() -> None:
    def event(name: str, ts: float, dur: float, cat: str = "cpu_op", **args: int) -> dict:
        return {"ph": "X", "name": name, "ts": ts, "dur": dur, "cat": cat, "pid": 1, "tid": 1, "args": args}

    events = [
        event("ncclDevKernel_AllReduce", 100, 10, "kernel", stream=7),  # a barrier before the program
        event("hir.for @ f.mlir:3:3", 200, 50),
        event("hir.launch fusion.matmul @ f.mlir:4:5", 210, 20),
        event("aten::mm", 212, 5),  # not an op range: not drawn
        event("hir.allgather @ f.mlir:5:5", 232, 8),
        event("hir.launch fusion.matmul @ f.mlir:4:5", 210, 20, "gpu_user_annotation"),
        event("sm90_gemm", 215, 30, "kernel", stream=7),
        event("Memcpy DtoD", 220, 5, "gpu_memcpy", stream=13),
    ]
    rows = timeline.timeline_rows(events)
    assert [row.label for row in rows] == ["host: ops", "host: nested 1", "stream 7", "stream 13"]
    assert [(s.name.split(" @")[0], s.start, s.color) for s in rows[1].spans] == [
        ("hir.launch fusion.matmul", 110, "tab:blue"),
        ("hir.allgather", 132, "tab:green"),
    ]
    assert [s.color for s in rows[2].spans] == ["tab:green", "tab:blue"]
    assert [s.color for s in rows[3].spans] == ["tab:orange"]
    after = timeline.timeline_rows(events, after_first_collective=True)
    assert [s.name for s in after[2].spans] == ["sm90_gemm"]
    assert after[0].spans[0].start == 0  # time counts from the first event shown


def test_timeline_cli_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "hir.wait", "ts": 0, "dur": 1, "cat": "x"}]}))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SystemExit) as exit:
        timeline.main([str(trace), str(tmp_path / "t.png")])
    assert exit.value.code == f"error: {timeline.PLOT_HINT}"
    assert f"pip install -e '{REPO.resolve()}[plot]'" in timeline.PLOT_HINT
    assert not (tmp_path / "t.png").exists()


def test_host_overhead_times_the_ranges(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/host_overhead.py --profiler, small (here, where the profiler has started already)."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    host_overhead = importlib.import_module("host_overhead")
    argv = ["--device", "cpu", "--iterations", "8", "--width", "16", "--repeats", "3", "--warmup", "1"]
    monkeypatch.setattr(sys, "argv", ["host_overhead.py", *argv, "--chain", "0", "--profiler"])
    host_overhead.main()  # checks its results against torch.relu first
    out = capsys.readouterr().out
    # 3 + 7 hir ops per iteration of the fork and main loops (arith.remui gets no range), 5 outside them.
    assert "under torch.profiler: 85 op ranges per run (15 hir ops in the program; arith ops get none)" in out
    assert "of which the ranges:" in out
