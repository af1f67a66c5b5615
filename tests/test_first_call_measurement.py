"""
hir.compile's first-call measurement (frontend/autotune.py): where the cost model's two lowerings
are close, the first call times both and keeps the faster. On a GPU the model decides which to
measure; here the candidates are set by hand and the timer is replaced, so that the choice is known.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch

import hir
from hir.frontend import autotune, compiled
from hir.frontend.lowering_choice import TUNE_BAND, candidates
from hir.passes.stream_overlap import Lowering


def block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w) * 0.5


def timer(times: list[float]) -> Callable[..., tuple[list[float], list[BaseException | None]]]:
    """`medians_interleaved` that runs each contender once and says it took `times` (in the contenders' order)."""

    def medians(runs: list[Callable[[], None]], device: torch.device, sync: object, failed: object, **_: Any) -> Any:
        for run in runs:
            run()
        return list(times), [None] * len(runs)

    return medians


def test_the_faster_lowering_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "medians_interleaved", timer([2.0, 1.0]))  # as written, then the candidate
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


@pytest.mark.parametrize(
    ("times", "pipeline", "runs_eagerly", "verdict"),
    [
        # (as written replayed, eagerly; the candidate replayed, eagerly)
        ([1.0, 1.2, 0.9, 1.1], "stream-lowering{overlap=never}", False, "replayed 0.900 ms, eagerly 1.100 ms: replays"),
        ([1.0, 0.5, 0.9, 1.1], "stream-lowering", True, "replayed 0.900 ms, eagerly 0.500 ms: runs eagerly"),
        (
            [1.0, 0.885, 0.9, 1.1],
            "stream-lowering{overlap=never}",
            False,
            "replayed 0.900 ms, eagerly 0.885 ms: replays",
        ),
    ],
)
def test_every_lowering_replayed_and_eagerly(
    monkeypatch: pytest.MonkeyPatch, times: list[float], pipeline: str, runs_eagerly: bool, verdict: str
) -> None:
    """
    With graphs automatic, each lowering is timed replayed and eagerly, interleaved; the fastest
    replay is kept unless an eager run (of any lowering) is faster by more than EAGER_MARGIN.
    """
    monkeypatch.setattr(compiled, "medians_interleaved", lambda runs, device, sync, failed, **_: (times, [None] * 4))
    monkeypatch.setattr(compiled, "graph_by_default", lambda device: True)
    x, w = torch.randn(16, 8), torch.randn(8, 4)
    fn = hir.compile(block, (x, w), ["[stream(4), serial]", None])
    fn.lowering = Lowering("copy-engine", "always", "the model", serial_ms=1.0, pipelined_ms=0.9)
    fn.candidates = [("stream-lowering{overlap=never}", Lowering("nccl", "never", "the serial form"))]
    fn._measure_first_call([x, w], None, True, torch.device("cpu"))
    assert fn.pipeline == pipeline
    assert fn.eager_measured_faster is runs_eagerly
    assert fn._graph_for(torch.device("cpu")) is not runs_eagerly
    assert fn.graph_decision == verdict
    assert fn.measured == {
        "stream-lowering (replayed)": times[0],
        "stream-lowering (eager)": times[1],
        "stream-lowering{overlap=never} (replayed)": times[2],
        "stream-lowering{overlap=never} (eager)": times[3],
    }
    assert fn.lowering is not None
    assert fn.lowering.reason == (
        f"the model; measured at the first call: copy-engine overlap=always {times[0]:.3f} ms replayed, "
        f"{times[1]:.3f} ms eagerly, nccl overlap=never {times[2]:.3f} ms replayed, {times[3]:.3f} ms eagerly; "
        f"{verdict.rsplit(': ', 1)[1]}"
    )
    fn.cuda_graph = True  # an explicit choice wins over the measurement
    assert fn._graph_for(torch.device("cpu"))


def test_interleaved_rounds_and_failures() -> None:
    """Round-robin: every contender runs once per round; one that fails a capture is out, its time inf."""
    order: list[str] = []

    class Refused(Exception):
        """A capture refused."""

    def refused() -> None:
        order.append("b")
        raise Refused

    runs = [lambda: order.append("a"), refused, lambda: order.append("c")]
    times, errors = autotune.medians_interleaved(
        runs, torch.device("cpu"), lambda: None, lambda e: isinstance(e, Refused), warmup=1, rounds=3
    )
    assert order == ["a", "b", "c", "a", "c", "a", "c", "a", "c"]
    assert math.isinf(times[1])
    assert all(math.isfinite(t) and t >= 0.0 for t in (times[0], times[2]))
    assert errors[0] is None
    assert isinstance(errors[1], Refused)
    assert errors[2] is None
    # A run that fails on another rank only is out on this one too, from the first round on.
    order.clear()
    elsewhere = iter([False, True, False])  # per run of the first round: did any rank fail it?
    times, errors = autotune.medians_interleaved(
        [lambda: order.append("a"), lambda: order.append("b"), lambda: order.append("c")],
        torch.device("cpu"), lambda: None, lambda e: False, warmup=1, rounds=2,
        failed_anywhere=lambda flag: flag or next(elsewhere),
    )  # fmt: skip
    assert order == ["a", "b", "c", "a", "c", "a", "c"]
    assert math.isinf(times[1])
    assert isinstance(errors[1], RuntimeError)
    assert "another rank" in str(errors[1])
    with pytest.raises(ZeroDivisionError):  # any other error is the caller's
        autotune.medians_interleaved([lambda: 1 / 0], torch.device("cpu"), lambda: None, lambda e: False)


