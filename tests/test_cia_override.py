"""
torch's override of the CIA ops' kernels, reused from its first entry (frontend/cia_override.py):
the decomposed programs are torch's, every kernel and fake-tensor rule is restored after, and a
changed op set runs torch's own code again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from hir.frontend import cia_override
from hir.frontend.decompositions import decompose

exported_program = pytest.importorskip("torch.export.exported_program")
if not hasattr(exported_program, "_override_composite_implicit_decomp"):
    pytest.skip("this torch has no override of the composite-implicit ops", allow_module_level=True)


def _block(x: torch.Tensor, w: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Composite-implicit ops (linear, pad, flatten, dropout in eval, the multilabel margin loss) and core ones."""
    y = F.gelu(F.linear(x, w)) + F.pad(x, (0, 0, 1, 1))[1:-1].flatten(1).unflatten(1, x.shape[1:])
    loss = F.multilabel_margin_loss(y, target)
    return F.dropout(y, 0.3, training=False).softmax(-1), loss


def _exported() -> Any:
    args = (torch.randn(4, 8), torch.randn(8, 8), torch.randint(-1, 8, (4, 8)))
    return torch.export.export(_ModuleOf(_block), args)


class _ModuleOf(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


@contextmanager
def _counting_torchs_override(calls: list[int]) -> Iterator[None]:
    """Counts the entries of torch's own override (the cache's misses)."""
    original = exported_program._override_composite_implicit_decomp

    def counted(table: dict[Any, Any]) -> AbstractContextManager[None]:
        calls.append(len(table))
        return original(table)

    exported_program._override_composite_implicit_decomp = counted
    try:
        yield
    finally:
        exported_program._override_composite_implicit_decomp = original


def _state(ops: Any) -> tuple[dict[Any, dict[Any, Any]], dict[Any, Any]]:
    from torch._subclasses.fake_impls import op_implementations_dict

    return {op: op.py_kernels.copy() for op in ops}, dict(op_implementations_dict)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_reused_override_decomposes_as_torch_and_restores_every_kernel() -> None:
    torchs = _exported().run_decompositions(_table())  # torch's own code, no reuse
    cia_override._CACHE.clear()
    calls: list[int] = []
    with _counting_torchs_override(calls):
        first = decompose(_exported())
        ops = list(cia_override._CACHE[0].table)
        kernels, rules = _state(ops)
        second = decompose(_exported())
        third = decompose(_exported())
    assert len(calls) == 1, "torch's override ran at the first entry only"
    assert first.graph_module.code == second.graph_module.code == third.graph_module.code == torchs.graph_module.code
    assert _state(ops) == (kernels, rules), "a reused entry leaves every kernel and fake rule as torch's exit does"
    x, w, target = torch.randn(4, 8), torch.randn(8, 8), torch.randint(-1, 8, (4, 8))
    for got, want in zip(third.module()(x, w, target), _block(x, w, target), strict=True):
        torch.testing.assert_close(got, want)


def test_a_changed_op_set_runs_torchs_override_again() -> None:
    calls: list[int] = []
    with _counting_torchs_override(calls):
        decompose(_exported())
        hits = len(calls)
        library = torch.library.Library("hir_cia_override_test", "DEF")
        library.define("twice(Tensor x) -> Tensor")
        library.impl("twice", lambda x: x + x, "CompositeImplicitAutograd")
        decompose(_exported())
    assert len(calls) > hits, "a new op: a new table, and torch's own override"


def _table() -> Any:
    from hir.frontend.cia_ops import cia_ops_collected_once
    from hir.frontend.decompositions import decomposition_table

    with cia_ops_collected_once():
        return decomposition_table()
