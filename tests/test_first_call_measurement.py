"""
hir.compile's first-call measurement (frontend/autotune.py): where the cost model's two lowerings
are close, the first call times both and keeps the faster. On a GPU the model decides which to
measure; here the candidates are set by hand and the timer is replaced, so that the choice is known.
"""

from __future__ import annotations

import pytest
import torch

import hir
from hir.frontend import autotune, compiled
from hir.frontend.lowering_choice import TUNE_BAND, candidates
from hir.passes.stream_overlap import Lowering


def block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w) * 0.5


def serial_is_faster(run: object, device: torch.device, synchronize_ranks: object) -> float:
    """A timer that runs the program once and says the loop-free (serial) program is the faster."""
    program = run.__defaults__[0]  # type: ignore[attr-defined]
    run()  # type: ignore[operator]
    loops = sum(op.name == "hir.for" for op in program.func.walk())
    return 2.0 if loops else 1.0


def test_the_faster_lowering_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "median_ms", serial_is_faster)
    x, w = torch.randn(16, 8), torch.randn(8, 4)
    fast = hir.compile(block, (x, w), ["[stream(4), serial]", None])
    assert any(op.name == "hir.for" for op in fast.module.walk())  # as written: a stream loop
    model = Lowering("nccl", "always", "the model", serial_ms=1.0, pipelined_ms=1.05)
    fast.lowering = model
    fast.candidates = [("stream-lowering{overlap=never}", Lowering("nccl", "never", "the serial form"))]
    torch.testing.assert_close(fast(x, w), block(x, w))
    assert fast.measured == {"stream-lowering": 2.0, "stream-lowering{overlap=never}": 1.0}
    assert fast.pipeline == "stream-lowering{overlap=never}"
    assert not any(op.name == "hir.for" for op in fast.module.walk())
    assert fast.lowering is not None
    assert fast.lowering.overlap == "never"
    assert fast.lowering.reason == (
        "the model; measured at the first call: nccl overlap=always 2.000 ms, nccl overlap=never 1.000 ms"
    )
    assert fast.candidates == []
    y = torch.randn(16, 8)
    torch.testing.assert_close(fast(y, w), block(y, w))  # no second measurement
    assert len(fast.measured) == 2


@pytest.mark.parametrize(("eager_ms", "runs_eagerly"), [(0.5, True), (0.995, False)])
def test_the_kept_lowering_replays_unless_eager_is_faster(
    monkeypatch: pytest.MonkeyPatch, eager_ms: float, runs_eagerly: bool
) -> None:
    """
    With graphs automatic, the kept lowering is also timed eagerly; a clearly faster eager run
    (beyond EAGER_MARGIN) turns the graph off for this specialization, a near tie keeps it.
    """
    monkeypatch.setattr(compiled, "median_ms", lambda run, device, sync: (run(), eager_ms)[1])
    monkeypatch.setattr(compiled, "graph_by_default", lambda device: True)
    x, w = torch.randn(16, 8), torch.randn(8, 4)
    fn = hir.compile(block, (x, w), ["[stream(4), serial]", None])
    fn.lowering = Lowering("copy-engine", "always", "the model", serial_ms=1.0, pipelined_ms=0.9)
    assert fn._graph_for(torch.device("cpu"))
    fn._replay_or_not([x, w], None, torch.device("cpu"), replayed_ms=1.0)
    assert fn.eager_measured_faster is runs_eagerly
    assert fn.measured == {"stream-lowering (eager)": eager_ms}
    assert fn._graph_for(torch.device("cpu")) is not runs_eagerly
    assert fn.lowering is not None
    assert fn.lowering.reason.endswith(
        f"the kept one eagerly {eager_ms:.3f} ms: {'runs eagerly' if runs_eagerly else 'replays'}"
    )
    fn.cuda_graph = True  # an explicit choice wins over the measurement
    assert fn._graph_for(torch.device("cpu"))


def test_a_candidate_that_cannot_be_captured_loses(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse_loops(run: object, device: torch.device, synchronize_ranks: object) -> float:
        program = run.__defaults__[0]  # type: ignore[attr-defined]
        if any(op.name == "hir.for" for op in program.func.walk()):
            raise compiled.CaptureError(program.func, "cannot be captured")
        return 5.0

    monkeypatch.setattr(compiled, "median_ms", refuse_loops)
    x, w = torch.randn(16, 8), torch.randn(8, 4)
    fast = hir.compile(block, (x, w), ["[stream(4), serial]", None])
    fast.lowering = Lowering("nccl", "always", "the model", serial_ms=1.0, pipelined_ms=0.9)
    fast.candidates = [("stream-lowering{overlap=never}", Lowering("nccl", "never", "the serial form"))]
    torch.testing.assert_close(fast(x, w), block(x, w))
    assert fast.measured["stream-lowering"] == float("inf")
    assert fast.pipeline == "stream-lowering{overlap=never}"


def test_candidates_only_for_close_calls() -> None:
    close = Lowering("copy-engine", "always", "m", serial_ms=1.0, pipelined_ms=0.9)
    assert candidates(close, {"policy": "standalone-host-ops"}) == [
        ({"policy": "standalone-host-ops", "backend": "nccl", "overlap": "never"}, close.other())
    ]
    far = Lowering("copy-engine", "always", "m", serial_ms=1.0, pipelined_ms=1.0 - 2 * TUNE_BAND)
    assert candidates(far, {}) == []
    no_serial_form = Lowering("copy-engine", "always", "m", serial_ms=1.0, pipelined_ms=0.95, has_serial_form=False)
    assert candidates(no_serial_form, {}) == []
    assert candidates(None, {}) == []
    serial = Lowering("nccl", "never", "m", serial_ms=1.0, pipelined_ms=1.1)
    assert candidates(serial, {})[0][0] == {"backend": "copy-engine", "overlap": "always"}
    # Rows in one chunk: the pipeline by shard too, each form measured where it is close to the pick.
    by_shard = Lowering("copy-engine", "by-shard", "m", serial_ms=1.0, pipelined_ms=3.0, by_shard_ms=0.8)
    assert [c[0] for c in candidates(by_shard, {})] == [{"backend": "nccl", "overlap": "never"}]
    close_three = Lowering("copy-engine", "by-shard", "m", serial_ms=1.0, pipelined_ms=0.95, by_shard_ms=0.9)
    assert [c[1].overlap for c in candidates(close_three, {})] == ["always", "never"]


def test_timing_and_ranks_without_a_job() -> None:
    calls: list[int] = []
    ms = autotune.median_ms(lambda: calls.append(1), torch.device("cpu"), lambda: None)
    assert ms >= 0.0
    assert len(calls) == autotune.WARMUP + autotune.REPEATS
    assert autotune.slowest_rank([1.0, float("inf")], torch.device("cpu")) == [1.0, float("inf")]