def test_a_timed_warm_up_runs_round_robin_until_its_time_has_passed() -> None:
    """`warmup_seconds`: warm-up rounds until that long has passed, then the counted rounds."""
    import time

    calls: list[tuple[str, float]] = []

    def slow(name: str) -> None:
        calls.append((name, time.perf_counter()))
        time.sleep(0.005)

    start = time.perf_counter()
    times, errors = autotune.medians_interleaved(
        [lambda: slow("a"), lambda: slow("b")], torch.device("cpu"), lambda: None, lambda e: False,
        warmup=0, rounds=2, warmup_seconds=0.05,
    )  # fmt: skip
    order = [name for name, _ in calls]
    assert order == ["a", "b"] * (len(order) // 2)
    # Each round's start, from the clock (a loaded machine sleeps longer: fewer rounds, same rule).
    warm_up, timed = [t for _, t in calls[::2]][:-2], [t for _, t in calls[::2]][-2:]
    assert len(warm_up) >= 2, "warm-up rounds while the time has not passed"
    assert warm_up[-2] - start < 0.05, "no warm-up round begun after the time had passed but the last"
    assert timed[0] - start >= 0.05, "the two counted rounds after it"
    assert all(math.isfinite(t) for t in times)
    assert errors == [None, None]


def test_a_candidate_that_cannot_be_captured_loses(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse_loops(
        runs: list[Callable[[], None]], device: torch.device, sync: object, failed: object, **_: Any
    ) -> Any:
        times: list[float] = []
        errors: list[BaseException | None] = []
        for run in runs:
            run()
            k = run.__defaults__[0]  # type: ignore[attr-defined]
            refused = k == 0  # the lowering as written, with its stream loop
            times.append(math.inf if refused else 5.0)
            errors.append(RuntimeError("cannot be captured") if refused else None)
        return times, errors

    monkeypatch.setattr(compiled, "medians_interleaved", refuse_loops)
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


@pytest.mark.parametrize(("replayed_ms", "runs_eagerly"), [(0.99, True), (0.97, False)])
def test_a_training_program_replays_only_when_clearly_faster(
    monkeypatch: pytest.MonkeyPatch, replayed_ms: float, runs_eagerly: bool
) -> None:
    """`replay_must_win` (training programs): a near tie runs eagerly; a replay 2 % faster is kept."""
    times = [replayed_ms, 1.0]
    monkeypatch.setattr(compiled, "medians_interleaved", lambda runs, device, sync, failed, **_: (times, [None] * 2))
    monkeypatch.setattr(compiled, "graph_by_default", lambda device: True)
    x, w = torch.randn(16, 8), torch.randn(8, 4)
    fn = hir.compile(block, (x, w), ["[stream(4), serial]", None])
    fn.replay_must_win = True
    fn._measure_first_call([x, w], None, True, torch.device("cpu"))
    assert fn.eager_measured_faster is runs_eagerly
    assert fn.graph_decision == (
        f"replayed {replayed_ms:.3f} ms, eagerly 1.000 ms: {'runs eagerly' if runs_eagerly else 'replays'}"
    )


def test_training_programs_replay_only_when_clearly_faster() -> None:
    """hir.compile(training=True) marks its forward and backward programs so."""
    x, w = torch.randn(16, 8, requires_grad=True), torch.randn(8, 4, requires_grad=True)
    step = hir.compile(block, (x.detach(), w.detach()), training=True)
    step(x, w).sum().backward()
    programs = [p for graphs in step.graphs.values() for p in graphs.values()]
    assert len(programs) == 2
    assert all(p.replay_must_win for p in programs)


def test_a_capture_that_failed_on_another_rank_falls_back_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every replay failed elsewhere (this rank's runs were fine): eager from now on, one warning that says so."""
    failed = RuntimeError("the run failed on another rank")
    monkeypatch.setattr(
        compiled, "medians_interleaved", lambda runs, device, sync, failed_, **_: ([math.inf, 1.0], [failed, None])
    )
    monkeypatch.setattr(compiled, "graph_by_default", lambda device: True)
    x, w = torch.randn(16, 8), torch.randn(8, 4)
    fn = hir.compile(block, (x, w), ["[stream(4), serial]", None])
    with pytest.warns(compiled.CudaGraphFallbackWarning, match="on another rank of the job"):
        fn._measure_first_call([x, w], None, True, torch.device("cpu"))
    assert fn.eager_reason is not None
    assert not fn._graph_for(torch.device("cpu"))


def test_cuda_graph_true_and_no_lowering_captured_is_the_capture_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked for graphs explicitly, a first call where every lowering's capture failed raises the located error."""
    x, w = torch.randn(16, 8), torch.randn(8, 4)
    fn = hir.compile(block, (x, w), ["[stream(4), serial]", None])
    refused = compiled.CaptureError(fn.program.func, "cannot be captured in a CUDA graph: the reason")
    monkeypatch.setattr(
        compiled, "medians_interleaved", lambda runs, device, sync, failed, **_: ([math.inf] * 2, [refused] * 2)
    )
    fn.cuda_graph = True
    fn.lowering = Lowering("nccl", "always", "the model", serial_ms=1.0, pipelined_ms=0.9)
    fn.candidates = [("stream-lowering{overlap=never}", Lowering("nccl", "never", "the serial form"))]
    with pytest.raises(compiled.CaptureError, match=r"<block>:\d+:\d+: error: .*cannot be captured in a CUDA graph"):
        fn._measure_first_call([x, w], None, True, torch.device("cpu"))
