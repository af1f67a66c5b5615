"""
The Python API: parse, transform and execute fusion and hir modules.

    import hir
    module = hir.parse_file("examples/set_stream.mlir")
    lowered = hir.run_pipeline(module, "stream-lowering")
    outputs = hir.execute(lowered, [torch.randn(4, 8)], num_streams=2)
"""

from __future__ import annotations

from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from hir.tools.diagnostics import LocatedParser, verify_located


def make_context() -> Context:
    """A context with the fusion and hir dialects and the xDSL dialects hir programs use."""
    from hir.tools.hir_opt import available_dialects

    ctx = Context()
    for name, factory in available_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parses and verifies a module; errors name `name:line:col`."""
    module = LocatedParser(ctx or make_context(), text, name).parse_module()
    verify_located(module)
    return module


def parse_file(path: str | Path, ctx: Context | None = None) -> ModuleOp:
    return parse(Path(path).read_text(), str(path), ctx)


def run_pipeline(module: ModuleOp, pipeline: str, ctx: Context | None = None) -> ModuleOp:
    """Applies a pass pipeline (`-p` syntax, e.g. "stream-lowering,canonicalize") in place and returns the module."""
    from hir.tools.hir_opt import available_passes

    def verify_between(_prev: object, m: ModuleOp, _next: object) -> None:
        verify_located(m)

    PassPipeline.parse_spec(available_passes(), pipeline, verify_between).apply(ctx or make_context(), module)
    return module
