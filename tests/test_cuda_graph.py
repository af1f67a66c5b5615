"""
CUDA-graph mode (`program(..., cuda_graph=True)`, `hir-run --cuda-graph`; runtime/cuda_graph.py).

On CPU: the refusals (a CPU run, a fusion-level function, collectives over gloo, a communicator
that cannot say), each located; the signature a graph is specific to; and the plumbing of capture
and replay with torch's graph replaced by a recorder (one warm-up and one capture per signature,
inputs copied into the static buffers unless they are those buffers, outputs copied into
preallocated ones). Marked `cuda`: capture and replays on a GPU with fresh inputs each time
against the reference, multi-stream programs, the caller's stream; the 2-GPU test (NCCL and
symmetric memory under torchrun) is tests/cuda_graph_driver.py, run by `test_two_gpus`.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import warnings
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from cuda_graph_driver import CASES, FAILING_CASES

import hir
from hir.diagnostics import LocatedError
from hir.frontend import compiled as compiled_module
from hir.runtime import cuda_graph as cuda_graph_mode
from hir.runtime.distributed import ProcessGroupCommunicator
from hir.runtime.inputs import random_inputs
from hir.tools.hir_run import main as hir_run_main

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

cuda = pytest.mark.cuda
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# A stream-parallel chain on one device: matmul then relu over 4 chunks of rows, each on its own
# pool stream; whole weights.
CHAIN = """
func.func @main(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>) -> tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>> {
  %y = fusion.matmul %x, %w : tensor<64x32xf32>, tensor<32x48xf32> -> tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>>
  %z = fusion.relu %y : tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>> -> tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>>
  func.return %z : tensor<64x48xf32, #fusion.parallel<[stream(4), serial]>>
}
"""


def lowered(text: str, name: str = "chain.mlir", pipeline: str = "stream-lowering") -> hir.Program:
    return hir.compile_program(hir.run_pipeline(hir.parse(text, name), pipeline))


def reference(text: str, inputs: list[Any]) -> list[Any]:
    return hir.execute(hir.parse(text, "reference.mlir"), [t.cpu() for t in inputs])


# -- refusals -------------------------------------------------------------------------------------


def test_refused_on_cpu() -> None:
    program = lowered(CHAIN)
    with pytest.raises(LocatedError) as err:
        program(random_inputs(program.global_input_types, seed=1), cuda_graph=True)
    assert str(err.value) == (
        "chain.mlir:2:1: error: 'func.func' op cannot be captured in a CUDA graph: the program runs on cpu, "
        "CUDA graphs need a GPU"
    )
    assert not program.graphs


def test_refused_for_a_fusion_level_function() -> None:
    program = hir.compile_program(hir.parse(CHAIN, "chain.mlir"))
    with pytest.raises(LocatedError, match=r"^chain.mlir:2:1: error: 'func.func' op cannot be captured .*fusion-level"):
        program(random_inputs(program.input_types, seed=1), cuda_graph=True)


def ag_matmul_program(pipeline: str = "stream-lowering", example: str = "ag_matmul.mlir") -> hir.Program:
    return hir.compile_program(hir.run_pipeline(hir.parse_file(EXAMPLES / example), pipeline))


def test_refused_for_collectives_over_gloo(monkeypatch: pytest.MonkeyPatch) -> None:
    """A communicator whose process group is gloo's: the collective is named, at its position."""
    program = ag_matmul_program()
    communicator = ProcessGroupCommunicator(rank=0, world_size=2)
    communicator.groups[(0, 1)] = "the gloo group"
    monkeypatch.setattr("hir.runtime.distributed.dist.get_backend", lambda group: "gloo")
    with pytest.raises(LocatedError) as err:
        cuda_graph_mode.capture_refusal(program.func, torch.device("cuda", 0), communicator)
    message = str(err.value)
    assert message.startswith(f"{EXAMPLES / 'ag_matmul.mlir'}:"), message
    assert "error: 'hir.allgather' op cannot be captured in a CUDA graph: its transfers over mesh [0, 1] go " in message
    assert "torch.distributed's gloo backend, which runs them on the host" in message

    monkeypatch.setattr("hir.runtime.distributed.dist.get_backend", lambda group: "nccl")
    cuda_graph_mode.capture_refusal(program.func, torch.device("cuda", 0), communicator)  # NCCL: capturable


def test_refused_for_symmetric_memory_of_an_unknown_communicator() -> None:
    """The copy-engine program's barriers and peer views need a communicator that says it can be captured."""
    program = ag_matmul_program("stream-lowering{backend=copy-engine}", "multidevice/ag_matmul_by_device.mlir")

    class Opaque:
        pass

    with pytest.raises(
        LocatedError, match=r"'hir\.(peer_view|barrier)' op cannot be captured .*\(Opaque\) does not say"
    ):
        cuda_graph_mode.capture_refusal(program.func, torch.device("cuda", 0), Opaque())  # type: ignore[arg-type]


def test_hir_run_refuses_on_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_code:
        hir_run_main([str(EXAMPLES / "set_stream.mlir"), "--check", "--cuda-graph", "--device", "cpu"])
    assert exit_code.value.code == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        f"{EXAMPLES / 'set_stream.mlir'}:4:1: error: 'func.func' op cannot be captured in a CUDA graph: "
        "the program runs on cpu, CUDA graphs need a GPU"
    )


def test_signature() -> None:
    x, y = torch.zeros(4, 8), torch.zeros(4, 8, dtype=torch.float64)
    cpu = torch.device("cpu")
    assert cuda_graph_mode.signature([x, 3], cpu, 4, None) == cuda_graph_mode.signature([x.clone(), 3], cpu, 4, None)
    different = [([y, 3], 4), ([x[:2], 3], 4), ([x, 5], 4), ([x, 3], 2)]
    for inputs, streams in different:
        assert cuda_graph_mode.signature(inputs, cpu, streams, None) != cuda_graph_mode.signature([x, 3], cpu, 4, None)


# -- the plumbing, with torch's graph replaced by a recorder --------------------------------------


class RecordingGraph:
    """
    Stands in for torch.cuda.CUDAGraph on CPU: counts replays. It cannot re-run the captured work;
    a test that needs a replay to write the static outputs sets `on_replay`.
    """

    made: list[RecordingGraph] = []

    def __init__(self) -> None:
        self.replays = 0
        self.on_replay: Callable[[], None] | None = None
        RecordingGraph.made.append(self)

    def replay(self) -> None:
        self.replays += 1
        if self.on_replay is not None:
            self.on_replay()


