"""
`hir-opt`: xdsl-opt with the fusion and hir dialects and passes registered, built on xDSLOptMain's
hooks (registration, arguments, pipeline set-up, pass application, output) so that its flags keep
working as xDSL evolves.

What it adds: every registered pass is also a flag (`hir-opt --stream-lowering in.mlir` is
`-p stream-lowering`; flags are appended after `-p`, in command-line order); `--list-passes`;
one-line errors for malformed pipelines; `file:line:col: error:` diagnostics, every chunk of
`--split-input-file` processed even after one fails (exit 1); pipeline passes (`stream-lowering`)
timed and printed stage by stage, verified after their last stage (after each with
`--verify-each-stage`); `--verify-diagnostics` that checks mlir-opt's
`// expected-error@+1 {{...}}` annotations (see tools/diagnostic_verifier.py); mlir-opt's
`--pass-pipeline='builtin.module(...)'` (tools/anchored_pipeline.py), `--mlir-print-ir-before/after`
(tools/ir_dumps.py) and `--mlir-timing` (tools/timing_report.py); `--version` with hir's, xDSL's and
PyTorch's versions (no `-v`: mlir-opt has none either).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from typing import IO, Any, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, MultipleSpansParseError, ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from hir.api import available_dialects, available_passes
from hir.collection import COMPILING_THRESHOLDS, fewer_collections
from hir.diagnostics import (
    TRACEBACK_VARIABLE,
    LocatedParser,
    check_dominance,
    format_parse_error,
    internal_error,
    verify_located,
)
from hir.dialects.shaped_types import check_signatures
from hir.pipeline import PipelineError, expand_stages, parse_pass_pipeline, pass_options, pass_summary
from hir.tools.anchored_pipeline import module_pipeline
from hir.tools.diagnostic_verifier import Diagnostic, Source, diagnostics_of, has_annotations, verify_chunk
from hir.tools.ir_dumps import IRDumpError, IRDumps
from hir.tools.timing_report import DISPLAYS, TimingReport
from hir.tools.type_printer import CachingMLIRTarget
from hir.tools.version import VersionAction

# xDSL passes without a docstring of their own.
_SUMMARIES = {
    "cse": "Eliminates common subexpressions.",
    "dce": "Erases operations without side effects whose results are unused.",
}


@dataclass
class _Chunk:
    """One chunk of the input (the whole input without --split-input-file) and what happened to it."""

    source: Source
    diagnostics: list[Diagnostic] = field(default_factory=list)
    printed: list[str] = field(default_factory=list)
    """The diagnostics as hir-opt prints an error (for files without annotations)."""
    failed: bool = False


class HirOptMain(xDSLOptMain):
    def __init__(self, args: Sequence[str] | None = None):
        self._timing = TimingReport()  # --mlir-timing's Total starts here
        self._dumps = IRDumps()
        self._chunks: dict[IO[bytes], _Chunk] = {}
        self._chunk: _Chunk | None = None
        self._chunk_line_offset = 0
        self._done = 0  # stages done in the current application of the pipeline
        self._started = 0.0  # when the current stage started
        self._pipeline_time = 0.0  # the time so far of the pipeline pass whose stages run
        self.doing = "reading the arguments"  # what an internal error interrupted
        super().__init__("hir modular optimizer: xdsl-opt with the fusion and hir dialects and passes", args)
        # `-` is stdin / stdout, as in mlir-opt; xDSL reads them when no file is named.
        if self.args.input_file == "-":
            self.args.input_file = None
        if self.args.output_file == "-":
            self.args.output_file = None

    # --- registration -----------------------------------------------------------------------

    def register_all_dialects(self) -> None:
        # Not super(): that would register every xDSL dialect; hir programs use ours and a few.
        for name, factory in available_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        # Not super(): of xDSL's passes only canonicalize, cse and dce apply to fusion and hir.
        for name, factory in available_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        # The other targets emit assembly of other dialects (llvm, riscv, ...), which a hir module never is.
        super().register_all_targets()
        self.available_targets = {"mlir": lambda: CachingMLIRTarget}

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:  # xDSL's frontend with a parser that locates every op
            parser = LocatedParser(self.ctx, io.read(), self.get_input_name(), self._chunk_line_offset)
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        # xDSLOptMain.__init__ makes a plain ArgumentParser and has no hook for its class, so the
        # three behaviours we change are set on the instance: no abbreviations (`--stream-lowerin`
        # must be an error, not `--stream-lowering`), our name, and errors that exit 1 and list passes.
        arg_parser.allow_abbrev = False
        arg_parser.prog = "hir-opt"
        arg_parser.error = lambda message: _usage_error(arg_parser, message, self.available_passes)  # type: ignore[method-assign]
        _drop_option(arg_parser, "-v")  # xDSL's `-v` is --version; hir-run's -v is --verbose, mlir-opt has none
        _drop_option(arg_parser, "--version")
        arg_parser.add_argument("--version", action=VersionAction)
        arg_parser.add_argument(
            "--verify-each-stage",
            action="store_true",
            help="verify the IR after every stage of a pipeline pass such as stream-lowering, not only "
            "after the pass (finds the stage that broke the IR; slower: every intermediate module is verified)",
        )
        arg_parser.add_argument(
            "--list-passes",
            action=_ListPassesAction,
            passes=self.available_passes,
            help="print every pass with its options (types, defaults, allowed values) and exit",
        )
        _register_mlir_flags(arg_parser)
        existing = {opt: action for action in arg_parser._actions for opt in action.option_strings}
        existing["--print-between-passes"].help = (
            "print the IR after every pass and stage but the last on stdout, before the result "
            "(--mlir-print-ir-after-all prints to stderr)"
        )
        existing["--time-passes"].help = "print one line per pass and stage with its time, on stderr"
        for flag in ("--verify-diagnostics", "--parsing-diagnostics"):  # xDSL's help says "prints ... exits 0"
            existing[flag].help = (
                "check parse, verifier and pass diagnostics against the input's `// expected-error@+1 {{...}}` "
                "annotations, as mlir-opt does; fail (exit 1) on any mismatch"
            )
        group = arg_parser.add_argument_group(
            "pass flags (appended after -p, in command-line order; options go in -p 'name{option=value ...}')"
        )
        for name, factory in self.available_passes.items():
            if f"--{name}" not in existing:
                group.add_argument(f"--{name}", dest="flag_passes", action=_PassFlag, const=name, factory=factory)

    # --- the pipeline -----------------------------------------------------------------------

    def setup_pipeline(self) -> None:
        started = time.perf_counter()
        self._setup_pipeline()
        self._timing.add(("Pipeline set-up",), time.perf_counter() - started)  # mostly importing the passes

    def _setup_pipeline(self) -> None:
        if self.args.pass_pipeline is not None:
            if self.args.passes:
                _fail("hir-opt: error: -p and --pass-pipeline both give the pipeline: use one of them")
            try:
                self.args.passes = module_pipeline(self.args.pass_pipeline)
                parse_pass_pipeline(self.args.passes, self.available_passes)
            except PipelineError as err:  # the anchor's errors name the flag, the list's get it in front
                named = "--pass-pipeline" in str(err)
                _fail(f"hir-opt: error: {err}" if named else f"hir-opt: error: --pass-pipeline: {err}")
        try:  # our parse first: xDSL's raises a BaseException or a message that names no pass
            parse_pass_pipeline(self.args.passes, self.available_passes)  # -p as the user wrote it
        except PipelineError as err:
            _fail(f"hir-opt: error: {err}")
        try:
            self._dumps = IRDumps.from_args(self.args, self.available_passes)
        except IRDumpError as err:
            _fail(f"hir-opt: error: {err}")
        flags: list[str] = getattr(self.args, "flag_passes", None) or []
        self.args.passes = ",".join(p for p in (self.args.passes, *flags) if p)
        # xDSL's pipeline and callback (verification, --time-passes, --print-between-passes),
        # with every pipeline pass replaced by its stages so that the callback runs after each.
        super().setup_pipeline()
        self._xdsl_callback = self.pipeline.callback
        self._stage_owner = [
            (p if stage is not p else None) for p in self.pipeline.passes for stage in expand_stages([p])
        ]
        self.pipeline = PassPipeline(expand_stages(self.pipeline.passes), self._between_passes)
        for name in self._dumps.unused(self.pipeline.passes, self._stage_owner):
            print(f"hir-opt: warning: no pass of the pipeline is named '{name}': no IR printed for it", file=sys.stderr)

    def _between_passes(self, previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None) -> None:
        # A pipeline pass's time is the sum of its stages' times as xDSL's callback measures them:
        # from the end of one call of that callback to the start of the next.
        stopped = time.perf_counter()
        if previous is None:
            self._done, self._pipeline_time = 0, 0.0
        else:
            self._pipeline_time += stopped - self._started
            owner = self._stage_owner[self._done]
            path = (owner.name, previous.name) if owner is not None else (previous.name,)
            self._timing.add(path, stopped - self._started)
            self._dumps.after_stage(module, previous, owner, self._ends_pass())  # before verifying: shows a broken IR
        verify = not self.args.disable_verify and (previous is None or self._ends_pass() or self.args.verify_each_stage)
        assert self._xdsl_callback is not None
        skip_verification, time_passes = self.args.disable_verify, self.args.time_passes
        self.args.disable_verify = not verify  # xDSL's callback verifies unless told not to
        self.args.time_passes = False  # timed here, onto stderr as mlir-opt does: stdout holds the IR
        verifying = time.perf_counter()
        try:
            if time_passes and previous is not None:
                print(f"Pass {previous.name} took {stopped - self._started} seconds", file=sys.stderr)
            self._xdsl_callback(previous, module, next_pass)
        except VerifyException:
            verify_located(module)  # the same failure, named by the failing op's file:line:col
            raise
        finally:
            self.args.disable_verify, self.args.time_passes = skip_verification, time_passes
        if verify:
            check_dominance(module)  # xDSL's verifier does not check it
            check_signatures(module)  # nor function types, which no op verifier sees
            self._timing.add(("Verifier",), time.perf_counter() - verifying)
        if previous is not None:
            self._end_stage()
        if next_pass is not None:
            owner = self._stage_owner[self._done]
            first = owner is not None and (self._done == 0 or self._stage_owner[self._done - 1] is not owner)
            self._dumps.before_stage(module, next_pass, owner, first)
        self._started = time.perf_counter()
        self.doing = f"running pass {next_pass.name}" if next_pass is not None else "printing the result"

    def _ends_pass(self) -> bool:
        """Whether the stage that just ran ends a pass of -p (a plain pass, or a pipeline pass's last stage)."""
        owner = self._stage_owner[self._done]
        following = self._done + 1
        return owner is None or following == len(self._stage_owner) or self._stage_owner[following] is not owner

    def _end_stage(self) -> None:
        """After a stage of a pipeline pass, and after its last: `Pass stream-lowering took ... seconds`."""
        owner = self._stage_owner[self._done]
        self._done += 1
        if owner is None:
            self._pipeline_time = 0.0
        elif self._done == len(self._stage_owner) or self._stage_owner[self._done] is not owner:
            if self.args.time_passes:
                print(f"Pass {owner.name} took {self._pipeline_time} seconds", file=sys.stderr)
            self._pipeline_time = 0.0

    def apply_passes(self, prog: ModuleOp) -> None:
        try:
            super().apply_passes(prog)
        except DiagnosticException as err:
            self._report(err)

    # --- input, output and diagnostics -------------------------------------------------------

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            chunks, file_extension = super().prepare_input()
        except OSError as err:
            _fail(f"hir-opt: error: {err}")
        except ValueError as err:  # an extension no frontend reads
            _fail(f"hir-opt: error: {err} (read it as MLIR with -f mlir)")
        # Each chunk's text is kept: --verify-diagnostics reads its annotations.
        kept: list[tuple[IO[bytes], int]] = []
        for io, offset in chunks:
            data = io.read()
            io.close()
            buffer = BytesIO(data)
            self._chunks[buffer] = _Chunk(Source(self.get_input_name(), data.decode(errors="replace"), offset + 1))
            kept.append((buffer, offset))
        return kept, file_extension

    def prepare_output(self) -> IO[str]:
        try:
            return super().prepare_output()
        except OSError as err:
            _fail(f"hir-opt: error: {err}")

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        self.doing = f"parsing {self.get_input_name()}"
        self._chunk = self._chunks[chunk]
        self._chunk_line_offset = start_offset
        parsing = time.perf_counter()
        try:
            return super().parse_chunk(chunk, file_extension, start_offset)
        except ParseError as err:
            err.span = dataclasses.replace(err.span, line_offset=start_offset)  # lines of the file, not the chunk
            if isinstance(err, MultipleSpansParseError):
                err.refs = [(dataclasses.replace(span, line_offset=start_offset), text) for span, text in err.refs]
            self._report(err)
            return None  # xDSL's run then skips the chunk
        except DiagnosticException as err:  # an attribute or type whose verifier fails while it is built
            self._report(err)
            return None
        finally:
            self._timing.add(("Parser",), time.perf_counter() - parsing)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self._chunk is not None and self._chunk.failed:
            return ""  # a pass failed on this chunk: its half-transformed IR is not a result
        printing = time.perf_counter()
        try:
            return super().output_resulting_program(prog)
        finally:
            self._timing.add(("Output",), time.perf_counter() - printing)

    def run(self) -> None:
        try:
            self._run()
        finally:
            if self.args.mlir_timing:
                sys.stdout.flush()
                self._timing.write(sys.stderr, self.args.mlir_timing_display)

    def _run(self) -> None:
        with fewer_collections():
            super().run()  # parses, transforms and prints each chunk through the hooks above
        failed = any(chunk.failed for chunk in self._chunks.values())
        if self._verifying and not any(has_annotations(chunk.source.text) for chunk in self._chunks.values()):
            # A file without a single expected-* annotation: xdsl-opt's behaviour, which scripts that
            # pipe the diagnostics into FileCheck rely on (print them on stdout, exit 0).
            for chunk in self._chunks.values():
                for message in chunk.printed:
                    print(message)
            return
        if self._verifying:
            problems = [p for chunk in self._chunks.values() for p in verify_chunk(chunk.source, chunk.diagnostics)]
            for problem in problems:
                print(problem, file=sys.stderr)
            failed = bool(problems)
        if failed:
            sys.exit(1)

    @property
    def _verifying(self) -> bool:
        return self.args.verify_diagnostics or self.args.parsing_diagnostics

    def _report(self, error: ParseError | DiagnosticException) -> None:
        """Records a chunk's failure: a diagnostic to check (--verify-diagnostics), else an error on stderr."""
        assert self._chunk is not None
        self._chunk.failed = True
        if isinstance(error, ParseError):
            lines = [format_parse_error(error)]
            lines += [f"{note.location}: note: {note.message}" for note in diagnostics_of(error)[1:]]
        else:
            message = str(error).split("\n\n")[0].strip() or type(error).__name__
            lines = [message if ": error: " in message else f"hir-opt: error: {message}"]
        if self._verifying:
            self._chunk.diagnostics += diagnostics_of(error)
            self._chunk.printed += lines
        else:
            for line in lines:
                print(line, file=sys.stderr)


class _PassFlag(argparse.Action):
    """
    `--name`: appends the pass to the pipeline. Its help (the pass's summary and options) is
    made only when printed: it imports the pass's module, and importing every pass costs each
    run of hir-opt about 0.45 s.
    """

    def __init__(
        self, option_strings: list[str], dest: str, const: str, factory: Callable[[], type[ModulePass]], **kwargs: Any
    ):
        self._factory = factory
        super().__init__(option_strings, dest, nargs=0, const=const, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None):
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), self.const])

    @property  # type: ignore[override]
    def help(self) -> str:
        return _flag_help(self.const, self._factory)

    @help.setter
    def help(self, value: str | None) -> None:  # argparse.Action.__init__ sets it: the property answers instead
        pass


