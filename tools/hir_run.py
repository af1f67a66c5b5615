"""
`hir-run FILE`: executes a fusion- or hir-level module's entry function with PyTorch.

    hir-run examples/set_stream.mlir --check            # lower, run both, compare
    hir-run lowered.mlir --reference examples/set_stream.mlir --check
    hir-run prog.mlir --inputs in.pt --outputs out.pt --device cuda --num-streams 2 -v
    hir-run examples/set_stream.mlir --check --race-check  # also: no two streams race
    hir-run examples/set_stream.mlir --check --poison      # fresh buffers hold NaN: unwritten reads show
    hir-run examples/set_stream.mlir --profile prof        # prof/trace.json, prof/timeline.png
    hir-run examples/set_stream.mlir --check --memory-stats # peak allocated bytes: N
    hir-run examples/set_stream.mlir --check --cuda-graph  # captured once, replayed (GPU)

Inputs are a `torch.save`d list of tensors (random, seeded, when absent), loaded with
`weights_only=True` whatever the environment says; outputs are saved the same way. Under torchrun
each output is checked on the ranks that hold it (those of its mesh) and rank 0 saves or prints
them all (docs/multidevice.md, "Outputs on a sub-mesh"). Errors print
`file:line:col: error: ...` or `hir-run: error: ...` and exit 1; a bug of hir's own prints
`hir-run: internal error: ...` (HIR_TRACEBACK=1 shows its traceback).
"""

from __future__ import annotations

import argparse
import os
import pickle
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from hir.tools.version import VersionAction

STREAM_LOWERING = "stream-lowering"


