"""
`MemoryStats`: the bytes of the buffers a run allocates with `hir.allocate`, live and at the peak,
counted by the runtime's allocate and deallocate steps (the same count on CPU and CUDA).

A buffer is live from its `hir.allocate` to its `hir.deallocate`, to the next run of the same
`hir.allocate` (an allocation in a loop: the runtime drops its previous buffer), or to the end of
the run. A preallocated output the caller passes is the caller's memory and is not counted; a
symmetric buffer, which the runtime keeps across runs, counts in every run that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class MemoryStats:
    """Filled by a run: `Program.__call__(..., memory_stats=stats)`, `hir-run --memory-stats`."""

    peak_bytes: int = 0
    """The most bytes of program-allocated buffers live at once in the latest run."""
    live_bytes: int = 0
    """Bytes still live at the end of the latest run (its outputs and undeallocated buffers)."""
    _live: dict[int, int] = field(default_factory=dict)

    def start(self) -> None:
        """Forgets the previous run."""
        self.peak_bytes = self.live_bytes = 0
        self._live.clear()

    def allocated(self, slot: int, buffer: torch.Tensor) -> None:
        """The allocation whose result lives in `slot` made `buffer` (replacing the slot's previous one)."""
        self.released(slot)
        size = buffer.numel() * buffer.element_size()
        self._live[slot] = size
        self.live_bytes += size
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)

    def released(self, slot: int) -> None:
        self.live_bytes -= self._live.pop(slot, 0)
