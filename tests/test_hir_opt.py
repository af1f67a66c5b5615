"""
hir-opt's exit statuses (lit's `not` accepts any failure; users and scripts rely on 1), pipeline
errors in the Python API and hir-run, the closed-pipe exit, the annotation scanner of
--verify-diagnostics on cases a lit test cannot isolate, the option values --list-passes shows
against those the passes accept, and --version / -v of both tools.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hir
from hir.tools.diagnostic_verifier import Diagnostic, Source, verify_chunk
from hir.tools.hir_opt import main as hir_opt_main
from hir.tools.hir_run import main as hir_run_main

ROOT = Path(__file__).resolve().parent.parent
SET_STREAM = ROOT / "examples" / "set_stream.mlir"

INVALID = """func.func @f(%a: tensor<4xf32>) {
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}
"""


def run_hir_opt(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """`hir-opt ARGS` in this process: exit status, stdout, stderr."""
    try:
        hir_opt_main([str(a) for a in args])
        status = 0
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    out, err = capsys.readouterr()
    return status, out, err


def error_cases(tmp: Path) -> dict[str, list[str | Path]]:
    (tmp / "invalid.mlir").write_text(INVALID)
    (tmp / "annotated_wrong.mlir").write_text("// expected-error@+2 {{shape 6}}\n" + INVALID)
    (tmp / "annotated_elsewhere.mlir").write_text(INVALID + "\n// -----\n// expected-error@+1 {{custom op}}\nfoo.bar\n")
    (tmp / "parse.mlir").write_text("func.func @f( {\n")
    (tmp / "input.txt").write_text("")
    return {
        "pipeline: commas between options": [
            SET_STREAM,
            "-p",
            "stream-lowering{policy=resharding-only,backend=copy-engine}",
        ],
        "pipeline: bad value": [SET_STREAM, "-p", "stream-lowering{chunks=x}"],
        "pipeline: unknown option": [SET_STREAM, "-p", "stream-lowering{nope=1}"],
        "pipeline: unclosed options": [SET_STREAM, "-p", "cse{"],
        "pipeline: unknown pass": [SET_STREAM, "-p", "no-such-pass"],
        "--pass-pipeline without its anchor": [SET_STREAM, "--pass-pipeline", "cse"],
        "--pass-pipeline with an unknown pass": [SET_STREAM, "--pass-pipeline", "builtin.module(no-such-pass)"],
        "--mlir-print-ir-after an unknown pass": [SET_STREAM, "--cse", "--mlir-print-ir-after=no-such-pass"],
        "-v (not --version)": [SET_STREAM, "-v"],
        "unknown flag": [SET_STREAM, "--no-such-flag"],
        "target llvm": [SET_STREAM, "-t", "llvm"],
        "target mps": [SET_STREAM, "-t", "mps"],
        "missing input": [tmp / "missing.mlir"],
        "unwritable output": [SET_STREAM, "-o", tmp / "no-dir" / "out.mlir"],
        "unknown extension": [tmp / "input.txt"],
        "verifier error": [tmp / "invalid.mlir"],
        "parse error": [tmp / "parse.mlir"],
        "pass error": [SET_STREAM, "-p", "fusion-segment{policy=fastest}"],
        "unexpected diagnostic": [tmp / "annotated_elsewhere.mlir", "--split-input-file", "--verify-diagnostics"],
        "wrong annotation": [tmp / "annotated_wrong.mlir", "--verify-diagnostics"],
    }


def test_every_error_exits_1_without_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name, args in error_cases(tmp_path).items():
        status, out, err = run_hir_opt(capsys, *args)
        assert status == 1, f"{name}: exit status {status}\n{err}"
        assert "error" in err, name
        assert "Traceback" not in err + out, name


def test_pipeline_errors_name_the_pass_and_option(capsys: pytest.CaptureFixture[str]) -> None:
    expected = {
        "stream-lowering{policy=resharding-only,backend=copy-engine}": "'stream-lowering{policy=resharding-only backend=copy-engine}'",
        "stream-lowering{chunks=x}": "option 'chunks' of pass 'stream-lowering' expects int, got 'x'",
        "stream-lowering{nope=1}": "pass 'stream-lowering' has no option 'nope'",
        "cse{": "(in the options of 'cse')",
    }
    for pipeline, message in expected.items():
        status, _, err = run_hir_opt(capsys, SET_STREAM, "-p", pipeline)
        assert status == 1
        assert err.startswith("hir-opt: error: "), err
        assert message in err, err
        assert err.count("\n") == 1, f"not one line: {err}"


def test_run_pipeline_raises_a_value_error() -> None:
    module = hir.parse_file(SET_STREAM)
    for pipeline in ("cse{", "stream-lowering{chunks=x}", "stream-lowering{nope=1}", "nope"):
        with pytest.raises(ValueError, match="pass") as caught:
            hir.run_pipeline(module, pipeline)
        assert isinstance(caught.value, hir.PipelineError)
    assert "fusion.set" in str(module)  # untouched: the pipeline failed before any pass ran


def test_hir_run_pipeline_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        hir_run_main([str(SET_STREAM), "--check", "-p", "stream-lowering{policy=resharding-only,backend=copy-engine}"])
    assert done.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("hir-run: error: malformed pass pipeline")
    assert "Traceback" not in err


def test_information_flags_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    for flag, shows in (("--help", "usage: hir-opt"), ("--list-passes", "stream-lowering"), ("--version", "xDSL")):
        status, out, _ = run_hir_opt(capsys, flag)
        assert status == 0, flag
        assert shows in out, flag


def test_listed_option_values_are_those_the_pass_accepts() -> None:
    """Every string option declares its values (`one_of`), and the pass accepts exactly those."""
    from hir.api import available_passes
    from hir.pipeline import pass_options

    for name, factory in available_passes().items():
        cls = factory()
        for option in pass_options(cls):
            if option.type != "str":
                continue
            field = option.name.replace("-", "_")
            assert option.choices, f"{name}: string option '{option.name}' declares no values (pipeline.one_of)"
            assert option.default in option.choices, (name, option)
            for value in option.choices:
                cls(**{field: value})
            with pytest.raises(ValueError, match="no-such-value"):
                cls(**{field: "no-such-value"})


def test_version_and_verbose_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """`--version` (hir, xDSL, PyTorch) in both tools; `-v` is hir-run's --verbose, hir-opt has none."""
    from hir.tools.hir_run import build_parser

    for tool in ("hir-opt", "hir-run"):
        with pytest.raises(SystemExit) as done:
            (hir_opt_main if tool == "hir-opt" else hir_run_main)(["--version"])
        assert done.value.code == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].startswith("hir "), lines
        assert lines[0].endswith(f"({tool})"), lines
        assert lines[1].startswith("  xDSL "), lines
        assert lines[2].startswith("  PyTorch "), lines
    assert build_parser().parse_args([str(SET_STREAM), "-v"]).verbose


