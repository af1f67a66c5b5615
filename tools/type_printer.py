"""
hir-opt's output: xDSL's MLIR target with a printer that renders each distinct tensor or memref
type once. A lowered module repeats a handful of types on thousands of ops, and rendering them
was 40 % of printing it; types are immutable, so the text of one is the text of all its uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from io import StringIO
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute
from xdsl.printer import Printer
from xdsl.targets.mlir import MLIRTarget


@dataclass(eq=False, repr=False)
class TypeCachingPrinter(Printer):
    _type_text: dict[Attribute, str] = field(default_factory=dict)

    def print_attribute(self, attribute: Attribute) -> None:
        if not isinstance(attribute, TensorType | MemRefType):
            super().print_attribute(attribute)
            return
        text = self._type_text.get(attribute)
        if text is None:
            rendered = StringIO()
            Printer(stream=rendered).print_attribute(attribute)
            text = self._type_text[attribute] = rendered.getvalue()
        self.print_string(text)


@dataclass(frozen=True)
class CachingMLIRTarget(MLIRTarget):
    """The `mlir` target; syntax highlighting keeps xDSL's own printer."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:
            super().emit(ctx, module, output)
            return
        printer = TypeCachingPrinter(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)