def _flag_help(name: str, factory: Callable[[], type[ModulePass]]) -> str:
    cls = factory()
    summary = pass_summary(cls) or _SUMMARIES.get(name, "")
    options = "; ".join(o.described() for o in pass_options(cls))
    text = summary + (f" Options: {options}." if options else "")
    return text.replace("%", "%%")  # argparse formats help with %


def _format_pass_list(passes: Mapping[str, Callable[[], type[ModulePass]]]) -> str:
    lines = ["Passes (-p 'name{option=value ...},name', or --name to append one without options):"]
    for name, factory in passes.items():
        cls = factory()
        lines.append(f"  {name:<30} {pass_summary(cls) or _SUMMARIES.get(name, '')}".rstrip())
        lines += [f"      {option.described()}" for option in pass_options(cls)]
        if callable(getattr(cls, "stages", None)):
            try:
                stages = expand_stages([cls()])
            except TypeError:  # a required option: no default instance to ask
                continue
            lines.append(f"      stages: {', '.join(stage.name for stage in stages)}")
    return "\n".join(lines)


class _ListPassesAction(argparse.Action):
    """`--list-passes`: prints the passes and exits, like `--version`."""

    def __init__(self, *args: Any, passes: Mapping[str, Callable[[], type[ModulePass]]], **kwargs: Any):
        super().__init__(*args, nargs=0, **kwargs)
        self.passes = passes

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(_format_pass_list(self.passes))
        parser.exit()