def test_closed_pipe_exits_quietly() -> None:
    """`hir-opt ... | head`: the reader is gone before hir-opt writes; no traceback, status 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "hir.tools.hir_opt", str(SET_STREAM), "--stream-lowering"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()  # before the child has imported anything, so its first write fails
    err = process.stderr.read()
    assert process.wait(timeout=60) == 0
    assert err == ""


# -- the annotation scanner ----------------------------------------------------------------------


def check(text: str, *diagnostics: Diagnostic, first_line: int = 1) -> list[str]:
    return verify_chunk(Source("in.mlir", text, first_line), diagnostics)


def error_at(line: int, message: str = "op failed", severity: str = "error") -> Diagnostic:
    return Diagnostic(severity, message, "in.mlir", line, 3)


def test_below_and_above_skip_annotation_lines() -> None:
    text = "// expected-error@below {{one}}\n// expected-error@below {{two}}\nop\n// expected-note@above {{three}}\n"
    diagnostics = [error_at(3, "one"), error_at(3, "two"), error_at(3, "three", "note")]
    assert check(text, *diagnostics) == []
    assert check(text, *diagnostics[:2]) == ['in.mlir:4:4: error: expected note "three" was not produced\n'
                                              "// expected-note@above {{three}}\n   ^"]  # fmt: skip


def test_lines_are_the_files_in_a_chunk() -> None:
    text = "\nop\n// expected-error@-1 {{bad}}\n"
    assert check(text, error_at(12, "bad"), first_line=11) == []
    assert check(text, error_at(2, "bad"), first_line=11)[0].startswith("in.mlir:2:3: error: unexpected error: bad")


def test_dangling_below_and_unknown_location() -> None:
    assert check("op\n// expected-error@below {{bad}}", error_at(2, "bad")) == []
    assert check("// expected-error@unknown {{no place}}", Diagnostic("error", "no place")) == []
    problems = check("", Diagnostic("error", "no place"))
    assert problems == ["error: unexpected error: no place"]


def test_a_diagnostic_in_another_file_is_unexpected() -> None:
    problems = check("// expected-error {{bad}}", Diagnostic("error", "bad", "other.mlir", 1, 1))
    assert problems[0] == "other.mlir:1:1: error: unexpected error: bad"
    assert problems[1].startswith('in.mlir:1:4: error: expected error "bad" was not produced')


def test_regex_and_substring() -> None:
    assert check("op // expected-error-re {{got {{[0-9]+}} and {{[0-9]+}}}}", error_at(1, "got 4 and 8")) == []
    assert check("op // expected-error-re {{got {{[0-9]+}}$}}", error_at(1, "got 4 and 8")) != []
    assert check("op // expected-error {{4 and}}", error_at(1, "got 4 and 8")) == []
    assert check("op // expected-error {{4 and 9}}", error_at(1, "got 4 and 8")) != []


def test_verify_diagnostics_without_annotations_prints_like_xdsl_opt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A file with no expected-* annotation at all: xdsl-opt's behaviour (diagnostics on stdout, exit 0)."""
    (tmp_path / "invalid.mlir").write_text(INVALID)
    status, out, err = run_hir_opt(capsys, tmp_path / "invalid.mlir", "--verify-diagnostics")
    assert status == 0, err
    assert "op result shape 5 does not match" in out
    assert err == ""


