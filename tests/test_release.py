"""
runtime/release.py: a one-stream function's values are released after their last use, so that a
buffer's memory goes back to the allocator as eager torch's would; a buffer read through a view
stays until the view's last use, a returned one stays, and a function on several streams keeps
its buffers to the end of the run.
"""

from __future__ import annotations

import copy

import pytest
import torch

import hir
from hir.runtime.memory_stats import MemoryStats
from hir.runtime.release import runs_on_one_stream

# A buffer of 4x8xf32 (128 bytes) whose row 1 is read through a view after two more buffers are
# made: it stays live until that read, so three buffers (128 + 128 + 32 bytes) are live at once.
VIEWED = """
func.func @main(%x: memref<4x8xf32>) -> memref<8xf32> {
  %a = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%x_1 = %x : memref<4x8xf32>) outs(%a : memref<4x8xf32>) {
    %r = fusion.relu %x_1 : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %r : tensor<4x8xf32>
  }
  %c1 = arith.constant 1 : index
  %row = hir.alias_select %a[%c1] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  %b = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%x_2 = %x : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
    %n = fusion.neg %x_2 : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %n : tensor<4x8xf32>
  }
  %c2 = arith.constant 2 : index
  %brow = hir.alias_select %b[%c2] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  %out = hir.allocate() : memref<8xf32>
  hir.launch ins(%r_1 = %row, %b_1 = %brow : memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32>) {
    %s = fusion.add %r_1, %b_1 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    hir.yield %s : tensor<8xf32>
  }
  func.return %out : memref<8xf32>
}
"""


def chain(k: int, layout: str = "") -> str:
    """k matmuls of 16x16xf32 (1024 bytes each), the first one's result read again by the last."""
    t = f"tensor<16x16xf32{layout}>"
    lines = [f"func.func @main(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>) -> {t} {{"]
    value, value_type = "%x", "tensor<16x16xf32>"
    for n in range(k):
        rhs, rhs_type = ("%v0", t) if n == k - 1 else ("%w", "tensor<16x16xf32>")
        lines.append(f"  %v{n} = fusion.matmul {value}, {rhs} : {value_type}, {rhs_type} -> {t}")
        value, value_type = f"%v{n}", t
    return "\n".join([*lines, f"  func.return {value} : {t}", "}"])


def reference(k: int, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    values = [x @ w]
    for _ in range(k - 2):
        values.append(values[-1] @ w)
    return values[-1] @ values[0]


def run(program: hir.Program, args: list[torch.Tensor], **options: object) -> tuple[list, int]:
    stats = MemoryStats()
    outputs = program(args, memory_stats=stats, **options)
    return outputs, stats.peak_bytes


def test_a_buffer_read_through_a_view_stays_until_the_views_last_use() -> None:
    program = hir.compile_program(hir.parse(VIEWED))
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    (out,), peak = run(program, [x])
    torch.testing.assert_close(out, x[1].relu() - x[2])
    assert peak == 128 + 128 + 32


@pytest.mark.parametrize("k", [3, 6])
def test_a_chain_on_one_stream_holds_three_buffers_at_once(k: int) -> None:
    module = hir.run_pipeline(hir.parse(chain(k)), "stream-lowering")
    program = hir.compile_program(module)
    assert runs_on_one_stream(program.func)
    generator = torch.Generator().manual_seed(k)
    x, w = torch.randn(16, 16, generator=generator) / 4, torch.randn(16, 16, generator=generator) / 4
    for _ in range(2):  # a second run releases as the first did
        (out,), peak = run(program, [x, w])
        torch.testing.assert_close(out, reference(k, x, w))
        assert peak == 3 * 1024  # the first result (read last), the one read and the one written


def test_a_function_on_several_streams_keeps_its_buffers() -> None:
    # Rows in stream chunks: pool streams may still read a buffer when the host is done with it,
    # and the caching allocator would hand its memory to the caller's stream at once.
    module = hir.run_pipeline(hir.parse(chain(3, ", #fusion.parallel<[stream(2), serial]>")), "stream-lowering")
    program = hir.compile_program(module)
    assert not runs_on_one_stream(program.func)
    x, w = torch.randn(16, 16), torch.randn(16, 16) / 4
    (out,), peak = run(program, [x, w], num_streams=2)
    torch.testing.assert_close(out, reference(3, x, w))
    kept_to_the_end = hir.compile_program(module, race_check=True)  # a race-checked run releases nothing
    assert peak == run(kept_to_the_end, [x, w], num_streams=2)[1]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("cuda_graph", [False, True], ids=["eager", "replayed"])
def test_a_compiled_blocks_memory_is_eagers_on_a_gpu(cuda_graph: bool) -> None:
    """
    Eight Linear + GELU layers (16 MiB per intermediate) as written, one stream: a run's peak is
    eager's (each intermediate freed after its last use), and a graph's pool, made at the capture,
    holds what a run holds at its peak, not all 16 intermediates (256 MiB).
    """
    torch.manual_seed(0)
    layers = [m for _ in range(8) for m in (torch.nn.Linear(1024, 1024), torch.nn.GELU())]
    model = torch.nn.Sequential(*layers).cuda().eval()
    x = torch.randn(4096, 1024, device="cuda")

    def allocated_by(fn: object) -> tuple[int, int]:
        """Memory held after three calls (a graph's pool among it) and the peak above it during a fourth."""
        with torch.no_grad():
            for _ in range(3):
                fn(x)  # type: ignore[operator]
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            fn(x)  # type: ignore[operator]
            torch.cuda.synchronize()
        return held, torch.cuda.max_memory_allocated() - held

    start = torch.cuda.memory_allocated()
    eager_held, eager_peak = allocated_by(model)
    twin = copy.deepcopy(model)
    weights = sum(p.numel() * p.element_size() for p in twin.parameters())
    compiled = hir.compile(twin, (x,), cuda_graph=cuda_graph, measure_candidates=False)
    held, peak = allocated_by(compiled)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-3, atol=1e-3)
    if cuda_graph:  # the graph's pool: its input and output buffers, and the intermediates live at once
        graph_pool = held - eager_held - weights
        assert start <= eager_held
        assert graph_pool <= 8 * (16 << 20), (graph_pool >> 20, eager_peak >> 20)
    else:
        assert peak <= eager_peak + (16 << 20), (peak >> 20, eager_peak >> 20)
