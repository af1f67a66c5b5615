"""
`CudaStreams`' caches (runtime/streams.py), on CPU through a fake of the torch calls it makes
(`CudaCalls`), and on a GPU (marked `cuda`) through the real ones: a run makes no stream or
event objects once the first runs have made them, a wait records the source stream's own event
and waits for it on the current stream, and every cache is per device.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import torch

import hir
from hir.runtime import streams as runtime_streams
from hir.runtime.device import streams_for
from hir.runtime.streams import CudaCalls, CudaDevice, CudaStreams

DEVICE_TYPE = 1  # torch's number for CUDA


class FakeStream:
    """What CudaStreams reads of a stream: its ids."""

    def __init__(self, stream_id: int, device_index: int, device_type: int = DEVICE_TYPE) -> None:
        self.stream_id, self.device_index, self.device_type = stream_id, device_index, device_type


class FakeEvent:
    def __init__(self, number: int) -> None:
        self.number = number
        self.device: int | None = None
        """The device of the first stream it was recorded on: a CUDA event belongs to one device."""


class FakeCalls:
    """The torch calls of `CudaCalls`, logged, over a current stream per device."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.current_ids: dict[int, tuple[int, int, int]] = {}
        self.objects_made = 0
        # Stream ids are numbered per device, as torch's are: devices 0 and 1 both have a stream 100.
        self._ids: dict[int, Iterator[int]] = {}

    def next_id(self, device_index: int) -> int:
        return next(self._ids.setdefault(device_index, itertools.count(100)))

    def current_stream_ids(self, device_index: int) -> tuple[int, int, int]:
        self.log.append(("query", device_index))
        return self.current_ids.setdefault(device_index, (self.next_id(device_index), device_index, DEVICE_TYPE))

    def set_stream_by_id(self, stream_id: int, device_index: int, device_type: int, /) -> None:
        self.log.append(("set", stream_id))
        self.current_ids[device_index] = (stream_id, device_index, device_type)

    def record(self, event: FakeEvent, stream: FakeStream) -> None:
        if event.device is None:
            event.device = stream.device_index
        assert event.device == stream.device_index, "an event recorded on another device's stream"
        self.log.append(("record", event.number, stream.stream_id))

    def wait(self, event: FakeEvent, stream: FakeStream) -> None:
        self.log.append(("wait", event.number, stream.stream_id))

    def stream(self, stream_id: int, device_index: int, device_type: int) -> FakeStream:
        self.objects_made += 1
        return FakeStream(stream_id, device_index, device_type)

    def new_stream(self, device_index: int, priority: int) -> FakeStream:
        self.objects_made += 1
        return FakeStream(self.next_id(device_index), device_index)

    def new_event(self) -> FakeEvent:
        self.objects_made += 1
        return FakeEvent(self.objects_made)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> FakeCalls:
    monkeypatch.setattr(runtime_streams, "_POOL", {})  # no fake stream in the real pool
    return FakeCalls()


def run_streams(shared: CudaDevice) -> CudaStreams:
    """The streams of one run on the fake device, as `streams_for` makes them per call."""
    return CudaStreams(torch.device("cuda", shared.index), shared=shared)


def test_a_wait_records_the_source_streams_event_and_waits_on_the_current_stream(calls: FakeCalls) -> None:
    shared = CudaDevice(0, calls)  # type: ignore[arg-type]
    streams = run_streams(shared)
    main = streams.current()
    side = streams.pool(0)
    streams.set_current(side)
    calls.log.clear()
    streams.wait_for(main)
    (event,) = shared.events.values()
    assert calls.log == [("record", event.number, main.stream_id), ("wait", event.number, side.stream_id)]


def test_a_run_makes_no_objects_once_the_first_run_made_them(calls: FakeCalls) -> None:
    shared = CudaDevice(0, calls)  # type: ignore[arg-type]

    def one_run() -> None:
        streams = run_streams(shared)
        main = streams.current()
        workers = [streams.pool(k) for k in range(4)]
        for worker in workers:  # the fork
            streams.set_current(worker)
            streams.wait_for(main)
        for worker in workers:  # the joins
            streams.set_current(main)
            streams.wait_for(worker)

    one_run()
    made = calls.objects_made
    assert made == 1 + 4 + 5  # the caller's Stream object, 4 pool streams, an event per source stream
    for _ in range(3):
        one_run()
    assert calls.objects_made == made
    assert len(shared.events) == 5


