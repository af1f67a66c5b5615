"""
With fusion-segment's `gemm-epilogues` policy, a residual add of a GEMM's result runs inside the
GEMM's launch as one `addmm` (runtime/residual_gemm.py): the results equal
eager torch's on random data, through `hir.compile` and through the lowered program with a
preallocated strided output, and poisoned fresh buffers show that nothing is read before it is
written.
"""

from __future__ import annotations

import pytest
import torch

import hir
from hir.runtime import poison


class Projection(torch.nn.Module):
    """x + o(h), as an attention block's output projection."""

    def __init__(self) -> None:
        super().__init__()
        self.o = torch.nn.Linear(16, 16, bias=False)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return x + self.o(h.transpose(1, 2).reshape(x.shape))


def launches(module: object) -> list[list[str]]:
    """The ops of each `hir.launch` body, in program order."""
    return [
        [o.name for o in op.body.block.ops if o.name != "hir.yield"]
        for op in module.walk()  # type: ignore[attr-defined]
        if op.name == "hir.launch"
    ]


def test_the_default_policy_keeps_the_add_single() -> None:
    block = Projection()
    x, h = torch.randn(2, 8, 16), torch.randn(2, 4, 8, 4)
    compiled = hir.compile(block, (x, h), policy="standalone-host-ops")  # fusion-segment's default
    assert ["fusion.add"] in launches(compiled.module)


def test_a_plain_program_runs_the_add_in_the_gemm_launch_by_default() -> None:
    # hir.compile segments a program without layouts with `contractions-with-epilogues`.
    torch.manual_seed(0)
    block = Projection()
    x, h = torch.randn(2, 8, 16), torch.randn(2, 4, 8, 4)
    compiled = hir.compile(block, (x, h))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, h), block(x, h))
    assert ["fusion.permute", "fusion.reshape", "fusion.linear", "fusion.add"] in launches(compiled.module)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_precision_residual_rounds_as_eager(dtype: torch.dtype) -> None:
    # In the GEMM's addmm the sum would be rounded once, eager's twice: a half type's add stays apart.
    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x @ w + 1.5)

    x, w = torch.randn(8, 16, dtype=dtype), torch.randn(16, 16, dtype=dtype)
    compiled = hir.compile(f, (x, w))
    assert torch.equal(compiled(x, w), f(x, w))


def test_the_residual_add_runs_in_the_gemm_launch() -> None:
    torch.manual_seed(0)
    block = Projection()
    x, h = torch.randn(2, 8, 16), torch.randn(2, 4, 8, 4)
    compiled = hir.compile(block, (x, h), pipeline="stream-lowering{policy=gemm-epilogues}")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, h), block(x, h))
    assert ["fusion.permute", "fusion.reshape", "fusion.linear", "fusion.add"] in launches(compiled.module)
    assert ["fusion.add"] not in launches(compiled.module)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "transposed"])
def test_matmul_into_a_preallocated_output(strided: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """`r + a @ w` into the caller's output, also a transposed view; fresh buffers poisoned."""
    monkeypatch.setenv("HIR_POISON", "1")
    assert poison.enabled()
    module = hir.parse(
        """
        func.func @main(%a: tensor<8x16xf32>, %w: tensor<16x12xf32>, %r: tensor<8x12xf32>) -> tensor<8x12xf32> {
          %y = fusion.matmul %a, %w : tensor<8x16xf32>, tensor<16x12xf32> -> tensor<8x12xf32>
          %s = fusion.add %r, %y : tensor<8x12xf32>, tensor<8x12xf32> -> tensor<8x12xf32>
          func.return %s : tensor<8x12xf32>
        }
        """,
        "<residual>",
    )
    hir.run_pipeline(module, "stream-lowering{policy=gemm-epilogues}")
    assert launches(module) == [["fusion.matmul", "fusion.add"]]
    program = hir.compile_program(module)
    torch.manual_seed(1)
    a, w, r = torch.randn(8, 16), torch.randn(16, 12), torch.randn(8, 12)
    out = torch.full((12, 8), float("nan")).t() if strided else torch.full((8, 12), float("nan"))
    (result,) = program([a, w, r], outputs=[out])
    assert result is out
    torch.testing.assert_close(out, r + a @ w)
