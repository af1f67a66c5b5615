"""
torch's set of composite-implicit ("CIA") ops, collected once per registered op set instead of
on every use. `ExportedProgram.run_decompositions` and `torch.export.default_decompositions` walk
every op namespace's CompositeImplicitAutograd ops, three times per compiled program (about
0.07 s each on a CPU core, 0.2 s of a small program's 0.3 s of decomposing). The set changes only
when ops are registered, so it is kept per (namespaces, number of ops): a custom op registered
later is seen at the next compile.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

_COLLECTED: dict[tuple[Any, ...], set[Any]] = {}

_USERS = ("torch.export.exported_program", "torch.export.decomp_utils")
"""The modules of torch that import `_collect_all_valid_cia_ops` by name (torch >= 2.6)."""


def registered_ops() -> tuple[Any, ...]:
    """What changes when ops are registered: the op namespaces and the number of ops."""
    return (tuple(torch.ops._dir), len(torch._C._dispatch_get_all_op_names()))


@contextmanager
def cia_ops_collected_once() -> Iterator[None]:
    """Within: torch's `_collect_all_valid_cia_ops` answers from the cache (unchanged on a torch without it)."""
    modules = [m for name in _USERS if (m := sys.modules.get(name)) and hasattr(m, "_collect_all_valid_cia_ops")]
    if not modules:
        yield
        return
    collect = modules[0]._collect_all_valid_cia_ops
    key = registered_ops()

    def collected() -> set[Any]:
        if key not in _COLLECTED:
            _COLLECTED.clear()
            _COLLECTED[key] = set(collect())
        return set(_COLLECTED[key])  # torch's callers may keep or extend it

    with ExitStack() as restore:
        for module in modules:
            original = module._collect_all_valid_cia_ops
            if getattr(original, "__wrapped_cia__", False):
                continue  # nested: the outer one patched it already
            collected.__wrapped_cia__ = True  # type: ignore[attr-defined]
            module._collect_all_valid_cia_ops = collected
            restore.callback(setattr, module, "_collect_all_valid_cia_ops", original)
        yield