def fake_graph_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch.cuda calls of `capture` other than the graph context, made harmless on CPU."""
    monkeypatch.setattr(torch.cuda, "CUDAGraph", RecordingGraph)
    monkeypatch.setattr(torch.cuda, "graph_pool_handle", lambda: (0, 1))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: "the caller's stream")


@pytest.fixture
def recorded_capture(monkeypatch: pytest.MonkeyPatch) -> list[tuple[hir.Program, str]]:
    """Capture and replay on CPU through RecordingGraph; yields the log of runs: (program, 'run' or 'capture')."""
    log: list[tuple[hir.Program, str]] = []
    capturing = [False]

    @contextlib.contextmanager
    def graph(g: RecordingGraph, pool: object = None, capture_error_mode: str = "global") -> Iterator[None]:
        assert capture_error_mode == "thread_local"
        assert pool == (0, 1)  # the pool capture names, so that a failed capture's can be ended
        capturing[0] = True
        try:
            yield
        finally:
            capturing[0] = False

    original = hir.Program._run_once

    def run_once(self: hir.Program, *args: Any) -> Any:
        log.append((self, "capture" if capturing[0] else "run"))
        return original(self, *args)

    RecordingGraph.made.clear()
    fake_graph_api(monkeypatch)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    monkeypatch.setattr(cuda_graph_mode, "capture_refusal", lambda function, device, communicator: None)
    monkeypatch.setattr(hir.Program, "_run_once", run_once)
    return log


def runs_of(program: hir.Program, log: list[tuple[hir.Program, str]]) -> list[str]:
    return [kind for p, kind in log if p is program]


def test_capture_once_per_signature_then_replay(recorded_capture: list[tuple[hir.Program, str]]) -> None:
    program = lowered(CHAIN)
    inputs = random_inputs(program.global_input_types, seed=1)
    (first,) = program(inputs, cuda_graph=True)
    assert runs_of(program, recorded_capture) == ["run", "capture"]  # the warm-up outside capture, then the capture
    (captured,) = program.graphs.values()
    torch.testing.assert_close(first, reference(CHAIN, inputs)[0])  # what the captured run computed
    assert first is captured.static_outputs[0]
    assert RecordingGraph.made[0].replays == 1

    fresh = random_inputs(program.global_input_types, seed=2)
    (again,) = program(fresh, cuda_graph=True)
    assert runs_of(program, recorded_capture) == ["run", "capture"]  # replayed, not run
    assert again is first
    assert RecordingGraph.made[0].replays == 2
    for static, given in zip(captured.static_inputs, fresh):
        assert static is not given
        assert torch.equal(static, given)

    out = torch.empty(64, 48)
    (written,) = program(fresh, cuda_graph=True, outputs=[out])
    assert written is out
    assert torch.equal(out, captured.static_outputs[0])

    program(captured.static_inputs, cuda_graph=True)  # the caller passes the static buffers: no copy
    assert RecordingGraph.made[0].replays == 4

    wider = hir.compile_program(
        hir.run_pipeline(hir.parse(CHAIN.replace("64x", "128x"), "wide.mlir"), "stream-lowering")
    )
    wider(random_inputs(wider.global_input_types, seed=3), cuda_graph=True)
    assert len(RecordingGraph.made) == 2
    assert runs_of(wider, recorded_capture) == ["run", "capture"]


def test_the_warm_up_is_race_checked(recorded_capture: list[tuple[hir.Program, str]]) -> None:
    """race_check=True: the warm-up run is checked; a race would fail before anything is captured."""
    text = (EXAMPLES / "set_stream.hir.mlir").read_text()
    racy = text.replace("hir.set_current_stream %main\n    hir.synchronize %s\n", "hir.set_current_stream %main\n")
    assert racy != text
    program = hir.compile_program(hir.parse(racy, "racy.mlir"), race_check=True)
    with pytest.raises(LocatedError, match="race"):
        program([torch.randn(4, 8)], cuda_graph=True)
    assert runs_of(program, recorded_capture) == ["run"]
    assert not program.graphs


# -- on a GPU -------------------------------------------------------------------------------------


@cuda
@needs_cuda
@pytest.mark.parametrize("num_streams", [1, 2, 4])
def test_replays_with_fresh_inputs(num_streams: int) -> None:
    program = lowered(CHAIN)
    for seed in range(4):  # capture, then 3 replays, each with new inputs
        inputs = [t.cuda() for t in random_inputs(program.global_input_types, seed=seed)]
        (out,) = program(inputs, num_streams=num_streams, cuda_graph=True)
        torch.testing.assert_close(out.cpu(), reference(CHAIN, inputs)[0])
    (captured,) = program.graphs.values()
    assert captured.replays == 4


@cuda
@needs_cuda
def test_replay_orders_with_the_callers_stream() -> None:
    """Inputs written on the caller's stream just before the call are what the replay reads."""
    program = lowered(CHAIN)
    x, w = (t.cuda() for t in random_inputs(program.global_input_types, seed=0))
    program([x, w], cuda_graph=True)
    caller = torch.cuda.Stream()
    fresh = [t.cuda() for t in random_inputs(program.global_input_types, seed=5)]
    torch.cuda.synchronize()
    with torch.cuda.stream(caller):
        torch.cuda._sleep(20_000_000)  # the caller's stream is busy: a replay that ran early reads old inputs
        x.copy_(fresh[0])
        w.copy_(fresh[1])
        (out,) = program([x, w], cuda_graph=True)
        result = out.clone()
        assert torch.cuda.current_stream() == caller
    torch.cuda.synchronize()
    torch.testing.assert_close(result.cpu(), reference(CHAIN, fresh)[0])


@cuda
@needs_cuda
def test_preallocated_outputs_and_static_inputs() -> None:
    program = lowered(CHAIN)
    inputs = [t.cuda() for t in random_inputs(program.global_input_types, seed=0)]
    out = torch.empty(64, 48, device="cuda")
    (written,) = program(inputs, cuda_graph=True, outputs=[out])
    assert written is out
    torch.testing.assert_close(out.cpu(), reference(CHAIN, inputs)[0])
    (captured,) = program.graphs.values()
    fresh = random_inputs(program.global_input_types, seed=9)
    for static, value in zip(captured.static_inputs, fresh):
        static.copy_(value)
    (result,) = program(captured.static_inputs, cuda_graph=True)
    torch.testing.assert_close(result.cpu(), reference(CHAIN, fresh)[0])


@cuda
@needs_cuda
def test_hir_run_cuda_graph(capsys: pytest.CaptureFixture[str]) -> None:
    hir_run_main(
        [str(EXAMPLES / "set_stream.mlir"), "--check", "--cuda-graph", "--device", "cuda", "--num-streams", "2"]
    )
    assert "check: OK" in capsys.readouterr().out


