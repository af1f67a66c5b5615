"""
The differential check of one single-device program (`check_lowering`), and the pieces the
multi-device driver shares with it: tolerances, input layouts, the print/parse round trip.

    check_lowering(text, ...)   parse, run the reference, lower, print and re-parse the lowered
                                IR, run it (race-checked) on inputs laid out as drawn, run the
                                re-parsed module twice (once into preallocated outputs), compare;
                                raises `LoweringMismatch` with the program and its lowered IR
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

import hir
from hir.runtime.compare import EXACT, Tolerance, computed_dtypes, mismatches, tolerance_for

POLICIES = ("standalone-host-ops", "resharding-only")
LAYOUTS = ("contiguous", "transposed", "strided", "offset", "expanded")
"""How an input is laid out in memory for the lowered run (the reference gets a contiguous copy)."""
OUTPUT_LAYOUTS = ("none", "contiguous", "strided", "transposed")
"""A preallocated output (`outputs=`) of the re-parsed run: none, or a fresh tensor laid out so."""


class LoweringMismatch(AssertionError):
    """The lowered program crashed, did not verify, or computed something else than the reference."""


def pipeline_for(policy: str) -> str:
    return "stream-lowering" if policy == POLICIES[0] else f"stream-lowering{{policy={policy}}}"


def program_tolerance(module: ModuleOp) -> Tolerance:
    """As `hir-run --check`: the tolerance of the least precise float type the program computes with."""
    function = next(op for op in module.walk() if op.name == "func.func")
    return tolerance_for(computed_dtypes(function)) or EXACT


def lay_out(x: torch.Tensor, layout: str) -> torch.Tensor:
    """`x`'s values in a tensor laid out as `layout` says (`expanded` repeats index 0 of the first axis > 1)."""
    if layout == "transposed" and x.dim() >= 2:
        perm = list(reversed(range(x.dim())))
        return x.permute(perm).contiguous().permute(perm)  # reversing twice is the identity
    if layout in ("strided", "transposed") and x.dim() >= 1:
        base = torch.empty((*x.shape[:-1], 2 * x.shape[-1]), dtype=x.dtype, device=x.device)
        view = base[..., ::2]
        view.copy_(x)
        return view
    if layout == "offset":
        base = torch.empty(x.numel() + 3, dtype=x.dtype, device=x.device)
        view = base[3:].view(x.shape)
        view.copy_(x)
        return view
    if layout == "expanded" and any(e > 1 for e in x.shape):
        axis = next(a for a, e in enumerate(x.shape) if e > 1)
        return x.narrow(axis, 0, 1).expand(x.shape)
    return x.clone()


def garbage_like(t: torch.Tensor, layout: str) -> torch.Tensor:
    """A preallocated output for `t`: laid out as `layout`, holding values no kernel computes."""
    filled = torch.full_like(t, float("nan")) if t.dtype.is_floating_point else torch.full_like(t, 77)
    if t.dtype == torch.bool:
        filled = torch.ones_like(t)
    return lay_out(filled, layout)


def round_trip(module: ModuleOp, name: str = "lowered.mlir") -> tuple[str, ModuleOp]:
    """The printed lowered IR and the module parsed (and verified) back from it; raises on a difference."""
    printed = str(module)
    reparsed = hir.parse(printed, name)
    again = str(reparsed)
    if again != printed:
        diff = difflib.unified_diff(printed.splitlines(), again.splitlines(), "printed", "re-parsed", lineterm="", n=0)
        raise AssertionError("printing the re-parsed lowered IR gives other text:\n" + "\n".join(list(diff)[:12]))
    return printed, reparsed


@dataclass(frozen=True)
class RunOptions:
    """How the lowered program is run; part of every example, so a failure prints it."""

    num_streams: int = 4
    policy: str = POLICIES[0]
    seed: int = 0
    layouts: tuple[str, ...] = field(default_factory=tuple)
    """Per input (missing: contiguous)."""
    outputs: tuple[str, ...] = field(default_factory=tuple)
    """Per output of the re-parsed run (missing: none)."""

    def command_line(self) -> str:
        parts = [f"--num-streams {self.num_streams}", f"--policy {self.policy}", f"--seed {self.seed}"]
        if any(layout != "contiguous" for layout in self.layouts):
            parts.append(f"--layouts {','.join(self.layouts)}")
        if any(layout != "none" for layout in self.outputs):
            parts.append(f"--outputs {','.join(self.outputs)}")
        return " ".join(parts)


