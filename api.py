"""
The Python API: parse, transform and execute fusion and hir modules.

    import hir
    module = hir.parse_file("examples/set_stream.mlir")
    lowered = hir.run_pipeline(module, "stream-lowering")
    outputs = hir.execute(lowered, [torch.randn(4, 8)], num_streams=2)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from hir.collection import fewer_collections
from hir.diagnostics import LocatedParser, decode_source, verify_located
from hir.dialects import get_all_hir_dialects
from hir.dialects.shaped_types import check_signatures
from hir.passes import get_all_hir_passes
from hir.pipeline import PipelineError, parse_pass_pipeline

__all__ = [
    "PipelineError",
    "available_dialects",
    "available_passes",
    "make_context",
    "parse",
    "parse_file",
    "parse_pipeline",
    "run_pipeline",
    "verify",
]

# xDSL dialects a hir program may use besides our own.
XDSL_DIALECTS = ("builtin", "func", "arith", "memref", "scf", "test")

# xDSL passes that make sense on fusion and hir modules.
XDSL_PASSES = ("canonicalize", "cse", "dce")


def available_dialects() -> dict[str, Callable]:
    from xdsl.dialects import get_all_dialects

    xdsl_dialects = get_all_dialects()
    return {name: xdsl_dialects[name] for name in XDSL_DIALECTS} | get_all_hir_dialects()


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from xdsl.transforms import get_all_passes

    xdsl_passes = get_all_passes()
    return {name: xdsl_passes[name] for name in XDSL_PASSES} | get_all_hir_passes()


def make_context() -> Context:
    """A context with the fusion and hir dialects and the xDSL dialects hir programs use."""
    ctx = Context()
    for name, factory in available_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parses and verifies a module; errors name `name:line:col`."""
    if not isinstance(text, str | bytes):
        raise TypeError(f"hir.parse takes the text of a module (a str), got {type(text).__name__}")
    module = LocatedParser(ctx or make_context(), text, name).parse_module()
    verify(module)
    return module


def parse_file(path: str | Path, ctx: Context | None = None) -> ModuleOp:
    """Parses and verifies a file; a file that is not UTF-8 is an error naming the line and column."""
    return parse(decode_source(Path(path).read_bytes(), str(path)), str(path), ctx)


def verify(module: ModuleOp) -> None:
    """
    xDSL's verifier, dominance, and function signatures the runtime can run; the first error names
    the failing op's `file:line:col` (a LocatedError).
    """
    verify_located(module)
    check_signatures(module)


def parse_pipeline(pipeline: str) -> tuple[ModulePass, ...]:
    """The passes of a `-p` pipeline; raises PipelineError (a ValueError) naming the pass and option at fault."""
    if not isinstance(pipeline, str):
        raise TypeError(f"a pass pipeline is a str in hir-opt's -p syntax ('cse,dce'), got {type(pipeline).__name__}")
    return parse_pass_pipeline(pipeline, available_passes())


def run_pipeline(module: ModuleOp, pipeline: str, ctx: Context | None = None, *, verify_each: bool = True) -> ModuleOp:
    """
    Applies a pass pipeline (`-p` syntax, e.g. "stream-lowering,canonicalize") in place and returns
    the module, verified after every pass (`verify_each=False`: once, after the last; what
    `hir.compile` does, where verifying took a fifth of the time to compile a small program). Not
    after every stage of stream-lowering, as hir-opt does: that would verify 5 more times, which
    doubles the cost of lowering a small program.
    """

    if not isinstance(module, ModuleOp):
        raise TypeError(f"hir.run_pipeline takes a ModuleOp (hir.parse's result), got {type(module).__name__}")

    def verify_between(_prev: object, m: ModuleOp, _next: object) -> None:
        verify(m)

    passes = parse_pipeline(pipeline)
    with fewer_collections():
        PassPipeline(passes, verify_between if verify_each else None).apply(ctx or make_context(), module)
        if not verify_each and passes:
            verify(module)
    return module
