"""
`hir-opt`: xdsl-opt with the fusion and hir dialects and passes registered.

Every registered pass is also a flag (`hir-opt --stream-lowering in.mlir` is `-p stream-lowering`);
flags are appended after `-p`, in command-line order. Errors print `file:line:col: error: ...` and
exit 1 (with `--verify-diagnostics` / `--parsing-diagnostics` they print to stdout and exit 0).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import IO, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import _empty_post_init, xDSLOptMain

from hir.api import available_dialects, available_passes
from hir.diagnostics import LocatedParser, format_parse_error, verify_located


class HirArgumentParser(argparse.ArgumentParser):
    """argparse whose errors list the available passes, since a mistyped pass flag is the usual cause."""

    pass_names: Sequence[str] = ()

    def __init__(self, **kwargs: object):
        # No abbreviations: `--stream-lowerin` must be an error, not silently `--stream-lowering`.
        super().__init__(allow_abbrev=False, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        hint = f"\navailable passes (as flags or in -p): {', '.join(self.pass_names)}" if self.pass_names else ""
        self.exit(2, f"{self.prog}: error: {message}{hint}\n")


class HirOptMain(xDSLOptMain):
    version_format = "hir-opt built from xdsl version {xdsl_version}"

    def __init__(self, args: Sequence[str] | None = None):
        # Same steps as xDSLOptMain.__init__, with an argument parser whose errors list the passes.
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self._chunk_line_offset = 0
        self.ctx = Context()
        self.register_all_dialects()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()
        arg_parser = HirArgumentParser(
            description="hir modular optimizer: xdsl-opt with the fusion and hir dialects and passes"
        )
        arg_parser.pass_names = tuple(self.available_passes)
        self.register_all_arguments(arg_parser)
        self.args = arg_parser.parse_args(args=args)
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        if self.args.disable_verify:
            Attribute.__post_init__ = _empty_post_init
        self.setup_pipeline()

    def register_all_dialects(self) -> None:
        for name, factory in available_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        for name, factory in available_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatedParser(self.ctx, io.read(), self.get_input_name(), self._chunk_line_offset)
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        self._chunk_line_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        existing = {opt for action in arg_parser._actions for opt in action.option_strings}
        group = arg_parser.add_argument_group("pass flags (appended after -p, in command-line order)")
        for name in self.available_passes:
            if f"--{name}" not in existing:
                group.add_argument(
                    f"--{name}",
                    dest="flag_passes",
                    action="append_const",
                    const=name,
                    help=f"same as appending `{name}` to -p",
                )

    def setup_pipeline(self) -> None:
        flags: list[str] = getattr(self.args, "flag_passes", None) or []
        self.args.passes = ",".join(p for p in (self.args.passes, *flags) if p)
        try:
            PassPipeline.parse_spec(self.available_passes, self.args.passes)
        except Exception as err:  # unknown pass or bad option: say so without a traceback
            sys.exit(f"hir-opt: error: {err}\navailable passes: {', '.join(self.available_passes)}")
        self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, self._between_passes)

    def _between_passes(self, previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None) -> None:
        if not self.args.disable_verify:
            verify_located(module)
        if previous is not None and next_pass is not None and self.args.print_between_passes:
            print(f"IR after {previous.name}:\n{module}\n\n")

    def apply_passes(self, prog: ModuleOp) -> None:
        if not self.pipeline.passes and not self.args.disable_verify:
            verify_located(prog)
        super().apply_passes(prog)

    def run(self) -> None:
        """xDSLOptMain.run with located, traceback-free diagnostics."""
        try:
            chunks, file_extension = self.prepare_input()
            output = self.prepare_output()
        except (OSError, ValueError) as err:
            _fail(f"hir-opt: error: {err}")
        failed = False
        try:
            for i, (chunk, offset) in enumerate(chunks):
                if i > 0:
                    output.write("// -----\n")
                try:
                    module = self.parse_chunk(chunk, file_extension, offset)
                    if module is not None:
                        self.apply_passes(module)
                        output.write(self.output_resulting_program(module))
                except ParseError as err:
                    err.span = dataclasses.replace(err.span, line_offset=offset)
                    failed |= self._report(format_parse_error(err), self.args.parsing_diagnostics)
                except DiagnosticException as err:
                    failed |= self._report(str(err).split("\n\n")[0].rstrip(), self.args.verify_diagnostics)
                finally:
                    chunk.close()
                output.flush()
        finally:
            if output is not sys.stdout:
                output.close()
        if failed:
            sys.exit(1)

    @staticmethod
    def _report(message: str, expected: bool) -> bool:
        """Prints a diagnostic: to stdout when the flags say it is expected, else to stderr. True if it failed."""
        print(message, file=sys.stdout if expected else sys.stderr)
        return not expected


def _fail(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    sys.exit(1)


def main(args: Sequence[str] | None = None) -> None:
    try:
        HirOptMain(args).run()
    except BrokenPipeError:  # `hir-opt ... | head`: the reader is gone, which is not an error of ours
        sys.stderr.close()
        sys.exit(0)


if __name__ == "__main__":
    main()