def test_each_source_stream_has_its_own_event_reused_by_every_wait(calls: FakeCalls) -> None:
    shared = CudaDevice(0, calls)  # type: ignore[arg-type]
    streams = run_streams(shared)
    main = streams.current()
    a, b = streams.pool(0), streams.pool(1)
    streams.wait_for(a)
    streams.wait_for(b)
    streams.set_current(a)  # a may get more work
    streams.set_current(main)
    streams.wait_for(a)
    records = [entry for entry in calls.log if entry[0] == "record"]
    assert [stream for _, _, stream in records] == [a.stream_id, b.stream_id, a.stream_id]
    assert records[0][1] == records[2][1] != records[1][1]


def test_a_record_is_repeated_only_once_its_stream_was_current_again(calls: FakeCalls) -> None:
    """The fork of 8 iterations over 4 workers records the caller's event once and waits once per worker."""
    shared = CudaDevice(0, calls)  # type: ignore[arg-type]
    streams = run_streams(shared)
    main = streams.current()
    workers = [streams.pool(k) for k in range(4)]
    calls.log.clear()
    for i in range(8):
        streams.set_current(workers[i % 4])
        streams.wait_for(main)
    assert [e[0] for e in calls.log if e[0] != "set"] == ["record"] + ["wait"] * 4
    assert [e[2] for e in calls.log if e[0] == "wait"] == [w.stream_id for w in workers]
    # Each join waits for a worker that has just been current: recorded and waited every time.
    calls.log.clear()
    for i in range(8):
        streams.set_current(workers[i % 4])
        streams.set_current(main)
        streams.wait_for(workers[i % 4])
    assert [e[0] for e in calls.log if e[0] != "set"] == ["record", "wait"] * 8
    # main was current: the next fork records again, and every worker waits for the new record.
    calls.log.clear()
    for worker in workers:
        streams.set_current(worker)
        streams.wait_for(main)
    assert [e[0] for e in calls.log if e[0] != "set"] == ["record"] + ["wait"] * 4


def test_a_wait_for_the_current_stream_is_never_skipped(calls: FakeCalls) -> None:
    shared = CudaDevice(0, calls)  # type: ignore[arg-type]
    streams = run_streams(shared)
    main = streams.current()
    streams.wait_for(main)
    streams.wait_for(main)  # main may have had work in between: recorded again
    assert [e[0] for e in calls.log if e[0] in ("record", "wait")] == ["record", "wait"] * 2


def test_a_new_run_records_again(calls: FakeCalls) -> None:
    """The caller may have enqueued work between two calls: nothing is skipped across runs."""
    shared = CudaDevice(0, calls)  # type: ignore[arg-type]
    for _ in range(2):
        streams = run_streams(shared)
        main = streams.current()
        streams.set_current(streams.pool(0))
        streams.wait_for(main)
    assert [e[0] for e in calls.log if e[0] in ("record", "wait")] == ["record", "wait"] * 2


def test_each_run_asks_torch_for_the_callers_stream_once(calls: FakeCalls) -> None:
    shared = CudaDevice(0, calls)  # type: ignore[arg-type]
    first = run_streams(shared)
    caller = first.current()
    first.set_current(first.pool(0))
    first.wait_for(caller)
    first.set_current(caller)
    assert first.current() is caller
    assert [entry for entry in calls.log if entry[0] == "query"] == [("query", 0)]
    # The next call finds the same stream current: the same object, not a new one.
    assert run_streams(shared).current() is caller
    # A caller that made another stream current before the call is seen by the next run.
    calls.current_ids[0] = (7, 0, DEVICE_TYPE)
    moved = run_streams(shared).current()
    assert moved is not caller
    assert moved.stream_id == 7


def test_set_current_passes_the_streams_ids(calls: FakeCalls) -> None:
    shared = CudaDevice(0, calls)  # type: ignore[arg-type]
    streams = run_streams(shared)
    side = streams.pool(2, high_priority=True)
    streams.set_current(side)
    assert calls.log[-1] == ("set", side.stream_id)
    assert calls.current_ids[0] == (side.stream_id, 0, DEVICE_TYPE)
    assert streams.current() is side


