"""
`hir-ring-intermediates` in the stream-lowering pipeline: a chain of k stream-parallel ops over S
iterations with n streams allocates min(n, S)/S of the naive intermediate bytes (as counted by
`--memory-stats`), computes what the reference computes on random inputs, and passes the race
checker; a ring whose slots iterations on different streams share is a race the checker finds.
Also: `hir-run --memory-stats`, high-priority pool streams, and `join=chain`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from device_under_test import execute_lowered
from test_compare import hir_run

import hir
from hir.diagnostics import LocatedError
from hir.runtime.device import streams_for
from hir.runtime.memory_stats import MemoryStats
from hir.runtime.streams import CpuStreams

ROWS, COLS = 64, 32
cuda = pytest.mark.cuda
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
STREAM = "#fusion.parallel<[stream, serial]>"


def chain_module(k: int, rows: int = ROWS, chunks: int | None = None) -> str:
    """matmul -> relu -> matmul -> relu -> ... (k ops) over `rows` rows, stream-parallel on axis 0."""
    parallel = f"#fusion.parallel<[stream({chunks}), serial]>" if chunks else STREAM
    full = f"tensor<{rows}x{COLS}xf32, {parallel}>"
    lines = [f"func.func @main(%x: tensor<{rows}x{COLS}xf32>, %w: tensor<{COLS}x{COLS}xf32>) -> {full} {{"]
    value, value_type = "%x", f"tensor<{rows}x{COLS}xf32>"
    for n in range(k):
        if n % 2 == 0:
            lines.append(f"  %v{n} = fusion.matmul {value}, %w : {value_type}, tensor<{COLS}x{COLS}xf32> -> {full}")
        else:
            lines.append(f"  %v{n} = fusion.relu {value} : {value_type} -> {full}")
        value, value_type = f"%v{n}", full
    lines += [f"  func.return {value} : {full}", "}"]
    return "\n".join(lines)


def lowered(text: str, pipeline: str = "stream-lowering") -> hir.Program:
    return hir.compile_program(hir.run_pipeline(hir.parse(text), pipeline), race_check=True)


def inputs(rows: int = ROWS, seed: int = 0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(rows, COLS, generator=generator), torch.randn(COLS, COLS, generator=generator)]


def peak_bytes(program: hir.Program, args: list[torch.Tensor], num_streams: int) -> tuple[list, int]:
    stats = MemoryStats()
    outputs = program(args, num_streams=num_streams, memory_stats=stats)
    return outputs, stats.peak_bytes


# -- the target: n/S of the naive intermediate bytes, same numbers, no race -------------------------


@pytest.mark.parametrize(("k", "rows", "num_streams"), [(4, 64, 2), (4, 64, 4), (3, 16, 3), (2, 4, 8)])
def test_chain_intermediates_take_streams_over_iterations_of_the_naive_bytes(
    k: int, rows: int, num_streams: int
) -> None:
    text = chain_module(k, rows)
    args = inputs(rows)
    (expected,) = hir.execute(hir.parse(text), args)
    ring, ring_peak = peak_bytes(lowered(text), args, num_streams)
    whole, whole_peak = peak_bytes(lowered(text, "stream-lowering{intermediates=whole}"), args, num_streams)

    row_bytes = COLS * 4
    output_bytes = rows * row_bytes
    naive = (k - 1) * rows * row_bytes  # k - 1 intermediates, each allocated whole
    assert whole_peak == output_bytes + naive
    assert ring_peak - output_bytes == naive * min(num_streams, rows) // rows
    for got in (ring[0], whole[0]):
        torch.testing.assert_close(got, expected)
    assert expected.abs().sum() > 0  # random data, not a vacuous comparison


@pytest.mark.parametrize("num_streams", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("join", ["caller", "chain"])
def test_stream_chunks_ring_matches_reference_without_races(num_streams: int, join: str) -> None:
    text = chain_module(4, rows=32, chunks=8)
    args = inputs(32, seed=num_streams)
    (expected,) = hir.execute(hir.parse(text), args)
    pipeline = f"stream-lowering{{join={join}}}"
    (got,), peak = peak_bytes(lowered(text, pipeline), args, num_streams)
    torch.testing.assert_close(got, expected)
    chunk_bytes = 32 // 8 * COLS * 4
    assert peak == 32 * COLS * 4 + 3 * min(num_streams, 8) * chunk_bytes
    # On the test device (HIR_TEST_DEVICE=cuda: real streams, slowed), race-checked too.
    (on_device,) = execute_lowered(hir.run_pipeline(hir.parse(text), pipeline), args, num_streams=num_streams)
    torch.testing.assert_close(on_device, expected)


@cuda
@needs_cuda
@pytest.mark.parametrize("num_streams", [2, 3])
def test_ring_on_slowed_cuda_streams(num_streams: int) -> None:
    """Iteration i + n reuses iteration i's slot on the same CUDA stream: right while the streams are slowed."""
    text = chain_module(6, rows=48)
    args = inputs(48, seed=7)
    (expected,) = hir.execute(hir.parse(text), args)
    module = hir.run_pipeline(hir.parse(text), "stream-lowering")
    (got,) = execute_lowered(module, args, num_streams=num_streams, device_name="cuda")
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-3)
    program = hir.compile_program(module)
    cpu_peak = peak_bytes(program, args, num_streams)[1]
    assert peak_bytes(program, [t.cuda() for t in args], num_streams)[1] == cpu_peak


