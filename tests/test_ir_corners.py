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
