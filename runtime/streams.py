"""
Streams: the `Streams` protocol the runtime's stream ops call, and its implementations: CUDA
streams from a pool keyed by stream number (created once per device and reused across runs,
since PyTorch's caching allocator caches per stream), and in-order no-ops on CPU. Which device
uses which implementation is `runtime/device.py`'s business.
"""

from __future__ import annotations

from typing import Protocol

import torch

Stream = object
"""A stream handle: opaque to the runtime, which only passes it back to the `Streams` that made it."""


class Streams(Protocol):
    """
    The streams of one device, as `hir.get_current_stream`, `hir.stream`, `hir.set_current_stream`,
    `hir.synchronize` and `hir.stream_for` use them. A wrapper with the same methods (a recorder,
    a race checker) can stand in for an implementation: `Program(..., streams=wrapper)`.
    """

    def current(self) -> Stream:
        """The stream work is enqueued on now."""
        ...

    def set_current(self, stream: Stream) -> None:
        """Makes `stream` the one work is enqueued on."""
        ...

    def pool(self, index: int, high_priority: bool = False) -> Stream:
        """
        Pool stream number `index`: the same stream for the same number, across runs. With
        `high_priority`, the high-priority stream of that number, another stream than the normal
        one. (The runtime passes `high_priority` only when it is true, so a wrapper written for
        `pool(index)` keeps working on programs without high-priority streams.)
        """
        ...

    def wait_for(self, stream: Stream) -> None:
        """The current stream waits for all work enqueued so far on `stream` (the host does not block)."""
        ...


_POOL: dict[tuple[int, int, int], torch.cuda.Stream] = {}


HIGHEST_PRIORITY = -(2**16)
"""A high-priority pool stream's priority: torch maps a number below the device's range (CUDA's
lowest number is the highest priority, -5 on H100) to the highest priority there is."""


class CpuStreams:
    """On CPU every stream op is a no-op: the program runs in order."""

    def current(self) -> Stream:
        return "cpu"

    def set_current(self, stream: Stream) -> None:
        pass

    def pool(self, index: int, high_priority: bool = False) -> Stream:
        # A distinct handle, as on CUDA, so that a race checker sees two streams.
        return (index, "high priority") if high_priority else index

    def wait_for(self, stream: Stream) -> None:
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

    def pool(self, index: int, high_priority: bool = False) -> torch.cuda.Stream:
        priority = HIGHEST_PRIORITY if high_priority else self.priority
        key = (self.device_index, index, priority)
        stream = _POOL.get(key)
        if stream is None:
            stream = torch.cuda.Stream(self.device_index, priority=priority)
            _POOL[key] = stream
        return stream

    def wait_for(self, stream: torch.cuda.Stream) -> None:
        """The current stream waits for all work enqueued so far on `stream` (event record + wait)."""
        self.current().wait_stream(stream)
