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
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from cuda_graph_driver import CASES

import hir
from hir.diagnostics import LocatedError
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
    """Stands in for torch.cuda.CUDAGraph on CPU: counts replays (it cannot re-run the captured work)."""

    made: list[RecordingGraph] = []

    def __init__(self) -> None:
        self.replays = 0
        RecordingGraph.made.append(self)

    def replay(self) -> None:
        self.replays += 1


@pytest.fixture
def recorded_capture(monkeypatch: pytest.MonkeyPatch) -> list[tuple[hir.Program, str]]:
    """Capture and replay on CPU through RecordingGraph; yields the log of runs: (program, 'run' or 'capture')."""
    log: list[tuple[hir.Program, str]] = []
    capturing = [False]

    @contextlib.contextmanager
    def graph(g: RecordingGraph, capture_error_mode: str = "global") -> Iterator[None]:
        assert capture_error_mode == "thread_local"
        capturing[0] = True
        yield
        capturing[0] = False

    original = hir.Program._run_once

    def run_once(self: hir.Program, *args: Any) -> Any:
        log.append((self, "capture" if capturing[0] else "run"))
        return original(self, *args)

    RecordingGraph.made.clear()
    monkeypatch.setattr(torch.cuda, "CUDAGraph", RecordingGraph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
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
    """tests/cuda_graph_driver.py on 2 GPUs: NCCL and copy-engine programs captured, 3 replays each."""
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
    assert len(cases) == len(CASES), output
    assert all(line.endswith(" OK") for line in cases), output
    assert result.returncode == 0, output


def test_an_op_failing_under_capture_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """An op that fails while capturing is reported at its position, also when ending the capture fails then."""
    program = lowered(CHAIN)
    launch = next(op for op in program.func.walk() if op.name == "hir.launch")

    @contextlib.contextmanager
    def graph(g: object, capture_error_mode: str = "global") -> Iterator[None]:
        try:
            yield
        finally:  # as torch's capture_end does after a failed capture
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture")

    def run_once(inputs: list[Any], outputs: list[Any], warm_up: bool) -> tuple[list[Any], list[Any]]:
        if not warm_up:
            raise LocatedError(launch, "failed at run time: operation not permitted when stream is capturing")
        return [], []

    monkeypatch.setattr(torch.cuda, "CUDAGraph", RecordingGraph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    with pytest.raises(LocatedError) as err:
        cuda_graph_mode.capture(program.func, run_once, [torch.zeros(2)], torch.device("cpu"))
    assert err.value.op is launch
    assert "'hir.launch' op cannot be captured in a CUDA graph: failed at run time: operation not permitted" in str(
        err.value
    )


# -- hir.compile(..., cuda_graph=True) ------------------------------------------------------------


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def test_compiled_function_captures_once(recorded_capture: list[tuple[hir.Program, str]]) -> None:
    """A parameter the compiled function reads in place stays the module's tensor, copied in at each replay."""
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(8, 32)
    compiled = hir.compile(block, (x,), ["[stream, serial]"], ["[stream, serial]"], cuda_graph=True)
    with torch.no_grad():
        first = compiled(x)
        torch.testing.assert_close(first, block(x))  # what the captured run computed
    assert runs_of(compiled.program, recorded_capture) == ["run", "capture"]
    compiled(torch.randn(8, 32))
    assert runs_of(compiled.program, recorded_capture) == ["run", "capture"]  # replayed
    (captured,) = compiled.program.graphs.values()
    assert captured.replays == 2
    state = [t for t in compiled._state.values()]
    assert {t.data_ptr() for t in state} == {block.fc.weight.data_ptr(), block.fc.bias.data_ptr()}
    assert not any(t is s for t in state for s in captured.static_inputs)


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
    assert all(any(t is s for s in captured.static_inputs) for t in compiled._state.values())

    on_gpu = Block().cuda()  # on the GPU: read in place, so an in-place update is seen by the next replay
    x = x.cuda()
    compiled = hir.compile(on_gpu, (x,), ["[stream, serial]"], ["[stream, serial]"], cuda_graph=True)
    with torch.no_grad():
        compiled(x)
        on_gpu.fc.weight.mul_(2.0)
        torch.testing.assert_close(compiled(x), on_gpu(x), rtol=1e-4, atol=1e-4)
