"""
The core-ATen decompositions `import_torch` runs on the exported program: what the ATen table
does not map is spelled by torch in ops it does (`einsum` as `bmm` and views, `masked_fill` as
`where`, in-place ops in their functional form). The ops the table maps stay whole (it lowers
them better: `linear`, `layer_norm`, `softmax`, `gelu`, attention).

torch >= 2.6 has `torch.export.default_decompositions()`; older versions the table of
`torch._decomp.core_aten_decompositions()`. A program that the decompositions cannot run on
is imported as exported: the table then names the op it lacks at the user's line.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import torch
import torch._decomp
from torch.export import ExportedProgram

from hir.frontend.aten_table import ATEN_TABLE, IGNORED


def decomposition_table() -> Any:
    """torch's core-ATen decompositions without the ops ATEN_TABLE maps (a dict or torch's table type)."""
    default = getattr(torch.export, "default_decompositions", None)
    if default is not None:
        table = default()
    else:  # torch < 2.6
        from torch._decomp import core_aten_decompositions

        table = dict(core_aten_decompositions())
    for op in ATEN_TABLE:
        if op in table:
            table.pop(op)
    for op in EXTRA:
        if op in torch._decomp.decomposition_table and op not in ATEN_TABLE:
            table[op] = torch._decomp.decomposition_table[op]
    return table


aten = torch.ops.aten
EXTRA = (
    aten.upsample_nearest2d.vec,
    aten.upsample_nearest2d.default,
    aten.upsample_bilinear2d.vec,
    aten.upsample_bilinear2d.default,
    aten._adaptive_avg_pool2d.default,
)
"""Ops torch's core set keeps whole (vision ops) whose torch decompositions are ops the table maps."""


def decompose(program: ExportedProgram) -> ExportedProgram:
    """The program in ops the table maps; as it is when it has only those (decomposing traces it again)."""
    if all(_mapped(node) for node in program.graph.nodes):
        return program
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation notes about its own pytree types
            return program.run_decompositions(decomposition_table())
    except Exception:  # an op torch cannot decompose here: the table reports what it lacks
        return program


def _mapped(node: torch.fx.Node) -> bool:
    return (
        node.op != "call_function"
        or node.target in ATEN_TABLE
        or node.target in IGNORED
        or (node.target is operator.getitem)
    )
