"""
mlir-opt's IR printing flags: `--mlir-print-ir-before=PASS`, `--mlir-print-ir-after=PASS` (repeated
or comma-separated) and their `-all` forms. Each dump goes to stderr under a header naming the pass,
as mlir-opt's does: `// -----// IR Dump After FusionSegmentPass (fusion-segment) //----- //`.

A pipeline pass (stream-lowering) runs as its stages: naming it dumps before its first stage or after
its last; naming a stage (fusion-segment) dumps around that stage, inside a pipeline pass too; the
`-all` forms dump around every stage.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from hir.tools.type_printer import TypeCachingPrinter


class IRDumpError(ValueError):
    """A pass name in --mlir-print-ir-before/-after that no registered pass has."""


def pass_names(values: Sequence[str] | None, flag: str, available: Iterable[str]) -> frozenset[str]:
    """The names of repeated, comma-separated `flag=a,b` values; IRDumpError for an unknown one."""
    known = list(available)
    names = [name.strip() for value in values or () for name in value.split(",")]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            shown = f"'{name}'" if name else "'' (an empty name)"
            raise IRDumpError(f"{flag}: unknown pass {shown}{hint} (available passes: {', '.join(known)})")
    return frozenset(names)


@dataclass(frozen=True)
class IRDumps:
    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    before_all: bool = False
    after_all: bool = False
    generic: bool = False  # --print-op-generic applies to the dumps too

    @staticmethod
    def from_args(args: argparse.Namespace, available: Mapping[str, object]) -> IRDumps:
        return IRDumps(
            before=pass_names(args.mlir_print_ir_before, "--mlir-print-ir-before", available),
            after=pass_names(args.mlir_print_ir_after, "--mlir-print-ir-after", available),
            before_all=args.mlir_print_ir_before_all,
            after_all=args.mlir_print_ir_after_all,
            generic=args.print_op_generic,
        )

    @property
    def any(self) -> bool:
        return bool(self.before or self.after or self.before_all or self.after_all)

    def unused(self, passes: Sequence[ModulePass], owners: Sequence[ModulePass | None]) -> list[str]:
        """The names asked for that name no pass or stage of the pipeline (nothing would be dumped)."""
        present = {p.name for p in passes} | {o.name for o in owners if o is not None}
        return sorted((self.before | self.after) - present)

    def before_stage(self, module: ModuleOp, stage: ModulePass, owner: ModulePass | None, first: bool) -> None:
        """Before a stage runs: `first` when it is its pipeline pass's first stage."""
        if owner is not None and first and owner.name in self.before:
            self._dump("Before", owner, module)
        if self.before_all or stage.name in self.before:
            self._dump("Before", stage, module)

    def after_stage(self, module: ModuleOp, stage: ModulePass, owner: ModulePass | None, last: bool) -> None:
        """After a stage ran: `last` when it is its pipeline pass's last stage."""
        if self.after_all or stage.name in self.after:
            self._dump("After", stage, module)
        if owner is not None and last and owner.name in self.after:
            self._dump("After", owner, module)

    def _dump(self, when: str, p: ModulePass, module: ModuleOp) -> None:
        stream = sys.stderr  # read at each dump: the caller may have replaced it
        print(f"// -----// IR Dump {when} {type(p).__name__} ({p.name}) //----- //", file=stream)
        TypeCachingPrinter(stream=stream, print_generic_format=self.generic).print_op(module)
        print("\n", file=stream)
