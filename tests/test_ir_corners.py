"""
Hand-written IR at the corners of stream lowering, each lowered with several pipelines and run
with 1 to 3 streams (race-checked) against eager torch on random inputs: shapes the fuzzers
rarely draw (more chunks than rows, uneven chunks of an axis an op makes), programs whose ops read
one value on two stream axes under every segmentation policy, and the outputs that alias inputs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import hir

PIPELINES = (
    "stream-lowering",
    "stream-lowering{policy=resharding-only intermediates=whole join=chain}",
    "stream-lowering{policy=contractions-with-epilogues}",
    "fusion-segment{policy=contractions-standalone},convert-fusion-to-hir,hir-loop-fusion",
)


def t(shape: str, par: str | None = None, elt: str = "f32") -> str:
    return f"tensor<{shape}x{elt}>" if par is None else f"tensor<{shape}x{elt}, #fusion.parallel<[{par}]>>"


S2 = t("5x3", "stream(2), serial")
TT = t("4x4", "stream, serial")
HUGE = t("4x3", "stream(9223372036854775807), serial")

CASES: dict[str, tuple[str, Callable[..., object], list[torch.Tensor]]] = {
    # add(permute(%a), %a): %a read on axis 1 and on axis 0, so two loops, under every policy.
    "transpose_plus_self": (
        f"""func.func @main(%x: tensor<4x4xf32>) -> {TT} {{
  %a = fusion.exp %x : tensor<4x4xf32> -> {TT}
  %p = fusion.permute %a perm = [1, 0] : {TT} -> {TT}
  %b = fusion.add %p, %a : {TT}, {TT} -> {TT}
  func.return %b : {TT}
}}""",
        lambda x: x.exp().t() + x.exp(),
        [torch.randn(4, 4)],
    ),
    # stream(N) far above the extent: one iteration per row.
    "more_chunks_than_rows": (
        f"""func.func @main(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> {HUGE} {{
  %a = fusion.mul %x, %y : tensor<4x3xf32>, tensor<4x3xf32> -> {HUGE}
  %b = fusion.tanh %a : {HUGE} -> {HUGE}
  func.return %b : {HUGE}
}}""",
        lambda x, y: torch.tanh(x * y),
        [torch.randn(4, 3), torch.randn(4, 3)],
    ),
    # A broadcast's new axis and a full in chunks of 3 and 2 rows: made whole, consumed by chunks.
    "made_axes_uneven": (
        f"""func.func @main(%x: tensor<3xf32>, %y: tensor<5x3xf32>) -> ({S2}, {S2}) {{
  %b = fusion.broadcast %x dims = [0] : tensor<3xf32> -> {S2}
  %c = fusion.mul %b, %y : {S2}, tensor<5x3xf32> -> {S2}
  %f = fusion.full -1.5 : {S2}
  func.return %c, %f : {S2}, {S2}
}}""",
        lambda x, y: (x * y, torch.full((5, 3), -1.5)),
        [torch.randn(3), torch.randn(5, 3)],
    ),
    # An input returned as it is and twice, next to a streamed result returned twice.
    "aliased_outputs": (
        f"""func.func @main(%x: tensor<5x3xf32>, %unused: tensor<2xi64>) -> (tensor<5x3xf32>, {S2}, {S2}, tensor<5x3xf32>) {{
  %e = fusion.exp %x : tensor<5x3xf32> -> {S2}
  func.return %x, %e, %e, %x : tensor<5x3xf32>, {S2}, {S2}, tensor<5x3xf32>
}}""",
        lambda x, unused: (x, x.exp(), x.exp(), x),
        [torch.randn(5, 3), torch.tensor([3, 4])],
    ),
    # Integer and boolean values through uneven chunks, and a scalar.
    "int_bool_scalar": (
        f"""func.func @main(%a: tensor<5x3xi64>, %m: tensor<5x3xi1>, %s: tensor<f32>) -> ({t("5x3", "stream(2), serial", "i64")}, tensor<f32>) {{
  %z = fusion.full 0 : tensor<5x3xi64>
  %w = fusion.where %m, %a, %z : tensor<5x3xi1>, tensor<5x3xi64>, tensor<5x3xi64> -> {t("5x3", "stream(2), serial", "i64")}
  %d = fusion.add %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  func.return %w, %d : {t("5x3", "stream(2), serial", "i64")}, tensor<f32>
}}""",
        lambda a, m, s: (torch.where(m, a, 0), s + s),
        [torch.randint(-5, 6, (5, 3)), torch.rand(5, 3) > 0.5, torch.randn(())],
    ),
    # nvFuser's HostIrIntegrationTest.Sum_Kernel on symbolic extents, streamed in chunks.
    "nvfuser_sum_kernel": (
        f"""func.func @main(%x: tensor<?x?xf32>) -> ({t("?", "stream(2)")}, tensor<?x?xf32>) {{
  %y = fusion.sum %x dims = [0] : tensor<?x?xf32> -> {t("?", "stream(2)")}
  %z = fusion.set %x : tensor<?x?xf32> -> tensor<?x?xf32>
  func.return %y, %z : {t("?", "stream(2)")}, tensor<?x?xf32>
}}""",
        lambda x: (x.sum(0), x),
        [torch.randn(2, 3)],
    ),
    # ...ViewPermute_ExprEval: a reshape then a permute of an input, streamed on the permuted axis.
    "nvfuser_view_permute": (
        f"""func.func @main(%x: tensor<2x3x4xf32>) -> {t("12x2", "serial, stream")} {{
  %r = fusion.reshape %x : tensor<2x3x4xf32> -> tensor<2x12xf32>
  %p = fusion.permute %r perm = [1, 0] : tensor<2x12xf32> -> {t("12x2", "serial, stream")}
  func.return %p : {t("12x2", "serial, stream")}
}}""",
        lambda x: x.reshape(2, 12).t(),
        [torch.randn(2, 3, 4)],
    ),
    # ...InsertDeallocations (f64 chain in chunks) and ExcludeOutputsFromDeallocations (an
    # intermediate that is also an output, read by a matmul).
    "nvfuser_deallocations": (
        f"""func.func @main(%x: tensor<8x8xf64>) -> ({t("8x8", "stream(4), serial", "f64")}, tensor<8x8xf64>, tensor<8x8xf64>) {{
  %t0 = fusion.add %x, %x : tensor<8x8xf64>, tensor<8x8xf64> -> tensor<8x8xf64>
  %t2 = fusion.add %t0, %t0 : tensor<8x8xf64>, tensor<8x8xf64> -> {t("8x8", "stream(4), serial", "f64")}
  %t4 = fusion.sin %t2 : {t("8x8", "stream(4), serial", "f64")} -> {t("8x8", "stream(4), serial", "f64")}
  %o = fusion.add %t4, %t4 : {t("8x8", "stream(4), serial", "f64")}, {t("8x8", "stream(4), serial", "f64")} -> {t("8x8", "stream(4), serial", "f64")}
  %m = fusion.matmul %t0, %t0 : tensor<8x8xf64>, tensor<8x8xf64> -> tensor<8x8xf64>
  func.return %o, %t0, %m : {t("8x8", "stream(4), serial", "f64")}, tensor<8x8xf64>, tensor<8x8xf64>
}}""",
        lambda x: (torch.sin(4 * x) * 2, 2 * x, (2 * x) @ (2 * x)),
        [torch.randn(8, 8, dtype=torch.float64)],
    ),
    # ...TensorAndScalarInputs: (x + s0) * s1 with rank-0 integer scalars.
    "nvfuser_tensor_and_scalars": (
        f"""func.func @main(%x: tensor<3x4xi64>, %s0: tensor<i64>, %s1: tensor<i64>) -> {t("3x4", "stream(2), serial", "i64")} {{
  %b0 = fusion.broadcast %s0 dims = [0, 1] : tensor<i64> -> tensor<3x4xi64>
  %b1 = fusion.broadcast %s1 dims = [0, 1] : tensor<i64> -> tensor<3x4xi64>
  %a = fusion.add %x, %b0 : tensor<3x4xi64>, tensor<3x4xi64> -> tensor<3x4xi64>
  %m = fusion.mul %a, %b1 : tensor<3x4xi64>, tensor<3x4xi64> -> {t("3x4", "stream(2), serial", "i64")}
  func.return %m : {t("3x4", "stream(2), serial", "i64")}
}}""",
        lambda x, s0, s1: (x + s0) * s1,
        [torch.randint(1, 10, (3, 4)), torch.tensor(2), torch.tensor(3)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_corner_matches_torch(name: str) -> None:
    text, reference, inputs = CASES[name]
    expected = reference(*inputs)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    assert [type(r) for r in expected] == [torch.Tensor] * len(expected)
    for pipeline in PIPELINES:
        lowered = hir.run_pipeline(hir.parse(text), pipeline)
        program = hir.compile_program(lowered, race_check=True)
        for num_streams in (1, 2, 3):
            given = [x.clone() for x in inputs]
            results = program(given, num_streams=num_streams)
            assert len(results) == len(expected), pipeline
            for got, want in zip(results, expected):
                torch.testing.assert_close(
                    got, want, msg=lambda m, p=pipeline, n=num_streams: f"{p} ({n} streams): {m}"
                )
            assert all(torch.equal(a, b) for a, b in zip(given, inputs)), f"{pipeline} wrote an input"


def test_nvfuser_host_ir_jit_allocations() -> None:
    """
    nvFuser's HostIrJitTest.DynamicSizedTensorAllocate (an allocation sized by an input's extent)
    and BroadcastTest (outputs that are allocations alone, one with an extent-1 axis), as hir.
    """
    module = hir.parse(
        """func.func @main(%x: memref<?x32xf32>) -> (memref<?x32xf32>, memref<64x1x32xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  %o = hir.allocate(%n) : memref<?x32xf32>
  hir.launch ins(%a = %x : memref<?x32xf32>) outs(%o : memref<?x32xf32>) {
    %e = fusion.exp %a : tensor<?x32xf32> -> tensor<?x32xf32>
    hir.yield %e : tensor<?x32xf32>
  }
  %b = hir.allocate() : memref<64x1x32xf32>
  func.return %o, %b : memref<?x32xf32>, memref<64x1x32xf32>
}"""
    )
    x = torch.randn(64, 32)
    out, empty = hir.execute(module, [x])
    torch.testing.assert_close(out, x.exp())
    assert out.stride() == (32, 1)
    assert empty.shape == (64, 1, 32)
