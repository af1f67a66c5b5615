"""
Constants inside a launch (`fusion.full`, `fusion.iota`) are made at the first run on each device
and kept (runtime/fusion_ops.py): later runs make none, and no launch adopts a kept constant as
its destination, so a caller that writes a result, or the next run, never changes it.
"""

from __future__ import annotations

import pytest
import torch

import hir

PROGRAM = """
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %c = fusion.full 2.000000e+00 : tensor<f32>
  %cb = fusion.broadcast %c dims = [0, 1] : tensor<f32> -> tensor<4x8xf32>
  %y = fusion.mul %x, %cb : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %i = fusion.iota dim = 0 : tensor<8xf32>
  %r = fusion.reshape %i : tensor<8xf32> -> tensor<8xf32>
  func.return %y, %r : tensor<4x8xf32>, tensor<8xf32>
}
"""


def test_a_constant_is_made_once_and_a_written_result_does_not_reach_it(monkeypatch: pytest.MonkeyPatch) -> None:
    program = hir.compile_program(hir.run_pipeline(hir.parse(PROGRAM), "stream-lowering"))
    x, positions = torch.randn(4, 8), torch.arange(8.0)
    doubled, counted = program([x])
    torch.testing.assert_close(doubled, x * 2)
    torch.testing.assert_close(counted, positions)
    counted.add_(100)  # the caller writes a result whose launch ended in a view of the iota
    doubled.zero_()
    made: list[str] = []
    for name in ("full", "arange"):
        real = getattr(torch, name)
        monkeypatch.setattr(
            torch, name, lambda *a, _real=real, _name=name, **k: (made.append(_name), _real(*a, **k))[1]
        )
    doubled, counted = program([x])
    assert made == []  # the second run made no constant
    torch.testing.assert_close(doubled, x * 2)
    torch.testing.assert_close(counted, positions)  # the second run made no constant


def test_a_constant_at_the_fusion_level_is_made_at_every_run() -> None:
    """Unlowered, the constant is the caller's result itself: each run makes its own."""
    text = "func.func @main() -> tensor<3xf32> {\n  %c = fusion.full 1.500000e+00 : tensor<3xf32>\n  func.return %c : tensor<3xf32>\n}\n"
    program = hir.compile_program(hir.parse(text))
    (first,) = program([])
    first.zero_()
    (second,) = program([])
    torch.testing.assert_close(second, torch.full((3,), 1.5))


def test_a_large_constant_is_made_at_every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond KEPT_ELEMENTS a kept constant would hold its memory as long as the program lives."""
    from hir.runtime.fusion_ops import KEPT_ELEMENTS

    n = KEPT_ELEMENTS * 2
    text = f"""
func.func @main(%x: tensor<2x{n // 2}xf32>) -> tensor<2x{n // 2}xf32> {{
  %z = fusion.full 3.000000e+00 : tensor<{n}xf32>
  %r = fusion.reshape %z : tensor<{n}xf32> -> tensor<2x{n // 2}xf32>
  %y = fusion.add %x, %r : tensor<2x{n // 2}xf32>, tensor<2x{n // 2}xf32> -> tensor<2x{n // 2}xf32>
  func.return %y : tensor<2x{n // 2}xf32>
}}
"""
    lowered = hir.run_pipeline(hir.parse(text), "stream-lowering")
    launch = next(op for op in lowered.walk() if op.name == "hir.launch")
    assert [op.name for op in launch.body.block.ops][:2] == ["fusion.full", "fusion.reshape"]  # made in the body
    program = hir.compile_program(lowered)
    x = torch.randn(2, n // 2)
    (y,) = program([x])
    made: list[bool] = []
    real = torch.full
    monkeypatch.setattr(torch, "full", lambda *a, **k: (made.append(True), real(*a, **k))[1])
    (again,) = program([x])
    torch.testing.assert_close(again, y)
    assert made  # made again at the second run
