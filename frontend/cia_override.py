"""
torch's override of the composite-implicit ("CIA") ops' kernels, installed from a cache after its
first use instead of registered anew at each.

`ExportedProgram.run_decompositions` enters `_override_composite_implicit_decomp` twice per
decomposed program. Each entry registers Python kernels for every CIA op of the table (about 500
ops, 11 dispatch keys each) through `OpOverload.py_impl`, and the exit takes them all back: 0.2 s
a time on a CPU core, most of a small program's decomposing. What the entry installs depends only
on the table and on the ops' kernels before it. So the first entry runs torch's own code and keeps
what it installed; a later entry with the same table (`decompositions.decomposition_table` is
built once per op set) over the same kernels installs those again, dict by dict, and the exit
takes them back as torch's does. Any difference (a custom op registered since, a kernel torch
added, another table) runs torch's own code again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

_MODULE = "torch.export.exported_program"
_NAME = "_override_composite_implicit_decomp"


@dataclass
class _Installed:
    """What torch's override installed at its first entry, and over what."""

    table: dict[Any, Callable[..., Any]]
    kernels_before: dict[Any, dict[Any, Any]]
    faked_before: set[Any]
    """The ops that had a fake-tensor rule before the entry (torch registers one for the others)."""
    kernels_within: dict[Any, dict[Any, Any]]
    fake_rules: dict[Any, Callable[..., Any]]


_CACHE: list[_Installed] = []


def _fake_rules() -> dict[Any, Callable[..., Any]]:
    from torch._subclasses import fake_impls

    return fake_impls.op_implementations_dict


@contextmanager
def _override(
    original: Callable[[dict[Any, Callable[..., Any]]], AbstractContextManager[None]],
    table: dict[Any, Callable[..., Any]],
) -> Iterator[None]:
    from torch._subclasses.fake_impls import _deregister_op_impl

    rules = _fake_rules()
    before = {op: op.py_kernels.copy() for op in table}
    faked = {op for op in table if op in rules}
    cached = _CACHE[0] if _CACHE else None
    if cached is None or cached.table != table or cached.kernels_before != before or cached.faked_before != faked:
        with original(table):
            _CACHE[:] = [
                _Installed(
                    dict(table),
                    before,
                    faked,
                    {op: op.py_kernels.copy() for op in table},
                    {op: rules[op] for op in table if op not in faked and op in rules},
                )
            ]
            yield
        return
    for op, kernels in cached.kernels_within.items():
        op.py_kernels.clear()
        op.py_kernels.update(kernels)
        op._dispatch_cache.clear()
    rules.update(cached.fake_rules)
    try:
        yield
    finally:  # as torch's exit: the kernels from before, no fake rule for any op of the table
        for op, kernels in before.items():
            op.py_kernels.clear()
            op.py_kernels.update(kernels)
            op._dispatch_cache.clear()
            _deregister_op_impl(op)


@contextmanager
def cia_override_reused() -> Iterator[None]:
    """Within: torch's CIA override comes from the cache where it can (unchanged on a torch without it)."""
    module = sys.modules.get(_MODULE)
    original = getattr(module, _NAME, None)
    if original is None or getattr(original, "__reused_cia__", False):  # absent, or patched by an outer one
        yield
        return

    def reused(table: dict[Any, Callable[..., Any]]) -> AbstractContextManager[None]:
        return _override(original, table)

    reused.__reused_cia__ = True  # type: ignore[attr-defined]
    setattr(module, _NAME, reused)
    try:
        yield
    finally:
        setattr(module, _NAME, original)
