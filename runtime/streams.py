"""
Streams: the `Streams` protocol the runtime's stream ops call, and its implementations: CUDA
streams from a pool keyed by stream number (created once per device and reused across runs,
since PyTorch's caching allocator caches per stream), and in-order no-ops on CPU. On CUDA the
stream and event objects are cached per device (`CudaDevice`), so that a stream op costs one call
into torch's C bindings and makes no objects (docs/runtime.md, "Streams"). Which device uses which
implementation is `runtime/device.py`'s business.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

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
"""Pool streams by (device index, stream number, priority): created once, reused by every run."""


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


class CudaCalls:
    """
    The torch calls `CudaStreams` makes. Where this torch has them, the C bindings that the public
    torch.cuda functions end in, called directly: the same CUDA calls without the wrappers' Python
    frames (`torch.cuda.current_stream()` also makes a new Stream object per call). Else the
    public functions. A test passes a fake with the same attributes.
    """

    def __init__(self) -> None:
        c = torch._C
        self.current_stream_ids: Callable[[int], tuple[int, int, int]] = (
            getattr(c, "_cuda_getCurrentStream", None) or _current_stream_ids
        )
        """`current_stream_ids(device_index)`: (stream_id, device_index, device_type) of the current stream."""
        self.set_stream_by_id: Callable[[int, int, int], None] = (
            getattr(c, "_cuda_setStream", None) or _set_stream_by_id
        )
        """`set_stream_by_id(stream_id, device_index, device_type)`: makes that stream current. Called
        with positional arguments, which the binding parses in half the time of keywords."""
        event_base = getattr(c, "_CudaEventBase", None)  # without its methods in a CPU-only torch
        self.record: Callable[[Any, Any], None] = getattr(event_base, "record", None) or torch.cuda.Event.record
        """`record(event, stream)`: records `event` on `stream`."""
        self.wait: Callable[[Any, Any], None] = getattr(event_base, "wait", None) or torch.cuda.Event.wait
        """`wait(event, stream)`: `stream` waits for the work `event` last recorded (cudaStreamWaitEvent)."""

    @staticmethod
    def stream(stream_id: int, device_index: int, device_type: int) -> torch.cuda.Stream:
        """A Stream object for the stream with these ids."""
        return torch.cuda.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)

    @staticmethod
    def new_stream(device_index: int, priority: int) -> torch.cuda.Stream:
        return torch.cuda.Stream(device_index, priority=priority)

    @staticmethod
    def new_event() -> torch.cuda.Event:
        return torch.cuda.Event(enable_timing=False)


def _current_stream_ids(device_index: int) -> tuple[int, int, int]:
    stream = torch.cuda.current_stream(device_index)
    return stream.stream_id, stream.device_index, stream.device_type


def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
    torch.cuda.set_stream(CudaCalls.stream(stream_id, device_index, device_type))


class CudaDevice:
    """
    What the runs on one CUDA device share, across runs and threads: a Stream object per stream
    that was current at the start of a run (found by id instead of made anew), and one event per
    stream that other streams wait for (created once instead of per wait).
    """

    def __init__(self, index: int, calls: CudaCalls) -> None:
        self.index = index
        self.calls = calls
        self.streams: dict[int, torch.cuda.Stream] = {}
        """Stream id -> the Stream object `CudaStreams.current` hands out for it."""
        self.events: dict[int, torch.cuda.Event] = {}
        """Stream id -> the event `CudaStreams.wait_for` records on that stream."""

    def stream(self, ids: tuple[int, int, int]) -> torch.cuda.Stream:
        stream = self.streams.get(ids[0])
        if stream is None:
            stream = self.streams[ids[0]] = self.calls.stream(*ids)
        return stream

    def event_for(self, stream_id: int) -> torch.cuda.Event:
        event = self.events.get(stream_id)
        if event is None:
            event = self.events[stream_id] = self.calls.new_event()
        return event


_DEVICES: dict[int, CudaDevice] = {}
"""The `CudaDevice` of each device index used so far."""


def cuda_device(index: int) -> CudaDevice:
    """The shared state of CUDA device `index`, made at its first use."""
    device = _DEVICES.get(index)
    if device is None:
        device = _DEVICES[index] = CudaDevice(index, CudaCalls())
    return device


class CudaStreams:
    """
    The streams of one CUDA device for one run (a new object per call, since the current stream is
    per thread); its caches are the device's `CudaDevice`, so a run makes no stream or event
    objects once the first runs have made them.

    Only this object changes the current stream during a run, and the run's work reaches a stream
    only while it is current (launches, copies, barriers and `hir.wait` all enqueue on the current
    stream), so the object knows when a stream's work has not changed since its event was
    recorded and skips the record and wait that would repeat an earlier one (`wait_for`).
    """

    def __init__(self, device: torch.device, priority: int = 0, *, shared: CudaDevice | None = None):
        self.device = device
        if shared is None:
            shared = cuda_device(device.index if device.index is not None else torch.cuda.current_device())
        self.shared = shared
        self.device_index = shared.index
        self.priority = priority
        self._calls = shared.calls
        # The current stream as this object last made it, instead of asking torch on every synchronize.
        self._current: torch.cuda.Stream | None = None
        self._records = 0
        """How many events this run recorded: the number of the latest record."""
        self._covered: dict[int, int] = {}
        """Stream id -> the number of the record of its event that still covers all its work: the
        stream has not been current since (absent: it has, or was never recorded)."""
        self._waited: dict[tuple[int, int], int] = {}
        """(waiting stream id, source stream id) -> the number of the record the wait was for."""

    def current(self) -> torch.cuda.Stream:
        if self._current is None:
            self._current = self.shared.stream(self._calls.current_stream_ids(self.device_index))
        return self._current

    def set_current(self, stream: torch.cuda.Stream) -> None:
        self._calls.set_stream_by_id(stream.stream_id, stream.device_index, stream.device_type)
        self._current = stream
        self._covered.pop(stream.stream_id, None)  # work may reach it from now on

    def pool(self, index: int, high_priority: bool = False) -> torch.cuda.Stream:
        priority = HIGHEST_PRIORITY if high_priority else self.priority
        key = (self.device_index, index, priority)
        stream = _POOL.get(key)
        if stream is None:
            stream = _POOL[key] = self._calls.new_stream(self.device_index, priority)
        return stream

    def wait_for(self, stream: torch.cuda.Stream) -> None:
        """
        The current stream waits for all work enqueued so far on `stream`: the event of `stream`
        is recorded on it, then the current stream waits for it. Re-recording one event is safe:
        cudaStreamWaitEvent captures the event's state at the call (the work recorded by then),
        so a later record does not change what an earlier wait waits for. Another thread
        recording the same stream's event in between makes this wait cover more of that stream's
        work, never less. Under CUDA-graph capture a record on a capturing stream followed by the
        wait is a graph edge, with a cached event as with a new one.

        Where `stream` has not been current since its event was recorded in this run, that record
        still covers its work and is not repeated; where the current stream already waited for
        that record, it waits for nothing new and the wait is skipped too (a stream runs in
        order: its later work already comes after the earlier wait). A fork of N iterations over
        K worker streams thus records once and waits K times.
        """
        current = self._current if self._current is not None else self.current()
        source, waiting = stream.stream_id, current.stream_id
        record = self._covered.get(source)
        if record is None:
            self._calls.record(self.shared.event_for(source), stream)
            self._records = record = self._records + 1
            if source != waiting:  # the current stream gets more work after this
                self._covered[source] = record
        pair = (waiting, source)
        if self._waited.get(pair) != record:
            self._calls.wait(self.shared.event_for(source), current)
            self._waited[pair] = record
