"""
Invalid-input fuzzing of `hir-opt` and the runtime: textual mutations (tests/fuzz/mutations.py) of
valid programs (single-device and multi-device fusion programs from the generators, and lowered hir
programs). `hir-opt`'s main runs in process, under a time budget, with the program's pipeline:
every mutant must give a located error (`file:line:col: error:`) or be a valid program that
then lowers and runs correctly (a single-device fusion program: against its reference; a hir
program: to completion or a located error, race-checked), never a Python traceback and never a
hang.

Profiles (tests/fuzz/profiles.py): `ci` unless the environment says `HIR_FUZZ_PROFILE=long`.
"""

from __future__ import annotations

import functools
import math
import re
import tempfile
import traceback
from pathlib import Path

import pytest
from fuzz.check import program_tolerance
from fuzz.multidevice import multidevice_programs
from fuzz.mutations import Hang, located_error, mutants, run_hir_opt, time_budget, tokenize
from fuzz.profiles import draw_batch, settings_for
from fuzz.programs import fusion_programs
from hypothesis import event, given
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp, ShapedType
from xdsl.utils.exceptions import PassFailedException

import hir
from hir.diagnostics import LocatedError
from hir.runtime.compare import mismatches
from hir.runtime.inputs import random_inputs

BUDGET = 20.0
"""Seconds one example may take (a few hundred milliseconds at most when all is well, on a loaded machine)."""
MAX_ELEMENTS = 1 << 16
"""A valid mutant runs only when no tensor of it is larger (a changed extent may ask for terabytes)."""
MAX_CONSTANT = 64
"""... and no integer constant (a hir.for bound) is larger."""
HIR_PIPELINES = ("", "hir-loop-fusion", "hir-lower-communication", "cse,canonicalize")
WORKDIR = Path(tempfile.mkdtemp(prefix="hir-fuzz-"))
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KNOWN_FAILURES: dict[str, re.Pattern[str]] = {}
"""Outputs of known bugs (docs/testing.md; tests/test_fuzz_known_bugs.py) that a mutant may give instead of a located error."""
KNOWN_EXCEPTIONS: dict[str, tuple[type[Exception], re.Pattern[str]]] = {}
"""Python exceptions of known bugs that hir-opt may raise on a mutant instead of reporting a located error."""


def known_failure(output: str) -> str | None:
    return next((bug for bug, pattern in KNOWN_FAILURES.items() if pattern.match(output)), None)


def known_exception(err: Exception) -> str | None:
    return next(
        (
            bug
            for bug, (kind, pattern) in KNOWN_EXCEPTIONS.items()
            if isinstance(err, kind) and pattern.search(str(err))
        ),
        None,
    )


@functools.cache
def lowered_corpus() -> tuple[str, ...]:
    """
    Valid hir programs to mutate, lowered once per session: every example (single-device and
    multi-device, with both communication backends) and a few generated programs.
    """
    texts = [(EXAMPLES / "set_stream.hir.mlir").read_text()]
    for path in sorted([*EXAMPLES.glob("*.mlir"), *EXAMPLES.glob("multidevice/*.mlir")]):
        if path.name.endswith(".hir.mlir"):
            continue
        for pipeline in ("stream-lowering", "stream-lowering{backend=copy-engine chunks=2}"):
            texts.append(str(hir.run_pipeline(hir.parse_file(path), pipeline)))
    for program in draw_batch(fusion_programs(max_ops=4), 8, 0):
        try:
            texts.append(str(hir.run_pipeline(hir.parse(program.text), "stream-lowering")))
        except PassFailedException:  # a may_reject program the lowering refused
            pass
    return tuple(dict.fromkeys(texts))  # without the duplicates (one backend lowers some alike)


@st.composite
def bases(draw: st.DrawFn) -> tuple[str, str, str]:
    """(kind, valid program text, pipeline): a fusion program (one device or two), or a lowered one."""
    kind = draw(st.sampled_from(("fusion", "fusion", "multidevice", "hir")))
    if kind == "multidevice":
        return kind, draw(multidevice_programs(2, max_ops=4)).text, "stream-lowering"
    if kind == "hir":
        return kind, draw(st.sampled_from(lowered_corpus())), draw(st.sampled_from(HIR_PIPELINES))
    return kind, draw(fusion_programs(max_ops=4)).text, "stream-lowering"


