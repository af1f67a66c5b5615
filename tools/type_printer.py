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
    # Keyed by identity, which is stable while the printed module holds the type (the entry keeps
    # it alive too): hashing a type hashes its shape and encoding again on every use.
    _type_text: dict[int, tuple[Attribute, str]] = field(default_factory=dict)

    def print_attribute(self, attribute: Attribute) -> None:
        if not isinstance(attribute, TensorType | MemRefType):
            super().print_attribute(attribute)
            return
        cached = self._type_text.get(id(attribute))
        if cached is None:
            rendered = StringIO()
            Printer(stream=rendered).print_attribute(attribute)
            cached = self._type_text[id(attribute)] = (attribute, rendered.getvalue())
        self.print_string(cached[1])

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        # Most pieces are short and have no newline: write them without `print`'s keyword handling.
        if "\n" in text or self.stream is None:
            super().print_string(text, indent=indent)
            return
        self._current_column += len(text)
        self.stream.write(text)


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
