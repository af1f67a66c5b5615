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

On a mesh every rank must replay when the others do (a rank running eagerly while its peers
replay would not meet them in the graph's communication), so there the last case cannot run
eagerly. A result is then handed out over a storage of its own (a second torch storage over the
buffer's memory, which keeps the buffer alive), and where the caller holds views of it at the
next replay, that storage is marked stale once the call has read its arguments (which may be
those views): any later use of the views raises an error that says so, as torch's CUDA graph
trees do, instead of reading the next call's values.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch


def storage_references(t: torch.Tensor) -> int:
    """The references to `t`'s storage: tensors viewing it and Python storage objects (one of them ours, here)."""
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


def marks_stale() -> bool:
    """Whether this torch can mark a storage stale (its CUDA builds can; a mesh replays only on a GPU)."""
    return hasattr(torch._C, "_set_storage_data_ptr_access_error_msg")


@dataclass(frozen=True)
class _Handed:
    alias: weakref.ref[torch.Tensor]
    storage: torch.Tensor | torch.UntypedStorage
    """
    What the caller's tensors share: the graph's output buffer (held as long as the graph is), or
    the alias's own storage.
    """
    others: int
    """The storage's references without the alias, when it was handed out: the runtime's own."""

    def outside(self) -> int:
        """The references to the storage that are the caller's."""
        storage = self.storage
        cdata = storage._cdata if isinstance(storage, torch.UntypedStorage) else storage.untyped_storage()._cdata
        return torch._C._storage_Use_Count(cdata) - self.others


class HandedOutputs:
    """The aliases of graph buffers handed out since the last replay that overwrote them."""

    def __init__(self) -> None:
        self._handed: list[_Handed] = []
        self._stale: list[_Handed] = []

    def hand_out(self, result: torch.Tensor, buffer: torch.Tensor, own_storage: bool = False) -> torch.Tensor:
        """
        The caller's tensor for `result`, a tensor over `buffer`'s storage (the buffer itself, or a
        view the program's output layout made of it): an alias of its own, which `reclaim` can move.
        `own_storage` (on a mesh): the alias is over a storage of its own, which `mark_stale` can mark.
        """
        if own_storage:
            try:
                alias = torch._C._from_dlpack(torch._C._to_dlpack(result))
            except (RuntimeError, BufferError, TypeError):  # a dtype DLPack has no code for (float8): a copy
                return result.clone()
            storage = alias.untyped_storage()
            self._handed.append(_Handed(weakref.ref(alias), storage, torch._C._storage_Use_Count(storage._cdata) - 1))
            return alias
        alias = result.detach() if result is buffer else result
        self._handed.append(_Handed(weakref.ref(alias), buffer, storage_references(buffer) - 1))
        return alias

    def reclaim(self, stale_on_hold: bool = False) -> bool:
        """
        Before a replay: whether it may overwrite the buffers. Aliases still held alone are moved to
        memory of their own; False where the caller holds other tensors over a buffer (then the
        aliases stay recorded, and the call runs without the graph). `stale_on_hold` (on a mesh):
        such results are marked stale by `mark_stale` after the replay instead, and it may go on.
        """
        if not self._handed:
            return True
        kept: list[_Handed] = []
        for handed in self._handed:
            alias = handed.alias()
            outside = handed.outside()
            if outside <= 0:
                continue
            if alias is not None and outside == 1:
                alias.data = alias.clone()  # the caller's tensor keeps its identity, now over its own memory
                continue
            (self._stale if stale_on_hold else kept).append(handed)
        self._handed = kept
        return not kept

    def mark_stale(self, name: str) -> None:
        """After a replay whose call read its arguments: the storages `reclaim` found held by views raise on use."""
        for handed in self._stale:
            assert isinstance(handed.storage, torch.UntypedStorage)
            torch._C._set_storage_data_ptr_access_error_msg(
                handed.storage._cdata,
                f"a result of {name} that a later call overwrote: a replayed CUDA graph writes each call's "
                "results into the same memory, and on a mesh a result the caller still holds a view of "
                "cannot be moved; clone() the result (or the view) before calling it again, or compile "
                "with cuda_graph=False",
            )
        self._stale.clear()

    def __len__(self) -> int:
        return len(self._handed)
