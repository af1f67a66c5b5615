"""
hir: tensor programs with stream- and device-parallel axes, lowered to host programs that pipeline
work over CUDA streams and overlap communication with compute; on xDSL, executed with PyTorch.

The Python API (see README):

    parse(text) / parse_file(path) -> ModuleOp        parse and verify
    run_pipeline(module, "stream-lowering")           apply passes (hir-opt's -p syntax; a malformed
                                                      pipeline raises PipelineError, a ValueError)
    execute(module, inputs, num_streams=4, ...)       run @main with torch (CPU or CUDA)
    compile_program(module) -> Program                compile once, call many times

    import_torch(fn, example_args, ...) -> ModuleOp   a torch function or nn.Module as a fusion module
    compile(fn, example_args, ...)                    imported, lowered, callable with torch tensors
"""

from typing import Any


def __getattr__(name: str) -> Any:
    # Lazy: `import hir.dialects` (e.g. by hir-opt) must not pay for torch.
    if name in ("parse", "parse_file", "run_pipeline", "parse_pipeline", "make_context", "PipelineError"):
        from hir import api

        return getattr(api, name)
    if name in ("execute", "compile_program", "Program"):
        from hir.runtime import executor

        return getattr(executor, name)
    if name == "import_torch":
        from hir.frontend import import_torch

        return import_torch
    if name == "compile":
        from hir.frontend import compile_torch

        return compile_torch
    if name == "FrontendError":
        from hir.frontend import FrontendError

        return FrontendError
    raise AttributeError(f"module 'hir' has no attribute {name!r}")
