"""
`hir-run FILE`: executes a fusion- or hir-level module's entry function with PyTorch.

    hir-run examples/set_stream.mlir --check            # lower, run both, compare
    hir-run lowered.mlir --reference examples/set_stream.mlir --check
    hir-run prog.mlir --inputs in.pt --outputs out.pt --device cuda --num-streams 2 -v
    hir-run examples/set_stream.mlir --check --race-check  # also: no two streams race
    hir-run examples/set_stream.mlir --profile prof        # prof/trace.json, prof/timeline.png
    hir-run examples/set_stream.mlir --check --cuda-graph  # captured once, replayed (GPU)

Inputs are a `torch.save`d list of tensors (random, seeded, when absent); outputs are saved the
same way. Errors print `file:line:col: error: ...` and exit 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

STREAM_LOWERING = "stream-lowering"


def build_parser() -> argparse.ArgumentParser:
    from hir.runtime.device import DEVICE_KINDS

    p = argparse.ArgumentParser(prog="hir-run", description="Execute a fusion or hir module with PyTorch.")
    p.add_argument("input_file", help="the .mlir module")
    p.add_argument("--entry", default="main", help="function to run (default: main)")
    p.add_argument("--inputs", help="torch.save'd list of input tensors (default: random)")
    p.add_argument("--outputs", help="where to torch.save the list of outputs")
    p.add_argument("--device", choices=tuple(DEVICE_KINDS), default=None, help="default: cuda if available, else cpu")
    p.add_argument("--num-streams", type=int, default=4, help="the runtime's number of streams (default 4)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--check", action="store_true", help="compare with the fusion-level reference")
    p.add_argument("--reference", help="fusion-level module to compare a hir module with (implies --check)")
    p.add_argument("--race-check", action="store_true", help="check the run for races between streams")
    p.add_argument(
        "--cuda-graph",
        action="store_true",
        help="run the lowered program as a CUDA graph: a warm-up run, the capture, then a replay (GPU only)",
    )
    p.add_argument(
        "--profile",
        metavar="DIR",
        help="after a warm-up run, profile one run: DIR/trace.json (a Chrome trace whose ranges name the ops) "
        "and DIR/timeline.png (needs matplotlib: pip install 'hir[plot]')",
    )
    p.add_argument("-p", "--pipeline", default=STREAM_LOWERING, help="passes --check applies to a fusion-level module")
    p.add_argument("-v", "--verbose", action="store_true", help="print progress and timings")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        from hir.api import parse_pipeline

        parse_pipeline(args.pipeline)  # a malformed -p fails now, naming the pass and option
        run(args)
    except Exception as err:  # every error the user can cause ends here, without a traceback
        _fail(err)


def run(args: argparse.Namespace) -> None:
    clock = _Clock(args.verbose)
    import hir
    from hir.dialects.functions import is_hir_function
    from hir.runtime.compare import computed_dtypes, mismatches, tolerance_for
    from hir.runtime.distributed import Session
    from hir.runtime.executor import compile_program

    session = Session.from_environment(args.device)
    clock.lap(f"started: {session.describe()}")
    module = hir.parse_file(args.input_file)
    program = compile_program(module, args.entry, race_check=args.race_check)
    clock.lap(f"parsed, verified and compiled {args.input_file}")
    inputs = _load_inputs(args, program)
    clock.lap(f"{len(inputs)} inputs ready")

    reference = None
    if args.reference:
        reference = compile_program(hir.parse_file(args.reference), args.entry)
    elif args.check:
        if is_hir_function(program.func):
            raise ValueError("--check on a hir module needs --reference FILE (its fusion-level module)")
        reference = program
        lowered = hir.run_pipeline(hir.parse_file(args.input_file), args.pipeline)
        program = compile_program(lowered, args.entry, race_check=args.race_check)
        clock.lap(f"lowered with -p {args.pipeline}")

    if args.profile:
        outputs = _profiled_run(session, program, inputs, args)
    else:
        outputs = session.run(program, inputs, num_streams=args.num_streams, cuda_graph=args.cuda_graph)
    clock.lap(f"ran @{args.entry} ({'hir' if is_hir_function(program.func) else 'fusion'} level)")
    if reference is not None:
        expected = session.run_reference(reference, inputs)
        clock.lap("ran the reference")
        if session.is_main:
            problems = mismatches(outputs, expected, tolerance_for(computed_dtypes(reference.func)))
            if problems:
                raise ValueError("check failed: lowered program != reference\n  " + "\n  ".join(problems))
            print(f"check: OK ({len(outputs)} outputs match the reference)")

    if session.is_main:
        if args.race_check:
            print("race check: OK (no two accesses to the same bytes, one a write, are unordered)")
        if args.outputs:
            import torch

            torch.save([t.cpu() for t in outputs], args.outputs)
            clock.lap(f"saved outputs to {args.outputs}")
        elif reference is None:
            for k, t in enumerate(outputs):
                print(f"output #{k}: {tuple(t.shape)} {t.dtype} sum={t.double().sum().item():.6g}")
    session.close()


def _profiled_run(session: Any, program: Any, inputs: list[Any], args: argparse.Namespace) -> list[Any]:
    """
    Runs the program once to warm up (allocator, kernels, the profiled steps), then once under
    torch.profiler; writes the Chrome trace and its timeline into the --profile folder (each rank
    its own under torchrun) and returns the profiled run's outputs.
    """
    import torch.distributed
    from torch.profiler import ProfilerActivity, profile

    from hir.runtime.compiler import profiler_range_type
    from hir.runtime.timeline import PlottingUnavailable, render

    folder = Path(args.profile)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--profile {folder}: not a directory")
    folder.mkdir(parents=True, exist_ok=True)
    session.run(program, inputs, num_streams=args.num_streams, cuda_graph=args.cuda_graph)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if session.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        with profiler_range_type()("hir-run: profiler warm-up"):
            pass  # the profiler's first range costs about a millisecond, which the first op would show
        if session.world_size > 1:
            # The ranks start together: a rank's first wait would otherwise show a peer's profiler start-up.
            torch.distributed.barrier()
        outputs = session.run(program, inputs, num_streams=args.num_streams, cuda_graph=args.cuda_graph)
    suffix = f".rank{session.rank}" if session.world_size > 1 else ""
    trace, png = folder / f"trace{suffix}.json", folder / f"timeline{suffix}.png"
    prof.export_chrome_trace(str(trace))
    title = f"{args.input_file} @{args.entry}, {args.num_streams} streams, {session.describe()}"
    try:
        render(trace, png, title, after_first_collective=session.world_size > 1)  # after the barrier's kernel
    except (PlottingUnavailable, ValueError) as err:  # no matplotlib, or nothing to draw
        print(f"profile: wrote {trace} (open it in Perfetto or chrome://tracing); no {png}: {err}", file=sys.stderr)
    else:
        print(f"profile: wrote {trace} (open it in Perfetto or chrome://tracing) and {png}", file=sys.stderr)
    return outputs


def _load_inputs(args: argparse.Namespace, program: Any) -> list[Any]:
    import torch

    from hir.runtime.inputs import random_inputs

    if args.inputs:
        inputs = torch.load(args.inputs)
        if not isinstance(inputs, list | tuple):
            raise ValueError(f"{args.inputs} must hold a list of tensors (torch.save([t0, t1, ...]))")
        return list(inputs)
    return random_inputs(program.global_input_types, seed=args.seed)


class _Clock:
    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.start = self.last = time.perf_counter()

    def lap(self, what: str) -> None:
        now = time.perf_counter()
        if self.verbose:
            print(f"[{now - self.start:8.3f}s] {what} (+{(now - self.last) * 1e3:.1f} ms)", file=sys.stderr)
        self.last = now


def _fail(err: Exception) -> NoReturn:
    from xdsl.utils.exceptions import ParseError

    from hir.diagnostics import format_parse_error

    if isinstance(err, ParseError):  # `file:line:col: error: message` and the source line, as hir-opt prints it
        print(format_parse_error(err), file=sys.stderr)
        sys.exit(1)
    message = str(err).split("\n\n")[0].strip() or type(err).__name__
    print(message if ": error:" in message else f"hir-run: error: {message}", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