def build_parser() -> argparse.ArgumentParser:
    from hir.runtime.device import DEVICE_KINDS
    from hir.runtime.distributed import DEFAULT_TIMEOUT, TIMEOUT_VARIABLE

    p = argparse.ArgumentParser(prog="hir-run", description="Execute a fusion or hir module with PyTorch.")
    p.add_argument("input_file", help="the .mlir module")
    p.add_argument("--entry", default="main", help="function to run (default: main)")
    p.add_argument("--inputs", help="torch.save'd list of input tensors (default: random)")
    p.add_argument("--outputs", help="where to torch.save the list of outputs")
    p.add_argument("--device", choices=tuple(DEVICE_KINDS), default=None, help="default: cuda if available, else cpu")
    p.add_argument("--num-streams", type=int, default=4, help="the runtime's number of streams (default 4)")
    p.add_argument("--seed", type=_seed_value, default=0, help="seed of the random inputs")
    p.add_argument("--check", action="store_true", help="compare with the fusion-level reference")
    p.add_argument("--reference", help="fusion-level module to compare a hir module with (implies --check)")
    p.add_argument("--race-check", action="store_true", help="check the run for races between streams")
    p.add_argument(
        "--poison",
        action="store_true",
        help="every buffer the runtime allocates starts as NaN (integers: a sentinel), so a read of memory "
        "never written shows (as HIR_POISON=1)",
    )
    p.add_argument(
        "--memory-stats",
        action="store_true",
        help="print the peak bytes of the hir.allocate buffers live at once (a lowered program's)",
    )
    p.add_argument(
        "--cuda-graph",
        action="store_true",
        help="run the lowered program as a CUDA graph: a warm-up run, the capture, then a replay (GPU only)",
    )
    p.add_argument(
        "--profile",
        metavar="DIR",
        help="after a warm-up run, profile one run: DIR/trace.json (a Chrome trace whose ranges name the ops) "
        "and DIR/timeline.png (needs matplotlib, which setup.sh installs: pip install -e '.[plot]' in this checkout)",
    )
    p.add_argument("-p", "--pipeline", default=STREAM_LOWERING, help="passes --check applies to a fusion-level module")
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds a collective or barrier of a multi-process run may take (default: ${TIMEOUT_VARIABLE}, "
        f"else {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="print progress and timings")
    p.add_argument("--version", action=VersionAction)
    return p


def _seed_value(text: str) -> int:
    """--seed's value: an integer torch's generators take (-2^63 to 2^64 - 1), else argparse's usage error."""
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not -(1 << 63) <= seed < 1 << 64:
        raise argparse.ArgumentTypeError(f"{seed} is out of range (-2^63 to 2^64 - 1)")
    return seed


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    if args.poison:  # read by every allocation of this process (runtime/poison.py)
        os.environ["HIR_POISON"] = "1"
    try:
        from hir.api import parse_pipeline

        parse_pipeline(args.pipeline)  # a malformed -p fails now, naming the pass and option
        run(args)
    except Exception as err:  # every error ends here, without a traceback (unless asked for)
        _fail(err)


def run(args: argparse.Namespace) -> None:
    clock = _Clock(args.verbose)
    import hir
    from hir.diagnostics import UserError
    from hir.runtime.compare import computed_dtypes, tolerance_for
    from hir.runtime.distributed import Session
    from hir.runtime.executor import compile_program

    if args.outputs and not Path(args.outputs).resolve().parent.is_dir():
        raise UserError(f"--outputs {args.outputs}: the folder {Path(args.outputs).parent} does not exist")
    session = Session.from_environment(args.device, args.timeout)
    clock.lap(f"started: {session.describe()}")
    module = hir.parse_file(args.input_file)
    program = compile_program(module, args.entry, race_check=args.race_check)
    clock.lap(f"parsed, verified and compiled {args.input_file}")

    reference = None
    compared = ""
    if args.reference:
        if not program.is_hir:
            raise UserError(
                f"--reference compares a hir module with the fusion-level module it was lowered from, but "
                f"{args.input_file} is fusion-level: use --check to lower and compare it"
            )
        reference = compile_program(hir.parse_file(args.reference), args.entry)
        if reference.is_hir:
            raise UserError(f"--reference {args.reference} is a hir module: give the fusion-level module")
        compared = f"the fusion-level reference {args.reference} against {args.input_file}"
    elif args.check:
        if program.is_hir:
            raise UserError("--check on a hir module needs --reference FILE (its fusion-level module)")
        reference = program
        lowered = hir.run_pipeline(hir.parse_file(args.input_file), args.pipeline)
        program = compile_program(lowered, args.entry, race_check=args.race_check)
        if not program.is_hir:
            raise UserError(
                f"--check compares the fusion-level program with the hir program -p '{args.pipeline}' lowers it to, "
                f"but that pipeline leaves @{args.entry} at the fusion level, so the check would compare the "
                f"reference with itself: use a pipeline that lowers it, such as the default -p {STREAM_LOWERING}"
            )
        compared = f"the fusion-level reference against the program lowered by -p '{args.pipeline}'"
        clock.lap(f"lowered with -p {args.pipeline}")
    if program.processes > 1 and session.world_size == 1:
        raise UserError(_needs_processes(args, program))

    options: dict[str, Any] = {}
    if args.memory_stats:
        if not program.is_hir:
            raise UserError(
                "--memory-stats counts the buffers of hir.allocate: run a hir module, or add --check to lower this one"
            )
        if args.cuda_graph:
            raise UserError(
                "--memory-stats counts the hir.allocate buffers of a plain run, and a CUDA graph replay allocates "
                "nothing: leave out --cuda-graph to measure them"
            )
        from hir.runtime.memory_stats import MemoryStats

        options["memory_stats"] = stats = MemoryStats()
    inputs = _load_inputs(args, program)
    clock.lap(f"{len(inputs)} inputs ready")
    draws = reference is not None and _draws_random_numbers(reference.func)
    if draws:  # both runs from one seed: they agree where they draw the same tensors in the same order
        _seed()
    if args.profile:
        outputs = _profiled_run(session, program, inputs, args, **options)
    else:
        outputs = session.run(program, inputs, num_streams=args.num_streams, cuda_graph=args.cuda_graph, **options)
    clock.lap(f"ran @{args.entry} ({'hir' if program.is_hir else 'fusion'} level)")
    if reference is not None:
        if draws:
            _seed()
        expected = session.run_reference(reference, inputs)
        clock.lap("ran the reference")
        tolerance = tolerance_for(computed_dtypes(reference.func))
        _check(session, program, outputs, expected, tolerance, compared, _SEEDED if draws else "")

    if session.is_main:
        if args.race_check:
            print("race check: OK (no two accesses to the same bytes, one a write, are unordered)")
    if args.memory_stats:
        rank = f"rank {session.rank}: " if session.world_size > 1 else ""
        print(f"{rank}peak allocated bytes: {stats.peak_bytes}")
    if args.outputs or reference is None:  # rank 0 saves or prints them all: it gets those it does not hold
        outputs = session.to_main(program, outputs)
    if session.is_main:
        if args.outputs:
            _save_outputs(args.outputs, outputs)
            clock.lap(f"saved outputs to {args.outputs}")
        elif reference is None:
            for k, t in enumerate(outputs):
                print(f"output #{k}: {tuple(t.shape)} {t.dtype} sum={t.double().sum().item():.6g}")
    session.close()


RANDOM_SEED = 0
_SEEDED = (
    "the program draws random numbers, fusion.random: both runs were seeded alike, and agree only where the "
    "lowering draws the same tensors in the same order, which a stream loop that draws its chunks one by one does not"
)


def _seed() -> None:
    import torch

    torch.manual_seed(RANDOM_SEED)


def _draws_random_numbers(function: Any) -> bool:
    from hir.dialects import fusion

    return any(isinstance(op, fusion.RandomOp) for op in function.walk())


def _check(
    session: Any,
    program: Any,
    outputs: Sequence[Any],
    expected: Sequence[Any],
    tolerance: Any,
    compared: str,
    note: str = "",
) -> None:
    """
    Compares each output with the reference on every rank that holds it (`Session.holds`): the
    ranks exchange what they found, all of them fail when one found a difference, and rank 0
    reports, each difference with the rank that saw it when that is not rank 0.
    """
    from hir.diagnostics import UserError
    from hir.runtime.compare import mismatches

    held = session.holds(program)
    found: dict[int, str] = {}
    if len(outputs) != len(expected):
        found[-1] = "; ".join(mismatches(outputs, expected, tolerance))
    else:
        for k in (k for k, keep in enumerate(held) if keep):
            for problem in mismatches([outputs[k]], [expected[k]], tolerance):
                found[k] = f"output #{k}" + problem.removeprefix("output #0")
    per_rank: list[Any] = [(held, found)]
    if session.world_size > 1:
        import torch.distributed as dist

        per_rank = [None] * session.world_size
        dist.all_gather_object(per_rank, (held, found))
    problems = []
    for k in sorted({k for _, seen in per_rank for k in seen}):
        rank, problem = next((r, seen[k]) for r, (_, seen) in enumerate(per_rank) if k in seen)
        problems.append(problem if rank == 0 else f"{problem} (on rank {rank})")
    if problems:
        session.close()  # every rank fails here, together: the job ends cleanly before the report
        if not session.is_main:
            raise UserError(f"check failed: {compared} differ (rank 0 reports where)")
        raise UserError(
            f"check failed: {compared} differ\n  " + "\n  ".join(problems) + (f"\n  ({note})" if note else "")
        )
    if not session.is_main:
        return
    count = "1 output matches" if len(outputs) == 1 else f"{len(outputs)} outputs match"
    where = [
        f"output #{k} on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"
        for k in range(len(held))
        if len(ranks := [r for r, (h, _) in enumerate(per_rank) if h[k]]) < len(per_rank)
    ]
    if where:
        count += f"; compared on the ranks that hold each: {'; '.join(where)}"
    print(f"check: OK ({compared}: {count})")


def _needs_processes(args: argparse.Namespace, program: Any) -> str:
    """Why a multi-device program does not run in one process, and the command that runs it."""
    n = program.processes
    command = shlex.join(
        ["python", "-m", "torch.distributed.run", "--nproc-per-node", str(n), "-m", "hir.tools.hir_run", *args.argv]
    )
    return (
        f"{args.input_file} runs on {n} devices (ids {', '.join(map(str, program.device_ids))}), one process "
        f"each, but this is a single process: run it with {command}"
    )


def _profiled_run(session: Any, program: Any, inputs: list[Any], args: argparse.Namespace, **options: Any) -> list[Any]:
    """
    Runs the program once to warm up (allocator, kernels, the profiled steps), then once under
    torch.profiler; writes the Chrome trace and its timeline into the --profile folder (each rank
    its own under torchrun) and returns the profiled run's outputs.
    """
    import torch.distributed
    from torch.profiler import ProfilerActivity, profile

    from hir.diagnostics import UserError
    from hir.runtime.compiler import profiler_range_type
    from hir.runtime.timeline import PlottingUnavailable, render

    folder = Path(args.profile)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--profile {folder}: not a directory")
    folder.mkdir(parents=True, exist_ok=True)
    session.run(program, inputs, num_streams=args.num_streams, cuda_graph=args.cuda_graph)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if session.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        with profiler_range_type()("hir-run: profiler warm-up"):
            pass  # the profiler's first range costs about a millisecond, which the first op would show
        if session.world_size > 1:
            # The ranks start together: a rank's first wait would otherwise show a peer's profiler start-up.
            torch.distributed.barrier()
        outputs = session.run(program, inputs, num_streams=args.num_streams, cuda_graph=args.cuda_graph, **options)
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


def _argument_named(message: str, function: Any) -> str:
    """`input #i ...` as `argument %name (input #i) of @f ...`, where the argument has a name in the text."""
    index, sep, rest = message.removeprefix("input #").partition(" ")
    if not (message.startswith("input #") and sep and index.isdigit()):
        return message
    args = function.body.blocks[0].args
    name = args[int(index)].name_hint if int(index) < len(args) else None
    owner = f"of @{function.sym_name.data}"
    return f"argument %{name} (input #{index}) {owner} {rest}" if name else f"input #{index} {owner} {rest}"


def _load_inputs(args: argparse.Namespace, program: Any) -> list[Any]:
    import torch

    from hir.diagnostics import LocatedError, UserError
    from hir.runtime.inputs import random_inputs

    if not args.inputs:
        try:
            return random_inputs(program.global_input_types, seed=args.seed)
        except UserError as err:  # told at @entry's line, with the argument's name
            raise LocatedError(program.func, _argument_named(str(err), program.func)) from None
    try:
        # weights_only=True explicitly: an environment that asks torch.load to unpickle anything
        # (TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1, or torch < 2.6, whose default is False) would let a
        # crafted file run code.
        inputs = torch.load(args.inputs, map_location="cpu", weights_only=True)
    except OSError as err:
        raise UserError(f"--inputs {args.inputs}: {err.strerror or err}") from None
    except Exception as err:
        text = str(err).strip()
        if "unsupported global" in text.lower():  # a pickled class or function: loading it could run code
            why = "it holds Python objects other than tensors and numbers, which could run code when loaded"
        elif isinstance(err, EOFError):
            why = "the file is empty or cut short"
        elif isinstance(err, KeyError | pickle.UnpicklingError | RuntimeError):
            why = "the file is not in torch.save's format"
        else:
            why = f"{type(err).__name__}: {text.splitlines()[0] if text else 'unreadable'}"
        raise UserError(f"--inputs {args.inputs} is not a list of tensors written by torch.save ({why})") from None
    if not isinstance(inputs, list | tuple):
        raise UserError(
            f"--inputs {args.inputs} holds a {type(inputs).__name__}, expected a list of tensors "
            "(torch.save([t0, t1, ...], path))"
        )
    for position, value in enumerate(inputs):
        if isinstance(value, torch.Tensor) and value.is_meta:  # shape and dtype only: nothing to run on
            raise UserError(f"--inputs {args.inputs}: input #{position} is a meta tensor, which holds no data")
    return list(inputs)


def _save_outputs(path: str, outputs: Sequence[Any]) -> None:
    import torch

    from hir.diagnostics import UserError

    try:
        torch.save([t.cpu() if isinstance(t, torch.Tensor) else t for t in outputs], path)
    except (OSError, RuntimeError) as err:
        raise UserError(f"--outputs {path}: cannot write it ({str(err).strip().splitlines()[0]})") from None


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
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from hir.diagnostics import TRACEBACK_VARIABLE, format_parse_error, internal_error
    from hir.pipeline import PipelineError

    if isinstance(err, ParseError):  # `file:line:col: error: message` and the source line, as hir-opt prints it
        message = format_parse_error(err)
    elif isinstance(err, DiagnosticException | PipelineError):
        message = str(err).split("\n\n")[0].strip() or type(err).__name__
        if ": error:" not in message:
            message = f"hir-run: error: {message}"
    elif isinstance(err, OSError):  # a file that cannot be read or written
        message = f"hir-run: error: {err.filename or ''}{': ' if err.filename else ''}{err.strerror or err}"
    elif os.environ.get(TRACEBACK_VARIABLE) == "1":
        raise err
    else:
        message = internal_error("hir-run", err)
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE", "1")
    if rank is not None and world != "1":
        first, _, rest = message.partition("\n")
        message = f"{first} (rank {rank} of {world})" + (f"\n{rest}" if rest else "")
    sys.stderr.write(message + "\n")  # one write: the ranks of a job share the terminal
    sys.stderr.flush()
    sys.exit(1)


if __name__ == "__main__":
    main()
