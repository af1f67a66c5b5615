"""
A replay's results handed to the caller as aliases of the graph's output buffers, not copies.

A CUDA graph writes its results into the same buffers at every replay. Copying each result out
costs a pass over it (for an attention block's [8, 2048, 4096] bf16 output, about 65 us on an
H200, 2 % of the call), which the caller pays even when it drops the result before the next call,
as model code does. So the results are handed out as aliases, and before the next replay
overwrites the buffers, `HandedOutputs.reclaim` looks at who still holds them, by the buffers'
storage reference counts:

- nobody outside the runtime: the replay may overwrite them;
- only the alias handed out (`y = f(x)` in a loop keeps the previous `y` until the call returns):
  the alias gets memory of its own (`.data`, one copy, what copying every result cost);
- anything else (a view of the result, `y[0]`, kept in a list): the caller sees the buffer's
  memory through tensors the runtime cannot move, so this call must not replay; it runs eagerly
  (fresh buffers) and the views keep their values.

No result the caller holds is ever overwritten, and no copy is made that the caller does not need.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch


def storage_references(t: torch.Tensor) -> int:
    """The references to `t`'s storage: tensors viewing it and Python storage objects (one of them ours, here)."""
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


@dataclass(frozen=True)
class _Handed:
    alias: weakref.ref[torch.Tensor]
    buffer: torch.Tensor
    """The graph's output buffer (held as long as the graph is)."""
    others: int
    """`storage_references(buffer)` without the alias, when it was handed out: the runtime's own."""


class HandedOutputs:
    """The aliases of graph buffers handed out since the last replay that overwrote them."""

    def __init__(self) -> None:
        self._handed: list[_Handed] = []

    def hand_out(self, result: torch.Tensor, buffer: torch.Tensor) -> torch.Tensor:
        """
        The caller's tensor for `result`, a tensor over `buffer`'s storage (the buffer itself, or a
        view the program's output layout made of it): an alias of its own, which `reclaim` can move.
        """
        alias = result.detach() if result is buffer else result
        self._handed.append(_Handed(weakref.ref(alias), buffer, storage_references(buffer) - 1))
        return alias

    def reclaim(self) -> bool:
        """
        Before a replay: whether it may overwrite the buffers. Aliases still held alone are moved to
        memory of their own; False where the caller holds other tensors over a buffer (then the
        aliases stay recorded, and the call runs without the graph).
        """
        if not self._handed:
            return True
        kept: list[_Handed] = []
        for handed in self._handed:
            alias = handed.alias()
            outside = storage_references(handed.buffer) - handed.others
            if outside <= 0:
                continue
            if alias is not None and outside == 1:
                alias.data = alias.clone()  # the caller's tensor keeps its identity, now over its own memory
                continue
            kept.append(handed)
        self._handed = kept
        return not kept

    def __len__(self) -> int:
        return len(self._handed)