def count_verifications(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> int:
    from xdsl.dialects.builtin import ModuleOp

    calls: list[None] = []
    verify = ModuleOp.verify

    def counting(self: ModuleOp, verify_nested_ops: bool = True) -> None:
        calls.append(None)
        verify(self, verify_nested_ops)

    monkeypatch.setattr(ModuleOp, "verify", counting)
    code, _, err = run_hir_opt(capsys, SET_STREAM, *args)
    assert code == 0, err
    return len(calls)


def test_pipeline_pass_verified_after_its_last_stage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from hir.passes.stream_lowering import StreamLoweringPass
    from hir.pipeline import expand_stages

    stages = len(expand_stages([StreamLoweringPass()]))
    # after parsing, after stream-lowering's last stage, after cse
    assert count_verifications(monkeypatch, capsys, "-p", "stream-lowering,cse") == 3
    assert count_verifications(monkeypatch, capsys, "-p", "stream-lowering,cse", "--verify-each-stage") == stages + 2
    from xdsl.ir import Attribute

    # xDSL's --disable-verify turns off attribute verification for the rest of the process: undone after the test.
    monkeypatch.setattr(Attribute, "__post_init__", Attribute.__post_init__)
    assert count_verifications(monkeypatch, capsys, "-p", "stream-lowering", "--disable-verify") == 0