def failure_report(text: str, lowered: str | None, what: str, options: RunOptions, may_reject: bool = False) -> str:
    """The program text, its lowered IR (when lowering got that far) and what went wrong."""
    parts = [what, f"-- program ({options.command_line()}):", text.rstrip()]
    if lowered is not None:
        parts += [f"-- lowered ({pipeline_for(options.policy)}):", lowered.rstrip()]
    parts.append(
        "-- reproduce: save the program as repro.mlir, then "
        f"python tests/fuzz_programs.py repro.mlir {options.command_line()}" + (" --may-reject" if may_reject else "")
    )
    return "\n".join(parts)


def check_lowering(text: str, options: RunOptions = RunOptions(), *, may_reject: bool = False) -> ModuleOp | None:
    """
    Parses and verifies `text`, runs it (the reference), lowers it with `--stream-lowering` (and
    the policy), prints the lowered module and parses it back (the text must parse, verify and
    print the same), runs the lowered module with the inputs laid out as `options.layouts` says,
    runs the re-parsed module on the same inputs (bit for bit the same outputs) and once more into
    preallocated outputs, and compares with `mismatches` at the program's tolerance. Returns the
    lowered module; raises `LoweringMismatch` with a full report otherwise. With `may_reject`, the
    lowering may also refuse the program with a diagnostic (`PassFailedException`): then it
    returns None.
    """
    from device_under_test import execute_lowered

    from hir.runtime.executor import compile_program
    from hir.runtime.inputs import random_inputs

    module = hir.parse(text, "fuzz.mlir")  # a generated program that does not verify is a generator bug: let it raise
    reference_program = compile_program(module)
    given = [
        lay_out(x, options.layouts[k] if k < len(options.layouts) else "contiguous")
        for k, x in enumerate(random_inputs(reference_program.input_types, options.seed))
    ]
    originals = [x.clone() for x in given]
    reference = reference_program([x.contiguous().clone() for x in given])
    non_finite = [k for k, t in enumerate(reference) if t.is_floating_point() and not torch.isfinite(t).all()]
    assert not non_finite, f"generator bug: reference outputs {non_finite} are not finite\n{text}"
    tolerance = program_tolerance(module)

    def fail(what: str, lowered: str | None) -> LoweringMismatch:
        return LoweringMismatch(failure_report(text, lowered, what, options, may_reject))

    try:
        hir.run_pipeline(module, pipeline_for(options.policy))  # verifies after every pass
    except PassFailedException as err:
        if may_reject:
            return None
        raise fail(f"stream-lowering failed: {type(err).__name__}: {err}", None) from err
    except Exception as err:
        raise fail(f"stream-lowering failed: {type(err).__name__}: {err}", None) from err
    try:
        lowered, reparsed = round_trip(module)
    except Exception as err:
        raise fail(f"the printed lowered IR does not round-trip: {type(err).__name__}: {err}", str(module)) from err

    def run(program: ModuleOp, what: str, outputs: list[torch.Tensor | None] | None = None) -> list[torch.Tensor]:
        try:
            return execute_lowered(program, given, num_streams=options.num_streams, outputs=outputs)
        except Exception as err:
            raise fail(f"the {what} crashed: {type(err).__name__}: {err}", lowered) from err

    outputs = run(module, "lowered program")
    problems = [
        f"output #{k}: {out.dtype} vs reference {ref.dtype}"
        for k, (out, ref) in enumerate(zip(outputs, reference))
        if out.dtype != ref.dtype
    ]
    problems += mismatches(outputs, reference, tolerance)
    problems += [
        f"input #{k} was overwritten" for k, (a, b) in enumerate(zip(given, originals)) if not torch.equal(a, b)
    ]
    if problems:
        raise fail("the lowered program differs from the reference:\n  " + "\n  ".join(problems), lowered)

    again = run(reparsed, "re-parsed lowered program")
    problems = [f"output #{k} differs" for k, (a, b) in enumerate(zip(again, outputs)) if not torch.equal(a, b)]
    if problems:
        raise fail(
            "the re-parsed lowered program computes other bits than the lowered one: " + ", ".join(problems), lowered
        )

    layouts = [options.outputs[k] if k < len(options.outputs) else "none" for k in range(len(reference))]
    if any(layout != "none" for layout in layouts):
        preallocated = [
            None if layout == "none" else garbage_like(ref, layout) for ref, layout in zip(reference, layouts)
        ]
        written = run(reparsed, "lowered program with preallocated outputs", preallocated)
        problems = [
            f"output #{k} is not the preallocated tensor"
            for k, (out, given_out) in enumerate(zip(written, preallocated))
            if given_out is not None and out is not given_out
        ]
        problems += mismatches(written, reference, tolerance)
        if problems:
            raise fail(
                f"with preallocated outputs ({', '.join(layouts)}) the lowered program differs:\n  "
                + "\n  ".join(problems),
                lowered,
            )
    return module