@cuda
@needs_cuda
def test_high_priority_cuda_pool_stream() -> None:
    streams = streams_for(torch.device("cuda"))
    high, normal = streams.pool(5, high_priority=True), streams.pool(5)
    assert high is not normal
    assert high is streams.pool(5, high_priority=True)
    assert high.priority < normal.priority  # CUDA: a lower number is a higher priority


def test_ring_ir_has_one_slot_per_stream() -> None:
    text = hir.run_pipeline(hir.parse(chain_module(4)), "stream-lowering").__str__()
    assert text.count("hir.allocate(%slots) : memref<?x32xf32>") == 3
    assert text.count("hir.allocate() : memref<64x32xf32>") == 1  # the returned value stays whole


def test_race_checker_finds_a_ring_shared_across_streams() -> None:
    """The same program with every iteration in slot 0: iterations on different streams race."""
    text = str(hir.run_pipeline(hir.parse(chain_module(2)), "stream-lowering"))
    slot = re.search(r"(%\w+) = hir.allocate\(%slots\)", text)
    assert slot is not None
    index = re.search(rf"hir.alias_select {slot.group(1)}\[(%\w+)\]", text)
    assert index is not None
    broken = text.replace(f"{slot.group(1)}[{index.group(1)}]", f"{slot.group(1)}[%c0]")
    assert broken != text
    program = hir.compile_program(hir.parse(broken), race_check=True)
    with pytest.raises(LocatedError, match="race"):
        program(inputs(), num_streams=2)
    program(inputs(), num_streams=1)  # one stream: in order, no race


# -- hir-run --memory-stats ---------------------------------------------------------------------------


def test_hir_run_memory_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chain.mlir"
    path.write_text(chain_module(4))
    code, out, err = hir_run(capsys, path, "--check", "--memory-stats", "--num-streams", "2", "--device", "cpu")
    assert code == 0, err
    assert f"peak allocated bytes: {ROWS * COLS * 4 + 3 * 2 * COLS * 4}\n" in out
    assert "check: OK" in out
    pipeline = "stream-lowering{intermediates=whole}"
    code, out, err = hir_run(capsys, path, "--check", "--memory-stats", "-p", pipeline, "--device", "cpu")
    assert code == 0, err
    assert f"peak allocated bytes: {4 * ROWS * COLS * 4}\n" in out


def test_hir_run_memory_stats_needs_a_hir_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chain.mlir"
    path.write_text(chain_module(2))
    code, _, err = hir_run(capsys, path, "--memory-stats", "--device", "cpu")
    assert code == 1
    assert err == (
        "hir-run: error: --memory-stats counts the buffers of hir.allocate: run a hir module, "
        "or add --check to lower this one\n"
    )


def test_memory_stats_refuse_cuda_graph_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A replay allocates nothing, so there would be no bytes to count: refused before anything runs.
    path = tmp_path / "chain.mlir"
    path.write_text(chain_module(2))
    code, _, err = hir_run(capsys, path, "--check", "--memory-stats", "--cuda-graph", "--device", "cpu")
    assert code == 1
    assert err == (
        "hir-run: error: --memory-stats counts the hir.allocate buffers of a plain run, and a CUDA graph "
        "replay allocates nothing: leave out --cuda-graph to measure them\n"
    )
    from hir.runtime.memory_stats import MemoryStats

    program = hir.compile_program(hir.run_pipeline(hir.parse(chain_module(2)), "stream-lowering"))
    inputs = [torch.randn(t.get_shape()) for t in program.input_types]
    with pytest.raises(LocatedError, match="a CUDA graph replay allocates nothing"):
        program(inputs, device="cpu", cuda_graph=True, memory_stats=MemoryStats())