def _register_mlir_flags(parser: argparse.ArgumentParser) -> None:
    """mlir-opt's pipeline, IR printing and timing flags, under their mlir-opt names."""
    group = parser.add_argument_group("mlir-opt's debugging flags (IR dumps and timing go to stderr)")
    group.add_argument(
        "--pass-pipeline",
        metavar="PIPELINE",
        help="the pipeline in mlir-opt's syntax, 'builtin.module(cse,stream-lowering{backend=ring})'; the same as "
        "-p with the list inside builtin.module(...)",
    )
    for when in ("before", "after"):
        group.add_argument(
            f"--mlir-print-ir-{when}",
            action="append",
            metavar="PASS",
            help=f"print the IR {when} the named passes (repeat the flag or separate names with commas); a pipeline "
            f"pass such as stream-lowering prints {when} all its stages, a stage's name {when} that stage",
        )
        group.add_argument(
            f"--mlir-print-ir-{when}-all", action="store_true", help=f"print the IR {when} every pass and stage"
        )
    group.add_argument(
        "--mlir-timing",
        action="store_true",
        help="print the time of parsing, each pass, verification and printing as a table, as mlir-opt does",
    )
    group.add_argument(
        "--mlir-timing-display",
        choices=DISPLAYS,
        default="list",
        help="list: one row per pass name, slowest first (the default); tree: stages under their pipeline pass",
    )


