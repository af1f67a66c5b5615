"""
Streams: CUDA streams from a pool keyed by stream number (created once per device and reused
across runs, since PyTorch's caching allocator caches per stream), or in-order no-ops on CPU.
"""

from __future__ import annotations

from typing import Any

import torch

_POOL: dict[tuple[int, int, int], torch.cuda.Stream] = {}


class CpuStreams:
    """On CPU every stream op is a no-op: the program runs in order."""

    def current(self) -> Any:
        return "cpu"

    def set_current(self, stream: Any) -> None:
        pass

    def pool(self, index: int) -> Any:
        return index

    def wait_for(self, stream: Any) -> None:
        pass


class CudaStreams:
    """Streams of one CUDA device."""

    def __init__(self, device: torch.device, priority: int = 0):
        self.device = device
        self.device_index = device.index if device.index is not None else torch.cuda.current_device()
        self.priority = priority
        # Only this object changes the current stream during a run, so it remembers it instead of
        # asking torch (a few microseconds a query, on every synchronize).
        self._current: torch.cuda.Stream | None = None

    def current(self) -> torch.cuda.Stream:
        if self._current is None:
            self._current = torch.cuda.current_stream(self.device_index)
        return self._current

    def set_current(self, stream: torch.cuda.Stream) -> None:
        torch.cuda.set_stream(stream)
        self._current = stream

    def pool(self, index: int) -> torch.cuda.Stream:
        key = (self.device_index, index, self.priority)
        stream = _POOL.get(key)
        if stream is None:
            stream = torch.cuda.Stream(self.device_index, priority=self.priority)
            _POOL[key] = stream
        return stream

    def wait_for(self, stream: torch.cuda.Stream) -> None:
        """The current stream waits for all work enqueued so far on `stream` (event record + wait)."""
        self.current().wait_stream(stream)


def streams_for(device: torch.device) -> CpuStreams | CudaStreams:
    return CudaStreams(device) if device.type == "cuda" else CpuStreams()