def small_enough(module: ModuleOp) -> bool:
    """Whether running the module is cheap: every tensor and every integer constant small."""
    for op in module.walk():
        for value in [*op.results, *[a for r in op.regions for b in r.blocks for a in b.args]]:
            t = value.type
            if isinstance(t, ShapedType) and math.prod(max(e, 1) for e in t.get_shape()) > MAX_ELEMENTS:
                return False
        value = op.properties.get("value")
        if op.name == "arith.constant" and value is not None and abs(getattr(value.value, "data", 0)) > MAX_CONSTANT:
            return False
    return True


def run_checked(kind: str, mutant: str, lowered_text: str, path: Path) -> str:
    """A valid mutant: run it; returns what happened (an event), raises AssertionError on a bug."""
    module = hir.parse(mutant, str(path))
    if "mesh" in mutant:  # a program over several devices runs under torchrun only
        return "valid (multi-device: lowered only)"
    if not small_enough(module):
        return "valid (too large to run)"
    try:
        inputs = random_inputs(hir.compile_program(module).input_types, 0)
    except ValueError:
        return "valid (dynamic shapes: not run)"
    except LocatedError:
        return "valid (no @main to run)"
    if kind == "hir":
        try:
            hir.execute(hir.parse(lowered_text, "lowered.mlir"), inputs, race_check=True, num_streams=3)
        except LocatedError:
            return "valid hir program: located run-time error"
        return "valid hir program: ran"
    try:
        reference = hir.execute(module, [x.clone() for x in inputs])
    except LocatedError:
        return "valid fusion program: located run-time error in the reference"
    lowered = hir.parse(lowered_text, "lowered.mlir")
    outputs = hir.execute(lowered, [x.clone() for x in inputs], race_check=True, num_streams=3)
    problems = mismatches(outputs, reference, program_tolerance(module))
    assert not problems, "the lowered mutant differs from its reference:\n  " + "\n  ".join(problems)
    return "valid fusion program: lowered and ran correctly"


@settings_for("invalid-input")
@given(bases().flatmap(lambda base: st.tuples(st.just(base), mutants(base[1]))))
def test_mutants_give_located_errors_or_run(example: tuple[tuple[str, str, str], tuple[str, list[str]]]) -> None:
    (kind, _base, pipeline), (mutant, edits) = example
    path = WORKDIR / "mutant.mlir"
    path.write_text(mutant)
    args = ["-p", pipeline] if pipeline else []
    where = f"hir-opt {path.name} {' '.join(args)}; edits: {'; '.join(edits)}\n-- mutant:\n{mutant}"
    try:
        result = run_hir_opt(path, args, BUDGET)
    except Hang as err:
        pytest.fail(f"hir-opt hangs ({err}): {where}")
    except Exception as err:
        if bug := known_exception(err):
            event(f"{kind}: {bug}")
            return
        pytest.fail(f"hir-opt raised a Python exception:\n{traceback.format_exc()}\n{where}")
    output = result.stdout + result.stderr
    if result.status != 0:
        assert "Traceback" not in output, f"hir-opt printed a traceback:\n{output}\n{where}"
        if not located_error(output, path) and (bug := known_failure(output)):
            event(f"{kind}: {bug}")
            return
        assert located_error(output, path), f"hir-opt failed without a located error:\n{output}\n{where}"
        event(f"{kind}: located error")
        return
    try:
        with time_budget(BUDGET):
            event(f"{kind}: {run_checked(kind, mutant, result.stdout, path)}")
    except Hang as err:
        pytest.fail(f"running the valid mutant hangs ({err}): {where}")
    except AssertionError as err:
        pytest.fail(f"{err}\n{where}\n-- lowered:\n{result.stdout}")
    except Exception:
        pytest.fail(f"running the valid mutant raised a Python exception:\n{traceback.format_exc()}\n{where}")


def test_tokens_rebuild_the_text() -> None:
    """The mutator's tokens, whitespace included, are the text: an unedited token survives as it was."""
    text = str(hir.run_pipeline(hir.parse(MULTIDEVICE_EXAMPLE), "stream-lowering{backend=copy-engine}"))
    assert "".join(t.text for t in tokenize(text)) == text
    kinds = {t.kind for t in tokenize(text)}
    assert {"ssa", "symbol", "number", "word", "punct", "space"} <= kinds


MULTIDEVICE_EXAMPLE = """
func.func @main(%a: tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>,
                %b: tensor<16x8xf32>) -> tensor<4x2x8x8xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<4x2x8x16xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<16x8xf32> -> tensor<4x2x8x8xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %c : tensor<4x2x8x8xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}
"""