def test_the_caches_are_per_device(calls: FakeCalls) -> None:
    devices = [CudaDevice(index, calls) for index in (0, 1)]  # type: ignore[arg-type]
    callers, workers = [], []
    for shared in devices:  # the fake's record fails on an event of the other device
        streams = run_streams(shared)
        main = streams.current()
        worker = streams.pool(0)
        streams.set_current(worker)
        streams.wait_for(main)
        streams.set_current(main)
        streams.wait_for(worker)
        callers.append(main)
        workers.append(worker)
    # The same stream ids on both devices, different streams.
    assert callers[0].stream_id == callers[1].stream_id
    assert workers[0].stream_id == workers[1].stream_id
    assert [s.device_index for s in callers + workers] == [0, 1, 0, 1]
    events = [set(map(id, shared.events.values())) for shared in devices]
    assert len(events[0]) == len(events[1]) == 2
    assert not events[0] & events[1]


def test_the_device_state_is_made_once_per_device_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_streams, "_DEVICES", {})
    first = CudaStreams(torch.device("cuda", 3)).shared
    assert CudaStreams(torch.device("cuda", 3)).shared is first
    assert CudaStreams(torch.device("cuda", 4)).shared is not first
    assert first.index == 3


def test_without_the_private_bindings_the_public_functions_are_called(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("_cuda_getCurrentStream", "_cuda_setStream"):
        monkeypatch.delattr(torch._C, name, raising=False)
    made: list[Any] = []
    monkeypatch.setattr(torch.cuda, "set_stream", made.append)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: FakeStream(42, device))
    monkeypatch.setattr(runtime_streams.CudaCalls, "stream", staticmethod(FakeStream))
    calls = CudaCalls()
    assert calls.current_stream_ids(1) == (42, 1, DEVICE_TYPE)
    calls.set_stream_by_id(9, 1, DEVICE_TYPE)
    (stream,) = made
    assert (stream.stream_id, stream.device_index, stream.device_type) == (9, 1, DEVICE_TYPE)


def test_the_private_bindings_are_called_where_torch_has_them(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[Any] = []
    monkeypatch.setattr(torch._C, "_cuda_getCurrentStream", lambda index: (5, index, DEVICE_TYPE), raising=False)
    monkeypatch.setattr(torch._C, "_cuda_setStream", lambda *ids: log.append(ids), raising=False)
    monkeypatch.setattr(torch.cuda, "set_stream", lambda stream: pytest.fail("called the public wrapper"))
    calls = CudaCalls()
    assert calls.current_stream_ids(2) == (5, 2, DEVICE_TYPE)
    calls.set_stream_by_id(5, 2, DEVICE_TYPE)
    assert log == [(5, 2, DEVICE_TYPE)]


# -- CUDA -----------------------------------------------------------------------------------------

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

SET_STREAM_HIR = "examples/set_stream.hir.mlir"


@pytest.mark.cuda
@needs_cuda
def test_runs_on_a_gpu_reuse_the_devices_stream_and_event_objects() -> None:
    program = hir.compile_program(hir.parse_file(SET_STREAM_HIR))
    x = torch.randn(4, 8, device="cuda")
    shared = runtime_streams.cuda_device(x.device.index)
    known = set(shared.events)  # earlier tests of this process leave theirs
    (y,) = program([x], num_streams=2)
    events, streams = dict(shared.events), dict(shared.streams)
    for _ in range(3):
        (y,) = program([x], num_streams=2)
    assert shared.events == events
    assert shared.streams == streams
    assert len(events.keys() - known) <= 3  # at most the caller's stream and the two pool streams
    torch.testing.assert_close(y, x)


@pytest.mark.cuda
@needs_cuda
def test_a_wait_on_a_gpu_orders_after_the_source_streams_work() -> None:
    """A slow write on a pool stream, then reads on the caller's stream after `wait_for`, twice with one event."""
    streams = streams_for(torch.device("cuda"))
    main, side = streams.current(), streams.pool(0)
    x = torch.zeros(1 << 20, device="cuda")
    for value in (1.0, 2.0):
        streams.set_current(side)
        streams.wait_for(main)  # the previous read is done before the write
        torch.cuda._sleep(50_000_000)
        x.fill_(value)
        streams.set_current(main)
        streams.wait_for(side)
        assert x.sum().item() == value * x.numel()
    assert torch.cuda.current_stream() == main
