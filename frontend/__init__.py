"""
The PyTorch frontend: import torch programs into the fusion dialect and compile them.

    module = hir.import_torch(fn, example_args, in_layouts=["[stream, serial]"])   # fusion-level ModuleOp
    fast = hir.compile(fn, example_args, in_layouts=["[stream, serial]"])          # callable like fn

docs/frontend.md describes the API, the layouts, the ATen table and the limits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from hir.frontend.aten_table import ATEN_TABLE
from hir.frontend.compiled import CompiledFunction, compile_torch
from hir.frontend.errors import FrontendError
from hir.frontend.importer import Layouts, import_program
from hir.frontend.pytree_args import flattened, has_containers, refuse_on_mesh

__all__ = ["ATEN_TABLE", "CompiledFunction", "FrontendError", "compile_torch", "import_torch"]


def import_torch(
    fn: Callable[..., Any] | torch.nn.Module,
    example_args: Sequence[Any],
    in_layouts: Layouts = None,
    out_layouts: Layouts = None,
    mesh: Sequence[int] | None = None,
    *,
    param_layouts: Mapping[str, str | None] | None = None,
) -> ModuleOp:
    """The fusion-level module of `fn` (a function or nn.Module) captured on `example_args`."""
    if has_containers(example_args):  # `past_key_values`, a `batch` dict: their leaves are the arguments
        refuse_on_mesh(example_args, mesh)
        fn, example_args, in_layouts = flattened(fn, example_args, in_layouts)
    return import_program(fn, example_args, in_layouts, out_layouts, mesh, param_layouts).module