def _drop_option(parser: argparse.ArgumentParser, option: str) -> None:
    """Removes `option` from the argument that xDSL registered it for (and the argument, if it was its only name)."""
    action = parser._option_string_actions.pop(option)
    action.option_strings.remove(option)
    if not action.option_strings:
        parser._remove_action(action)
        for group in parser._action_groups:
            if action in group._group_actions:
                group._group_actions.remove(action)


def _usage_error(parser: argparse.ArgumentParser, message: str, passes: Mapping[str, object]) -> NoReturn:
    parser.print_usage(sys.stderr)
    hint = ""
    if message.startswith("unrecognized arguments"):  # usually a mistyped pass flag
        hint = f"\navailable passes (as flags or in -p): {', '.join(passes)}"
    _fail(f"{parser.prog}: error: {message}{hint}")


def _fail(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    sys.exit(1)


def main(args: Sequence[str] | None = None) -> None:
    """hir-opt in this process: the collector's settings are the caller's again afterwards."""
    tool: HirOptMain | None = None
    try:
        tool = HirOptMain(args)
        tool.run()
    except BrokenPipeError:  # `hir-opt ... | head`: the reader is gone, which is not an error of ours
        sys.stderr.close()
        sys.exit(0)
    except Exception as err:  # a bug of ours: one line, unless the traceback is asked for
        if os.environ.get(TRACEBACK_VARIABLE) == "1":
            raise
        _fail(internal_error("hir-opt", err, tool.doing if tool is not None else None))


def command() -> None:
    """
    The `hir-opt` executable: `main` in a process that ends with it. The objects of the imports
    live as long as the process, so they are frozen (no collection rescans them); the compiling
    thresholds (hir.collection) hold from the start, dialects and passes being loaded included;
    and at the end the compilation's objects are frozen too, which spares the exit's full
    collection a scan of them (1.1 s on a 10 000-op module).
    """
    gc.freeze()
    gc.set_threshold(*COMPILING_THRESHOLDS)
    try:
        main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    command()