def test_memory_stats_count_deallocate_and_reallocation() -> None:
    module = hir.parse("""
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %a = hir.allocate() : memref<16xf32>
  hir.deallocate %a : memref<16xf32>
  hir.for %i = %c0 to %c3 step %c1 {
    %b = hir.allocate() : memref<8xf32>
  }
  %out = hir.allocate() : memref<4xf32>
  hir.launch ins(%y = %x : memref<4xf32>) outs(%out : memref<4xf32>) {
    %z = fusion.neg %y : tensor<4xf32> -> tensor<4xf32>
    hir.yield %z : tensor<4xf32>
  }
  func.return %out : memref<4xf32>
}
""")
    stats = MemoryStats()
    program = hir.compile_program(module)
    program([torch.randn(4)], memory_stats=stats)
    assert stats.peak_bytes == 64  # %a alone; then one %b (32 bytes) at a time, plus %out (16)
    assert stats.live_bytes == 32 + 16
    program([torch.randn(4)], outputs=[torch.empty(4)], memory_stats=stats)
    assert stats.live_bytes == 32  # a preallocated output is the caller's memory


# -- stream priorities --------------------------------------------------------------------------------


def test_high_priority_pool_stream_is_another_stream() -> None:
    streams = CpuStreams()
    assert streams.pool(3) == streams.pool(3)
    assert streams.pool(3, high_priority=True) != streams.pool(3)


def test_race_checker_tells_a_high_priority_stream_from_the_normal_one() -> None:
    """Writing on `hir.stream %k high_priority` and reading on `hir.stream %k` without a sync is a race."""
    template = """
func.func @main(%x: memref<8xf32>) -> memref<8xf32> {{
  %c1 = arith.constant 1 : index
  %main = hir.get_current_stream
  %hi = hir.stream %c1 high_priority
  %lo = hir.stream %c1
  %t = hir.allocate() : memref<8xf32>
  %out = hir.allocate() : memref<8xf32>
  hir.set_current_stream %hi
  hir.synchronize %main
  hir.launch ins(%a = %x : memref<8xf32>) outs(%t : memref<8xf32>) {{
    %r = fusion.relu %a : tensor<8xf32> -> tensor<8xf32>
    hir.yield %r : tensor<8xf32>
  }}
  hir.set_current_stream %lo
  hir.synchronize %main
  {sync}
  hir.launch ins(%b = %t : memref<8xf32>) outs(%out : memref<8xf32>) {{
    %m = fusion.neg %b : tensor<8xf32> -> tensor<8xf32>
    hir.yield %m : tensor<8xf32>
  }}
  hir.set_current_stream %main
  hir.synchronize %lo
  hir.synchronize %hi
  func.return %out : memref<8xf32>
}}
"""
    x = torch.randn(8)
    racy = hir.compile_program(hir.parse(template.format(sync="")), race_check=True)
    with pytest.raises(LocatedError, match="race"):
        racy([x])
    ordered = hir.compile_program(hir.parse(template.format(sync="hir.synchronize %hi")), race_check=True)
    (out,) = ordered([x])
    torch.testing.assert_close(out, -torch.relu(x))


# -- join=chain ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_streams", [1, 2, 5])
def test_join_chain_joins_every_worker_into_the_caller(num_streams: int) -> None:
    """The caller's stream has waited for all work when the program returns (the race checker's exit rule)."""
    text = chain_module(3, rows=8)
    args = inputs(8, seed=1)
    (expected,) = hir.execute(hir.parse(text), args)
    for intermediates in ("ring", "whole"):
        pipeline = f"stream-lowering{{join=chain intermediates={intermediates}}}"
        (got,) = lowered(text, pipeline)(args, num_streams=num_streams)
        torch.testing.assert_close(got, expected)
    unjoined = str(hir.run_pipeline(hir.parse(text), "stream-lowering{join=chain}")).replace(
        "hir.synchronize %s_last", ""
    )
    with pytest.raises(LocatedError, match="race"):
        hir.compile_program(hir.parse(unjoined), race_check=True)(args, num_streams=num_streams)