@cuda
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_two_gpus(tmp_path: Path) -> None:
    """
    tests/cuda_graph_driver.py on 2 GPUs: NCCL, ring and copy-engine programs captured, 3 replays
    each; a capture that fails on both ranks, then runs without and with a graph, and a clean exit.
    """
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--log-dir",
        str(tmp_path),
        str(REPO / "tests" / "cuda_graph_driver.py"),
    ]
    env = {
        **os.environ,
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    cases = [line for line in result.stdout.splitlines() if line.startswith("CASE ")]
    assert len(cases) == len(CASES) + len(FAILING_CASES), output
    assert all(line.endswith(" OK") for line in cases), output
    assert result.returncode == 0, output
    logs = "".join(path.read_text(errors="replace") for path in tmp_path.rglob("*") if path.is_file())
    assert "INTERNAL ASSERT" not in result.stderr + logs, output  # a capture left open fails at exit


class FailingCapture:
    """Stands in for torch.cuda.graph: its exit raises, as torch's capture_end does after a failed capture."""

    entered = 0

    def __init__(self, g: object, pool: object = None, capture_error_mode: str = "global") -> None:
        self.capture_stream = "the capture stream"

    def __enter__(self) -> None:
        FailingCapture.entered += 1

    def __exit__(self, *args: object) -> None:
        raise RuntimeError("CUDA error: operation failed due to a previous error during capture")


@pytest.fixture
def failing_capture(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every capture fails (FailingCapture); yields the log of `end_failed_capture`'s calls and of what followed."""
    log: list[tuple[str, Any]] = []

    def end_failed_capture(graph: object, capturing: FailingCapture, pool: object, caller_stream: object) -> None:
        log.append(("ended", (capturing.capture_stream, pool, caller_stream)))

    FailingCapture.entered = 0
    fake_graph_api(monkeypatch)
    monkeypatch.setattr(torch.cuda, "graph", FailingCapture)
    monkeypatch.setattr(cuda_graph_mode, "end_failed_capture", end_failed_capture)
    monkeypatch.setattr(cuda_graph_mode, "capture_refusal", lambda function, device, communicator: None)
    return log


def test_an_op_failing_under_capture_is_named(failing_capture: list[tuple[str, Any]]) -> None:
    """
    An op that fails while capturing is reported at its position, also when ending the capture
    fails then; the capture is ended (no stream left capturing, the allocator's pool ended) first.
    """
    program = lowered(CHAIN)
    launch = next(op for op in program.func.walk() if op.name == "hir.launch")

    def run_once(inputs: list[Any], outputs: list[Any], warm_up: bool) -> tuple[list[Any], list[Any]]:
        if not warm_up:
            failing_capture.append(("failed", None))
            raise LocatedError(launch, "failed at run time: operation not permitted when stream is capturing")
        return [], []

    with pytest.raises(cuda_graph_mode.CaptureError) as err:
        cuda_graph_mode.capture(program.func, run_once, [torch.zeros(2)], torch.device("cpu"))
    assert err.value.op is launch
    assert "'hir.launch' op cannot be captured in a CUDA graph: failed at run time: operation not permitted" in str(
        err.value
    )
    assert failing_capture == [("failed", None), ("ended", ("the capture stream", (0, 1), "the caller's stream"))]
    assert not cuda_graph_mode.keep_with_capture(["a work"])  # no capture under way any more


def test_a_capture_failing_without_a_located_cause_names_the_function(failing_capture: list[tuple[str, Any]]) -> None:
    program = lowered(CHAIN)

    def run_once(inputs: list[Any], outputs: list[Any], warm_up: bool) -> tuple[list[Any], list[Any]]:
        return [], []

    with pytest.raises(cuda_graph_mode.CaptureError) as err:
        cuda_graph_mode.capture(program.func, run_once, [torch.zeros(2)], torch.device("cpu"))
    assert err.value.op is program.func
    assert str(err.value).endswith(
        "'func.func' op cannot be captured in a CUDA graph: CUDA error: operation failed due to a previous error "
        "during capture"
    )
    assert [kind for kind, _ in failing_capture] == ["ended"]


# -- point-to-point works under capture -------------------------------------------------------------


class Work:
    """A pending transfer; asking whether it completed is what capture forbids (an event query)."""

    def __init__(self, name: str, completed: bool = False) -> None:
        self.name, self.completed, self.queries = name, completed, 0

    def is_completed(self) -> bool:
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
        self.queries += 1
        return self.completed

    def wait(self) -> None:
        pass


@pytest.fixture
def stream_capturing(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the current stream is capturing, as torch.cuda reports it: set the list's item."""
    state = [False]
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: state[0])
    return state


def test_keep_until_complete_does_not_query_under_capture(stream_capturing: list[bool]) -> None:
    communicator = ProcessGroupCommunicator(rank=0, world_size=2)
    done, pending = Work("done", completed=True), Work("pending")
    communicator.keep_until_complete([done, pending])

    stream_capturing[0] = True
    captured = [Work("captured send"), Work("captured recv")]
    assert communicator.keep_until_complete(captured) == captured  # no query: is_completed would raise
    assert communicator.in_flight == [done, pending]
    assert communicator.held_for_graphs == captured  # a capture not of the runtime's: held by the communicator

    stream_capturing[0] = False
    later = Work("later")
    communicator.keep_until_complete([later])
    assert communicator.in_flight == [pending, later]  # completed ones are dropped once queries are allowed
    assert done.queries == pending.queries == 1
    assert communicator.held_for_graphs == captured


def test_works_posted_under_capture_live_as_long_as_the_graph(
    monkeypatch: pytest.MonkeyPatch, recorded_capture: list[tuple[hir.Program, str]], stream_capturing: list[bool]
) -> None:
    """A collective-permute posted while `capture` captures: no completion query, its works kept by the graph."""
    communicator = ProcessGroupCommunicator(rank=0, world_size=2)
    communicator.groups[(0, 1)] = "the NCCL group"
    posted: list[list[Work]] = []

    def batch_isend_irecv(ops: list[Any]) -> list[Work]:
        posted.append([Work("send"), Work("recv")])
        return posted[-1]

    monkeypatch.setattr("hir.runtime.distributed.dist.P2POp", lambda op, tensor, peer, group=None: (op, peer))
    monkeypatch.setattr("hir.runtime.distributed.dist.batch_isend_irecv", batch_isend_irecv)
    send, recv = torch.randn(4, 8), torch.empty(4, 8)

    def run_once(inputs: list[Any], outputs: list[Any], warm_up: bool) -> tuple[list[Any], list[Any]]:
        stream_capturing[0] = not warm_up
        communicator.collective_permute(send, recv, 1, (0, 1)).wait()
        stream_capturing[0] = False
        return [recv], [recv]

    program = lowered(CHAIN)
    captured = cuda_graph_mode.capture(program.func, run_once, [torch.zeros(2)], torch.device("cpu"))
    warm_up, under_capture = posted
    assert communicator.in_flight == warm_up
    assert all(w in captured.keep_alive for w in under_capture)
    assert not communicator.held_for_graphs
    assert all(w.queries == 0 for w in warm_up + under_capture)


# -- hir.compile(..., cuda_graph=True) ------------------------------------------------------------


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def test_compiled_function_captures_once(recorded_capture: list[tuple[hir.Program, str]]) -> None:
    """
    A parameter the compiled function reads in place (the module's own tensor) is read by the graph
    where it is: not copied in at a replay, so an in-place update is seen; an input read in place
    given at other memory makes the call capture anew.
    """
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(8, 32)
    compiled = hir.compile(block, (x,), ["[stream, serial]"], ["[stream, serial]"], cuda_graph=True)
    with torch.no_grad():
        first = compiled(x)
        torch.testing.assert_close(first, block(x))  # what the captured run computed
    assert runs_of(compiled.program, recorded_capture) == ["run", "capture"]
    copies: list[int] = []
    original_copy = torch.Tensor.copy_

    def counted_copy(self: torch.Tensor, source: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        copies.append(self.data_ptr())
        return original_copy(self, source, non_blocking)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.Tensor, "copy_", counted_copy)
        compiled(torch.randn(8, 32))
    assert runs_of(compiled.program, recorded_capture) == ["run", "capture"]  # replayed
    (captured,) = compiled.program.graphs.values()
    assert captured.replays == 2
    state = [held.tensor for held in compiled._shared_state.values()]
    assert {t.data_ptr() for t in state} == {block.fc.weight.data_ptr(), block.fc.bias.data_ptr()}
    assert all(any(t is s for s in captured.static_inputs) for t in state)  # read where the module holds them
    assert set(copies).isdisjoint(t.data_ptr() for t in state)  # the replay copied in x only
    assert len(captured.in_place) == 2

    # Given at other memory, an input read in place makes the call capture anew (the graph reads the old).
    program, inputs = (
        compiled.program,
        compiled._inputs((x,), x.device),
    )
    moved = [t.clone() if t is state[0] else t for t in inputs]
    program(moved, cuda_graph=True, in_place_inputs=compiled._read_in_place)
    assert runs_of(program, recorded_capture) == ["run", "capture", "run", "capture"]


def compiled_block(seed: int = 0, **options: Any) -> tuple[Block, hir.CompiledFunction]:
    torch.manual_seed(seed)
    block = Block()
    return block, hir.compile(block, (torch.randn(8, 32),), ["[stream, serial]"], ["[stream, serial]"], **options)


def random_rows(seed: int) -> torch.Tensor:
    return torch.randn(8, 32, generator=torch.Generator().manual_seed(seed))


def test_automatic_mode_runs_cpu_calls_without_a_graph(recorded_capture: list[tuple[hir.Program, str]]) -> None:
    """cuda_graph=None (the default) on CPU inputs: plain runs, no capture tried, no warning."""
    block, compiled = compiled_block()
    assert compiled.cuda_graph is None
    assert not compiled_module.graph_by_default(torch.device("cpu"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in (1, 2):
            x = random_rows(seed)
            with torch.no_grad():
                torch.testing.assert_close(compiled(x), block(x))
    assert runs_of(compiled.program, recorded_capture) == ["run", "run"]  # the fixture would have let it capture
    assert not compiled.program.graphs
    assert compiled.eager_reason is None


def timed_as(times: list[float]) -> Callable[..., tuple[list[float], list[BaseException | None]]]:
    """The first call's timer: each contender (replayed, then eagerly) runs once and took `times`."""

    def medians(runs: list[Callable[[], None]], device: torch.device, sync: object, failed: Any, **_: Any) -> Any:
        errors: list[BaseException | None] = []
        for run in runs:
            try:
                run()
                errors.append(None)
            except Exception as err:
                if not failed(err):
                    raise
                errors.append(err)
        return [t if e is None else math.inf for t, e in zip(times, errors)], errors

    return medians


@pytest.fixture
def as_if_on_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    The automatic mode's decision for a GPU call, taken for CPU tensors; the first call's timings
    of the program replayed and eagerly (each timed run runs once) come out equal: it replays.
    """
    monkeypatch.setattr(compiled_module, "graph_by_default", lambda device: True)
    monkeypatch.setattr(compiled_module, "medians_interleaved", timed_as([1.0, 1.0]))


@pytest.mark.usefixtures("as_if_on_a_gpu")
def test_automatic_mode_captures_on_a_gpu(recorded_capture: list[tuple[hir.Program, str]]) -> None:
    block, compiled = compiled_block()
    with torch.no_grad():
        x = random_rows(1)
        torch.testing.assert_close(compiled(x), block(x))
        compiled(random_rows(2))
    # The first call times the program replayed (a warm-up run, the capture, a replay), then eagerly
    # (a run), keeps replaying (no faster eagerly), and replays; so does the second call.
    assert runs_of(compiled.program, recorded_capture) == ["run", "capture", "run"]
    (captured,) = compiled.program.graphs.values()
    assert captured.replays == 3
    assert compiled.graph_decision == "replayed 1.000 ms, eagerly 1.000 ms: replays"


@pytest.mark.usefixtures("as_if_on_a_gpu")
def test_no_first_call_measurement_without_measure_candidates(
    recorded_capture: list[tuple[hir.Program, str]],
) -> None:
    """measure_candidates=False: the first call neither times the program both ways; it captures and replays."""
    block, compiled = compiled_block(measure_candidates=False)
    with torch.no_grad():
        x = random_rows(1)
        torch.testing.assert_close(compiled(x), block(x))
    assert runs_of(compiled.program, recorded_capture) == ["run", "capture"]
    assert compiled.graph_decision is None
    (captured,) = compiled.program.graphs.values()
    assert captured.replays == 1


@pytest.mark.usefixtures("as_if_on_a_gpu")
def test_automatic_mode_runs_eagerly_where_measured_faster(
    monkeypatch: pytest.MonkeyPatch, recorded_capture: list[tuple[hir.Program, str]]
) -> None:
    """A program measured 2 % faster run eagerly than replayed (its copies in and out included) runs eagerly."""
    monkeypatch.setattr(compiled_module, "medians_interleaved", timed_as([1.0, 0.5]))  # replayed, eagerly
    block, compiled = compiled_block()
    with torch.no_grad():
        for k in (1, 2):
            x = random_rows(k)
            torch.testing.assert_close(compiled(x), block(x))
    assert runs_of(compiled.program, recorded_capture) == ["run", "capture", "run", "run", "run"]
    assert compiled.program.graphs == {}  # the measurement's graph dropped: its memory is not held
    assert RecordingGraph.made[-1].replays == 1  # the measurement's only
    assert compiled.eager_measured_faster
    assert compiled.graph_decision == "replayed 1.000 ms, eagerly 0.500 ms: runs eagerly"
    assert compiled.measured == {"stream-lowering (replayed)": 1.0, "stream-lowering (eager)": 0.5}


@pytest.mark.usefixtures("as_if_on_a_gpu")
def test_a_fallback_in_another_specialization_warns_at_the_users_line(
    monkeypatch: pytest.MonkeyPatch, recorded_capture: list[tuple[hir.Program, str]]
) -> None:
    """The warning of a capture refused for a call of other shapes (compiled then, one more frame of hir's)."""
    block, compiled = compiled_block()

    def capture_refusal(function: object, device: object, communicator: object) -> None:
        launch = next(op for op in function.walk() if op.name == "hir.launch")  # type: ignore[attr-defined]
        raise cuda_graph_mode.CaptureError(launch, "cannot be captured in a CUDA graph: the reason it cannot")

    monkeypatch.setattr(cuda_graph_mode, "capture_refusal", capture_refusal)
    x = torch.randn(4, 32)  # the example had 8 rows: a specialization of its own
    with pytest.warns(compiled_module.CudaGraphFallbackWarning) as caught:
        result = compiled(x)
    with torch.no_grad():
        torch.testing.assert_close(result, block(x))
    assert [w.filename for w in caught.list] == [__file__]


@pytest.mark.usefixtures("as_if_on_a_gpu")
def test_automatic_mode_falls_back_once_when_refused(
    monkeypatch: pytest.MonkeyPatch, recorded_capture: list[tuple[hir.Program, str]]
) -> None:
    """A refused capture: one warning naming the op and the reason, then plain runs; never tried again."""
    block, compiled = compiled_block()
    launch = next(op for op in compiled.program.func.walk() if op.name == "hir.launch")
    refusals: list[object] = []

    def capture_refusal(function: object, device: object, communicator: object) -> None:
        refusals.append(function)
        raise cuda_graph_mode.CaptureError(launch, "cannot be captured in a CUDA graph: the reason it cannot")

    monkeypatch.setattr(cuda_graph_mode, "capture_refusal", capture_refusal)
    x = random_rows(1)
    with pytest.warns(compiled_module.CudaGraphFallbackWarning) as caught:
        result = compiled(x)
    with torch.no_grad():
        torch.testing.assert_close(result, block(x))
    (warning,) = caught.list
    message = str(warning.message)
    assert message.startswith("<Block> runs eagerly, without a CUDA graph, from now on: <Block>:"), message
    assert "error: 'hir.launch' op cannot be captured in a CUDA graph: the reason it cannot" in message
    assert warning.filename == __file__  # the user's line
    assert "the reason it cannot" in (compiled.eager_reason or "")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = random_rows(2)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), block(x))
    assert len(refusals) == 1  # not asked again
    # The first call's measurement (its eager run: the replay was refused), its result, the second call.
    assert runs_of(compiled.program, recorded_capture) == ["run", "run", "run"]
    assert not compiled.program.graphs

    compiled.cuda_graph = True  # asked for explicitly: the refusal is an error
    with pytest.raises(cuda_graph_mode.CaptureError, match="the reason it cannot"):
        compiled(x)


@pytest.mark.usefixtures("as_if_on_a_gpu")
def test_automatic_mode_falls_back_once_when_the_capture_fails(failing_capture: list[tuple[str, Any]]) -> None:
    """A capture that fails: ended, one warning, the result of a plain run; no second capture."""
    block, compiled = compiled_block()
    x = random_rows(1)
    with pytest.warns(compiled_module.CudaGraphFallbackWarning, match="operation failed due to a previous error"):
        result = compiled(x)
    with torch.no_grad():
        torch.testing.assert_close(result, block(x))
    assert [kind for kind, _ in failing_capture] == ["ended"]
    assert FailingCapture.entered == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = random_rows(2)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), block(x))
    assert FailingCapture.entered == 1
    assert not compiled.program.graphs

    _, explicit = compiled_block(cuda_graph=True)
    with pytest.raises(cuda_graph_mode.CaptureError, match="operation failed due to a previous error"):
        explicit(x)


@pytest.mark.parametrize("setting", [None, True])
def test_a_result_the_caller_holds_is_never_overwritten(
    monkeypatch: pytest.MonkeyPatch, recorded_capture: list[tuple[hir.Program, str]], setting: bool | None
) -> None:
    """
    A replay overwrites the graph's static output buffer. What a call returned is an alias of that
    buffer (no copy): a result the caller drops costs nothing; one it still holds at the next call
    is moved to memory of its own first; one it holds views of makes the next call run without
    the graph (the views keep their values). A second such call leaves the buffers to the caller:
    it captures a graph of its own, whose results are copies from then on.
    """
    monkeypatch.setattr(compiled_module, "graph_by_default", lambda device: True)
    block, compiled = compiled_block(cuda_graph=setting)
    xs = [random_rows(seed) for seed in range(8)]
    with torch.no_grad():
        expected = [block(x) for x in xs]
        first = compiled(xs[0])
        (captured,) = compiled.program.graphs.values()
        (static_output,) = captured.static_outputs
        graph = RecordingGraph.made[-1]
        # What the graph computes: the block on its static input buffer.
        graph.on_replay = lambda: static_output.copy_(block(captured.static_inputs[-1]))
        buffer = static_output.untyped_storage().data_ptr()
        assert first.untyped_storage().data_ptr() == buffer  # handed out, not copied

        second = compiled(xs[1])  # `first` is still held: it moves before the replay overwrites it
        torch.testing.assert_close(first, expected[0])
        assert first.untyped_storage().data_ptr() != buffer
        torch.testing.assert_close(second, expected[1])
        assert second.untyped_storage().data_ptr() == buffer
        del first, second

        replays = graph.replays
        torch.testing.assert_close(compiled(xs[2]), expected[2])  # nothing held: replayed, no copy
        assert graph.replays == replays + 1

        row = compiled(xs[3])[0]  # a view of the result, which no move can reach
        third = compiled(xs[4])  # so this call runs without the graph
        assert graph.replays == replays + 2
        assert compiled.hands_out_results  # one such call: results are still handed out
        torch.testing.assert_close(row, expected[3][0])
        torch.testing.assert_close(third, expected[4])
        assert third.untyped_storage().data_ptr() != buffer  # an eager run's own memory
        fourth = compiled(xs[5])  # `row` still held: the old graph is left to it, a new one captured
        assert graph.replays == replays + 2
        assert not compiled.hands_out_results
        (recaptured,) = compiled.program.graphs.values()
        assert recaptured is not captured
        (new_output,) = recaptured.static_outputs
        assert new_output.untyped_storage().data_ptr() != buffer
        new_graph = RecordingGraph.made[-1]
        assert new_graph is not graph
        new_graph.on_replay = lambda: new_output.copy_(block(recaptured.static_inputs[-1]))
        torch.testing.assert_close(row, expected[3][0])  # never overwritten again
        new_replays = new_graph.replays
        fifth = compiled(xs[6])  # `row` still held, and no matter: replayed, the result a copy
        assert new_graph.replays == new_replays + 1
        sixth = compiled(xs[7])
        assert new_graph.replays == new_replays + 2
        assert graph.replays == replays + 2
        torch.testing.assert_close(row, expected[3][0])
        for got, want in ((third, 4), (fourth, 5), (fifth, 6), (sixth, 7)):
            torch.testing.assert_close(got, expected[want])
        held = (fourth, fifth, sixth)
        assert all(
            t.untyped_storage().data_ptr() not in (buffer, new_output.untyped_storage().data_ptr()) for t in held
        )


def test_a_call_like_the_last_replays_without_the_programs_checks(
    monkeypatch: pytest.MonkeyPatch, recorded_capture: list[tuple[hir.Program, str]]
) -> None:
    """
    After a replayed call, a call with arguments of the same shapes, dtypes and devices replays
    without `Program.__call__` (its checks passed for such arguments); a parameter replaced at
    other memory, another shape, or graphs turned off take the checked path again, and every
    result matches the block's.
    """
    block, compiled = compiled_block(cuda_graph=True)
    calls: list[int] = []
    original_call = hir.Program.__call__

    def counted_call(self: hir.Program, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original_call(self, *args, **kwargs)

    monkeypatch.setattr(hir.Program, "__call__", counted_call)

    def graph_computes(captured: cuda_graph_mode.CapturedRun) -> None:
        (static_output,) = captured.static_outputs
        weight, bias, x = captured.static_inputs
        RecordingGraph.made[-1].on_replay = lambda: static_output.copy_(torch.relu(x @ weight.t() + bias))

    with torch.no_grad():
        compiled(random_rows(0))
        graph_computes(*compiled.program.graphs.values())
        for seed in (1, 2):
            x = random_rows(seed)
            torch.testing.assert_close(compiled(x), block(x))
        assert len(calls) == 1  # the first call's only
        block.fc.weight = torch.nn.Parameter(torch.randn(16, 32))  # read in place: the graph reads the old
        x = random_rows(3)
        torch.testing.assert_close(compiled(x)[0], block(x)[0])  # the capture's run computes it
        assert len(calls) == 2
        assert runs_of(compiled.program, recorded_capture)[-2:] == ["run", "capture"]
        graph_computes(*[c for c in compiled.program.graphs.values() if c.replays == 1])  # the new capture
        torch.testing.assert_close(compiled(random_rows(4)), block(random_rows(4)))
        assert len(calls) == 2
        compiled(torch.randn(4, 32))  # another shape: a specialization of its own
        compiled.cuda_graph = False
        torch.testing.assert_close(compiled(random_rows(5)), block(random_rows(5)))
        assert len(calls) == 4


def test_lent_outputs_and_borrowed_inputs_skip_the_copies(recorded_capture: list[tuple[hir.Program, str]]) -> None:
    """
    A training forward's saved activations: a replay lends them (views of the graph's output
    buffers), and moves those still referenced to memory of their own before it overwrites the
    buffers; the backward's graph reads them where they are, and a call that passes one elsewhere
    (moved) runs without the graph, with the right result.
    """

    def forward(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x * 2.0, x + 1.0

    def backward(saved: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        return saved * grad

    f = hir.compile(forward, (torch.randn(4, 4),), cuda_graph=True)
    b = hir.compile(backward, (torch.randn(4, 4), torch.randn(4, 4)), cuda_graph=True)
    f.lent_outputs, b.borrowed_inputs = frozenset({1}), frozenset({0})
    f.hands_out_results = b.hands_out_results = False  # as a training step's programs: the rest copied
    x1, x2, g = random_rows(1)[:4, :4], random_rows(2)[:4, :4], random_rows(3)[:4, :4]
    out1, saved1 = f(x1)
    (f_graph,) = f.program.graphs.values()
    static_saved = f_graph.static_outputs[1]
    assert saved1.data_ptr() == static_saved.data_ptr()  # lent: the buffer itself
    assert out1.data_ptr() != f_graph.static_outputs[0].data_ptr()  # the user's output: a copy

    def f_computes() -> None:
        x = f_graph.static_inputs[0]
        f_graph.static_outputs[0].copy_(x * 2.0)
        static_saved.copy_(x + 1.0)

    RecordingGraph.made[-1].on_replay = f_computes
    torch.testing.assert_close(b(saved1, g), (x1 + 1.0) * g)
    (b_graph,) = b.program.graphs.values()
    assert b_graph.static_inputs[0] is saved1  # read where the forward's graph wrote it

    def b_computes() -> None:
        b_graph.static_outputs[0].copy_(static_saved * b_graph.static_inputs[1])

    RecordingGraph.made[-1].on_replay = b_computes
    _, saved2 = f(x2)  # the first step's activations, still held, move before the replay
    assert saved1.data_ptr() != static_saved.data_ptr()
    assert saved2.data_ptr() == static_saved.data_ptr()
    torch.testing.assert_close(saved1, x1 + 1.0)
    torch.testing.assert_close(saved2, x2 + 1.0)
    log = len(recorded_capture)
    torch.testing.assert_close(b(saved2, g), (x2 + 1.0) * g)  # replayed, no copy of saved2
    assert len(recorded_capture) == log
    assert b_graph.replays == 2
    torch.testing.assert_close(b(saved1, g), (x1 + 1.0) * g)  # moved: run without the graph
    assert runs_of(b.program, recorded_capture)[-1] == "run"
    assert b_graph.replays == 2
    del saved2
    _, saved3 = f(x1)  # nothing referenced is lent: nothing to move
    assert saved3.data_ptr() == static_saved.data_ptr()


def test_a_program_called_again_with_the_same_tensors_replays_without_its_checks(
    monkeypatch: pytest.MonkeyPatch, recorded_capture: list[tuple[hir.Program, str]]
) -> None:
    """The same tensor objects at the same memory: the checks they passed hold; anything else is checked."""
    program = hir.compile_program(hir.parse(CHAIN, "chain.mlir"))
    inputs = random_inputs(program.input_types, seed=0)
    checks: list[int] = []
    original = hir.Program.check_inputs

    def counted(self: hir.Program, *args: Any, **kwargs: Any) -> None:
        checks.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(hir.Program, "check_inputs", counted)
    program(inputs, cuda_graph=True)
    (captured,) = program.graphs.values()
    program(inputs, cuda_graph=True)
    program(inputs, cuda_graph=True)
    assert len(checks) == 1
    assert captured.replays == 3
    tensor = next(k for k, v in enumerate(inputs) if isinstance(v, torch.Tensor))
    inputs[tensor].data = inputs[tensor].clone()  # the same object at other memory
    program(inputs, cuda_graph=True)
    program(list(inputs), num_streams=2, cuda_graph=True)  # another setting
    assert len(checks) == 3
    program.graphs.clear()  # dropped: captured anew, not replayed from the last call
    program(inputs, cuda_graph=True)
    assert len(checks) == 4
    assert captured.replays == 4


@pytest.mark.usefixtures("as_if_on_a_gpu")
def test_borrowed_inputs_that_are_never_lent_end_the_replays(recorded_capture: list[tuple[hir.Program, str]]) -> None:
    """A backward whose forward runs eagerly gets its saved activations elsewhere at every call: after two, eagerly."""

    def backward(saved: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        return saved * grad

    b = hir.compile(backward, (torch.randn(4, 4), torch.randn(4, 4)))
    b.borrowed_inputs = frozenset({0})
    g = random_rows(3)[:4, :4]
    for seed in range(4):  # fresh activations each step, as an eager forward makes them
        saved = random_rows(seed)[:4, :4].clone()
        torch.testing.assert_close(b(saved, g), saved * g)
    assert b.eager_measured_faster
    assert not b.program.graphs  # their memory (and the first step's activations they held) given back
    assert "its borrowed inputs are not lent: runs eagerly" in str(b.graph_decision)


def test_an_output_the_local_form_copies_is_not_copied_again() -> None:
    """An output whose local form is a copy (a reshape that cannot be a view) is returned as it is."""
    _, compiled = compiled_block()
    static = torch.randn(8, 16)
    made: list[torch.Tensor] = []

    class Copying:
        def local_output(self, tensor: torch.Tensor, index: int) -> torch.Tensor:
            made.append(tensor.t().reshape(-1))  # a transpose's flattening: a copy
            return made[-1]

    class Viewing:
        def local_output(self, tensor: torch.Tensor, index: int) -> torch.Tensor:
            return tensor.reshape(-1)

    compiled.mode = Copying()
    assert compiled._result(static, 0, graph=True) is made[0]
    compiled.mode = Viewing()
    handed = compiled._result(static, 0, graph=True)  # a view: handed out, moved if held at the next replay
    assert handed.untyped_storage().data_ptr() == static.untyped_storage().data_ptr()
    assert compiled._may_overwrite_results()
    assert handed.untyped_storage().data_ptr() != static.untyped_storage().data_ptr()
    compiled.hands_out_results = False
    copied = compiled._result(static, 0, graph=True)
    assert copied.untyped_storage().data_ptr() != static.untyped_storage().data_ptr()
    assert torch.equal(copied, static.reshape(-1))
    assert torch.equal(handed, static.reshape(-1))
    assert compiled._result(static, 0, graph=False).untyped_storage().data_ptr() == static.untyped_storage().data_ptr()


@cuda
@needs_cuda
def test_held_results_keep_their_values_on_a_gpu() -> None:
    """Results kept across calls, and views of them, against the block on each input: never overwritten."""
    torch.manual_seed(0)
    block = Block().cuda()
    xs = [torch.randn(8, 32, device="cuda") for _ in range(6)]
    compiled = hir.compile(block, (xs[0],), ["[stream, serial]"], ["[stream, serial]"], cuda_graph=True)
    with torch.no_grad():
        expected = [block(x).clone() for x in xs]
        kept = [compiled(xs[0]), compiled(xs[1])]  # the first moved before the second call's replay
        rows = [compiled(xs[2])[0], compiled(xs[3])[1]]  # views: the next call runs without the graph
        kept += [compiled(x) for x in xs[4:]]
        torch.cuda.synchronize()
    for got, want in zip(kept, [expected[0], expected[1], expected[4], expected[5]]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(rows[0], expected[2][0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(rows[1], expected[3][1], rtol=1e-4, atol=1e-4)


@cuda
@needs_cuda
def test_compiled_function_replays_on_a_gpu() -> None:
    torch.manual_seed(0)
    block = Block()  # on the CPU: the compiled function holds its own GPU copies of the parameters
    example = torch.randn(8, 32)  # torch.export runs it where the module is
    compiled = hir.compile(block, (example,), ["[stream, serial]"], ["[stream, serial]"], cuda_graph=True)
    with torch.no_grad():
        for seed in range(3):
            x = torch.randn(8, 32, generator=torch.Generator().manual_seed(seed)).cuda()
            out = compiled(x)
            torch.testing.assert_close(out.cpu(), block(x.cpu()), rtol=1e-4, atol=1e-4)
    (captured,) = compiled.program.graphs.values()
    assert captured.replays == 3
    # Its copies are the graph's input buffers now: a replay copies in only x.
    held = [h.tensor for h in compiled._shared_state.values()]
    assert all(any(t is s for s in captured.static_inputs) for t in held)
    with torch.no_grad():  # an update of the CPU module reaches those copies, in place: still replayed
        block.fc.weight.mul_(-1.0)
        torch.testing.assert_close(compiled(x).cpu(), block(x.cpu()), rtol=1e-4, atol=1e-4)
    assert captured.replays == 4
    assert all(h.tensor is t for h, t in zip(compiled._shared_state.values(), held))

    on_gpu = Block().cuda()  # on the GPU: read in place, so an in-place update is seen by the next replay
    x = x.cuda()
    compiled = hir.compile(on_gpu, (x,), ["[stream, serial]"], ["[stream, serial]"], cuda_graph=True)
    with torch.no_grad():
        compiled(x)
        on_gpu.fc.weight.mul_(2.0)
        torch.testing.assert_close(compiled(x), on_gpu(x), rtol=1e-4, atol=1e-4)


@cuda
@needs_cuda
def test_compiled_function_captures_by_default_on_a_gpu() -> None:
    """The default: captured at the first call, replayed after; each call's result is its own."""
    torch.manual_seed(0)
    block = Block().cuda()
    compiled = hir.compile(block, (torch.randn(8, 32, device="cuda"),), ["[stream, serial]"], ["[stream, serial]"])
    results, expected = [], []
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in range(3):
            x = random_rows(seed).cuda()
            results.append(compiled(x))
            expected.append(block(x))
    (captured,) = compiled.program.graphs.values()
    # The first call timed the program replayed and eagerly; this tiny one replays from then on.
    assert compiled.graph_decision is not None
    assert compiled.graph_decision.endswith("replays")
    assert captured.replays > 3
    replays = captured.replays
    for result, want in zip(results, expected):  # the later replays left the earlier results alone
        torch.testing.assert_close(result, want, rtol=1e-4, atol=1e-4)
    assert len({r.untyped_storage().data_ptr() for r in results}) == 3

    compiled.cuda_graph = False
    with torch.no_grad():
        x = random_rows(5).cuda()
        torch.testing.assert_close(compiled(x), block(x), rtol=1e-4, atol=1e-4)
    assert captured.replays == replays  # run, not replayed


# Run in a process of its own: a capture left open makes PyTorch fail an internal assert at exit.
FAILED_CAPTURE_SCRIPT = """
import warnings

import torch

import hir
from hir.frontend.compiled import CudaGraphFallbackWarning
from hir.runtime.cuda_graph import CaptureError
from hir.runtime.inputs import random_inputs

CHAIN = {chain!r}
original = hir.Program._run_once


def synchronizing(self, *args):  # a device synchronize is not permitted under capture: it invalidates it
    results = original(self, *args)
    if torch.cuda.is_current_stream_capturing():
        torch.cuda.synchronize()
    return results


side = torch.cuda.Stream()


def unjoined(self, *args):  # a stream forked from the capture and never joined: ending the capture fails
    results = original(self, *args)
    if torch.cuda.is_current_stream_capturing():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.ones(4, device="cuda").mul_(2)
        raise ValueError("a planted failure after a fork")
    return results


pools = []  # the memory pools the captures allocate into
pool_handle = torch.cuda.graph_pool_handle
torch.cuda.graph_pool_handle = lambda: pools.append(pool_handle()) or pools[-1]
end_allocate = getattr(torch._C, "_cuda_endAllocateToPool", None) or torch._C._cuda_endAllocateCurrentStreamToPool

program = hir.compile_program(hir.run_pipeline(hir.parse(CHAIN, "chain.mlir"), "stream-lowering"))
reference = hir.compile_program(hir.parse(CHAIN, "chain.mlir"))
caller = torch.cuda.current_stream()
for failing in (synchronizing, unjoined):
    inputs = [t.cuda() for t in random_inputs(program.global_input_types, seed=1)]
    hir.Program._run_once = failing
    try:
        program(inputs, num_streams=2, cuda_graph=True)
        raise AssertionError("the capture did not fail")
    except CaptureError as err:
        assert "cannot be captured in a CUDA graph" in str(err), err
    hir.Program._run_once = original
    assert not program.graphs
    assert torch.cuda.current_stream() == caller, "the caller's stream was not restored"
    assert not torch.cuda.is_current_stream_capturing()
    with torch.cuda.stream(side):
        assert not torch.cuda.is_current_stream_capturing(), "a forked stream is still capturing"
    try:  # the caching allocator no longer allocates into the failed capture's pool
        end_allocate(torch.cuda.current_device(), pools[-1])
        raise AssertionError("the failed capture's pool was left allocating")
    except RuntimeError as err:
        assert "not currently recording" in str(err), err
    torch.cuda.empty_cache()  # torch 2.5 fails an internal assert here while a capture is counted as under way
    (out,) = program(inputs, num_streams=2)
    torch.testing.assert_close(out.cpu(), reference([t.cpu() for t in inputs])[0])

for seed in (2, 3):  # captured anew once nothing fails, then replayed
    inputs = [t.cuda() for t in random_inputs(program.global_input_types, seed=seed)]
    (out,) = program(inputs, num_streams=2, cuda_graph=True)
    torch.testing.assert_close(out.cpu(), reference([t.cpu() for t in inputs])[0])
assert len(program.graphs) == 1

# hir.compile's automatic mode: one warning, plain runs from then on.
hir.Program._run_once = synchronizing
torch.manual_seed(0)
linear = torch.nn.Linear(32, 16).cuda()
compiled = hir.compile(linear, (torch.randn(8, 32, device="cuda"),), ["[stream, serial]"], ["[stream, serial]"])
with warnings.catch_warnings(record=True) as caught, torch.no_grad():
    warnings.simplefilter("always")
    for seed in range(3):
        x = torch.randn(8, 32, generator=torch.Generator().manual_seed(seed)).cuda()
        torch.testing.assert_close(compiled(x), linear(x), rtol=1e-4, atol=1e-4)
fallbacks = [w for w in caught if issubclass(w.category, CudaGraphFallbackWarning)]
assert len(fallbacks) == 1, [str(w.message) for w in caught]
assert "runs eagerly" in str(fallbacks[0].message)
hir.Program._run_once = original
torch.cuda.synchronize()
print("CLEAN")
"""


@cuda
@needs_cuda
def test_a_failed_capture_leaves_the_process_usable() -> None:
    """
    Captures that fail (an op not permitted under capture; a fork never joined) are located errors
    that leave no stream capturing and the allocator usable; the program then runs with and
    without a graph, hir.compile's automatic mode falls back with one warning, and the process
    exits cleanly.
    """
    script = FAILED_CAPTURE_SCRIPT.format(chain=CHAIN)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    assert result.stdout.strip().endswith("CLEAN"), output
    assert "INTERNAL ASSERT" not in result.stderr, output


@cuda
@needs_cuda
def test_graphs_beside_torch_compiles_graphs() -> None:
    """hir's graphs replay correctly after torch.compile's CUDA graph trees recorded (and dropped cuBLAS's workspaces)."""
    script = Path(__file__).resolve().parent / "graphs_beside_torch_compile.py"
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr[-3000:]
    assert result.returncode == 0, output
    assert result.stdout.startswith("OK"), output


def test_an_input_read_in_place_is_kept_without_its_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    A training step's forward graph reads the parameters in place, given as the outputs of the
    autograd gate of its first call, whose node also holds that call's inputs: kept as given, the
    graph kept the first call's input (and, on a GPU, its gradient buffer) alive for good.
    """
    fake_graph_api(monkeypatch)
    monkeypatch.setattr(
        torch.cuda, "graph", lambda graph, pool=None, capture_error_mode="global": contextlib.nullcontext()
    )
    program = lowered(CHAIN)
    leaf = torch.randn(*program.global_input_types[0].get_shape(), requires_grad=True)
    weakly = weakref.ref(leaf)
    gated = leaf * 1  # a tensor with a history that reaches `leaf`
    others = random_inputs(program.global_input_types, seed=3)[1:]
    captured = cuda_graph_mode.capture(
        program.func, lambda ins, outs, warm_up: ([], []), [gated, *others], torch.device("cpu"), in_place=[0]
    )
    assert captured.static_inputs[0].data_ptr() == gated.data_ptr()  # read where it is
    assert captured.static_inputs[0].grad_fn is None
    del leaf, gated
    assert weakly() is None
