"""Comparing lowered outputs with the reference: tolerances follow the least precise float computed."""

import subprocess
import sys
from pathlib import Path

import torch

import hir
from hir.runtime.compare import computed_dtypes, mismatches, tolerance_for

# linear in f32, streamed on a middle axis, then cast to f64: the f64 output carries f32 rounding.
F32_THEN_F64 = """
func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x3x5xf64, #fusion.parallel<[serial, stream, serial]>> {
  %y = fusion.linear %x, %w : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>>
  %z = fusion.cast %y : tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>> -> tensor<2x3x5xf64, #fusion.parallel<[serial, stream, serial]>>
  func.return %z : tensor<2x3x5xf64, #fusion.parallel<[serial, stream, serial]>>
}
"""


def test_tolerance_is_the_least_precise_float() -> None:
    assert tolerance_for([torch.float64, torch.float32]) == tolerance_for([torch.float32])
    assert tolerance_for([torch.bfloat16, torch.float64]) == tolerance_for([torch.bfloat16])
    assert tolerance_for([torch.int32]) is None


def test_computed_dtypes_of_a_function() -> None:
    module = hir.parse(F32_THEN_F64)
    function = hir.compile_program(module).func
    assert computed_dtypes(function) == {torch.float32, torch.float64}


def test_mismatches_uses_the_given_tolerance() -> None:
    ref = torch.ones(100, dtype=torch.float64)
    out = ref + 1e-7  # float32-sized rounding on an f64 output
    assert mismatches([out], [ref])  # at the f64 tolerance: a mismatch
    assert not mismatches([out], [ref], tolerance_for([torch.float32]))
    assert mismatches([out * 2], [ref], tolerance_for([torch.float32]))  # a real difference still shows


def test_check_passes_on_f32_computation_with_f64_output(tmp_path: Path) -> None:
    path = tmp_path / "f64.mlir"
    path.write_text(F32_THEN_F64)
    result = subprocess.run(
        [sys.executable, "-m", "hir.tools.hir_run", str(path), "--check", "--num-streams", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "check: OK" in result.stdout
