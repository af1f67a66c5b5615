"""
`hir.stream_for` runs as it is and after `hir-expand-stream-loops` with the same results (the
FileCheck inputs of the pass, and stream-lowering's programs before the expansion, for 1 to 8
streams) and the same stream calls, in the same order.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp

import hir
from hir.dialects import hir as hir_dialect
from hir.runtime.inputs import random_inputs
from hir.runtime.streams import CpuStreams, Stream

LIT = Path(__file__).resolve().parent / "lit"
NUM_STREAMS = (1, 2, 3, 8)


def functions_on_buffers(path: Path) -> list[tuple[str, str]]:
    """(file, function) of every function with only memref arguments and a hir.stream_for."""
    found = []
    for op in hir.parse_file(path).walk():
        if not isinstance(op, func.FuncOp):
            continue
        buffers_only = all(isinstance(t, MemRefType) for t in op.function_type.inputs.data)
        if buffers_only and any(isinstance(inner, hir_dialect.StreamForOp) for inner in op.walk()):
            found.append((str(path.relative_to(LIT)), op.sym_name.data))
    return found


def run(module: ModuleOp, entry: str, inputs: list[torch.Tensor], num_streams: int) -> list[torch.Tensor]:
    """The outputs, then the arguments as the program left them (the programs write in place)."""
    arguments = [x.clone() for x in inputs]
    return [*hir.execute(module, arguments, entry=entry, num_streams=num_streams), *arguments]


CASES = functions_on_buffers(LIT / "passes" / "hir-expand-stream-loops" / "expand.mlir")


def test_cases_found() -> None:
    assert len(CASES) >= 3


@pytest.mark.parametrize("num_streams", NUM_STREAMS)
@pytest.mark.parametrize(("file", "entry"), CASES)
def test_expansion_keeps_results(file: str, entry: str, num_streams: int) -> None:
    text = (LIT / file).read_text()
    module = hir.parse(text)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    inputs = random_inputs(function.function_type.inputs.data, seed=num_streams)
    expanded = hir.run_pipeline(hir.parse(text), "hir-expand-stream-loops")
    assert not any(isinstance(op, hir_dialect.StreamForOp) for op in expanded.walk())
    before = run(module, entry, inputs, num_streams)
    after = run(expanded, entry, inputs, num_streams)
    assert len(after) == len(before)
    for got, want in zip(after, before):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    if any(isinstance(op, hir_dialect.LaunchOp) for op in function.walk()):  # not a vacuous comparison
        assert any(not torch.equal(x, y) for x, y in zip(inputs, before[-len(inputs) :]))


class RecordingStreams(CpuStreams):
    """CPU streams that log every call of the `Streams` protocol."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def current(self) -> Stream:
        self.calls.append(("current", None))
        return "caller"

    def set_current(self, stream: Stream) -> None:
        self.calls.append(("set_current", stream))

    def pool(self, index: int) -> Stream:
        self.calls.append(("pool", index))
        return f"pool {index}"

    def wait_for(self, stream: Stream) -> None:
        self.calls.append(("wait_for", stream))


@pytest.mark.parametrize("num_streams", [1, 3])
@pytest.mark.parametrize(("file", "entry"), CASES)
def test_expansion_makes_the_same_stream_calls(file: str, entry: str, num_streams: int) -> None:
    text = (LIT / file).read_text()
    module = hir.parse(text)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    inputs = random_inputs(function.function_type.inputs.data, seed=0)
    logs = []
    for program in (module, hir.run_pipeline(hir.parse(text), "hir-expand-stream-loops")):
        streams = RecordingStreams()
        hir.compile_program(program, entry)(inputs, num_streams=num_streams, streams=streams)
        logs.append(streams.calls)
    assert logs[0] == logs[1]
    loops = [op for op in function.walk() if isinstance(op, hir_dialect.StreamForOp)]
    if all(loop.single_iteration() is not None for loop in loops):  # run on the caller's stream
        workers = {("pool", loop.single_iteration() % num_streams) for loop in loops}  # type: ignore[operator]
        assert not workers & set(logs[0]), f"a loop of one iteration used a worker stream: {logs[0]}"
        return
    first_work = next(k for k, call in enumerate(logs[0]) if call == ("set_current", "caller"))
    forks = [call for call in logs[0][:first_work] if call == ("wait_for", "caller")]
    assert forks, "no fork before the first join"


@pytest.mark.parametrize("num_streams", NUM_STREAMS)
@pytest.mark.parametrize(
    "pipeline",
    [
        "fusion-segment,convert-fusion-to-hir,hir-loop-fusion",
        "fusion-segment,convert-fusion-to-hir,hir-loop-fusion,hir-expand-stream-loops",
    ],
)
def test_lowered_before_and_after_expansion(pipeline: str, num_streams: int) -> None:
    """A chain of stream-parallel ops, lowered up to the loops or all the way, equals the reference."""
    text = (LIT / "passes" / "stream-lowering" / "two_sets.mlir").read_text()
    reference = hir.parse(text)
    function = next(op for op in reference.walk() if isinstance(op, func.FuncOp))
    inputs = random_inputs(function.function_type.inputs.data, seed=1)
    lowered = hir.run_pipeline(hir.parse(text), pipeline)
    loops = sum(isinstance(op, hir_dialect.StreamForOp) for op in lowered.walk())
    assert loops == (0 if pipeline.endswith("expand-stream-loops") else 1)
    expected = hir.execute(reference, inputs, entry=function.sym_name.data)
    actual = hir.execute(lowered, inputs, entry=function.sym_name.data, num_streams=num_streams)
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got, want)
