"""
Comparing lowered outputs with the reference (runtime/compare.py): tolerances follow the least
precise float computed, NaN and Inf match position for position, integers compare exactly.
"""

from pathlib import Path

import pytest
import torch

import hir
from hir.runtime.compare import computed_dtypes, mismatches, tolerance_for
from hir.tools.hir_run import main as hir_run_main

REPO = Path(__file__).resolve().parent.parent
SET_STREAM = REPO / "examples" / "set_stream.mlir"
SET_STREAM_HIR = REPO / "examples" / "set_stream.hir.mlir"

# linear in f32, streamed on a middle axis, then cast to f64: the f64 output carries f32 rounding.
F32_THEN_F64 = """
func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x3x5xf64, #fusion.parallel<[serial, stream, serial]>> {
  %y = fusion.linear %x, %w : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>>
  %z = fusion.cast %y : tensor<2x3x5xf32, #fusion.parallel<[serial, stream, serial]>> -> tensor<2x3x5xf64, #fusion.parallel<[serial, stream, serial]>>
  func.return %z : tensor<2x3x5xf64, #fusion.parallel<[serial, stream, serial]>>
}
"""


def random(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def with_non_finite(t: torch.Tensor) -> torch.Tensor:
    """A copy with NaN, +Inf and -Inf at fixed positions of a [4, 8] tensor."""
    t = t.clone()
    t[0, 1], t[2, 3], t[3, 7] = float("nan"), float("inf"), float("-inf")
    return t


def test_tolerance_is_the_least_precise_float() -> None:
    assert tolerance_for([torch.float64, torch.float32]) == tolerance_for([torch.float32])
    assert tolerance_for([torch.bfloat16, torch.float64]) == tolerance_for([torch.bfloat16])
    assert tolerance_for([torch.int32]) is None


def test_computed_dtypes_of_a_function() -> None:
    module = hir.parse(F32_THEN_F64)
    function = hir.compile_program(module).func
    assert computed_dtypes(function) == {torch.float32, torch.float64}


def test_mismatches_uses_the_given_tolerance() -> None:
    ref = random(100, dtype=torch.float64)
    out = ref * (1 + 1e-6)  # float32-sized rounding on an f64 output
    assert mismatches([out], [ref])  # at the f64 tolerance: a mismatch
    assert not mismatches([out], [ref], tolerance_for([torch.float32]))
    assert mismatches([out * 2], [ref], tolerance_for([torch.float32]))  # a real difference still shows


def test_same_nan_and_inf_positions_match() -> None:
    ref = with_non_finite(random(4, 8))
    assert mismatches([ref.clone()], [ref]) == []
    assert mismatches([ref * (1 + 1e-7)], [ref]) == []  # finite rounding, same non-finite values


@pytest.mark.parametrize(
    ("index", "value", "expected"),
    [
        ((0, 1), 0.5, "0.5 where the reference has nan"),  # the reference's NaN is missing
        ((1, 1), float("nan"), "nan where the reference has"),  # a NaN where the reference is finite
        ((2, 3), float("-inf"), "-inf where the reference has inf"),  # the sign of an infinity
        ((2, 3), float("nan"), "nan where the reference has inf"),
        ((1, 5), float("inf"), "inf where the reference has"),  # an infinity where it is finite
    ],
)
def test_non_finite_values_must_match_position_for_position(
    index: tuple[int, int], value: float, expected: str
) -> None:
    ref = with_non_finite(random(4, 8))
    out = ref.clone()
    out[index] = value
    (problem,) = mismatches([out], [ref])
    assert problem.startswith("output #0: 1 of 32 elements differ in NaN/Inf, first at index")
    assert f"{index}: " in problem
    assert expected in problem


def test_finite_elements_compare_when_the_reference_has_nan_and_inf() -> None:
    ref = with_non_finite(random(4, 8))
    out = -ref  # wrong everywhere; -NaN is NaN but the infinities flip
    out[2, 3], out[3, 7] = ref[2, 3], ref[3, 7]
    (problem,) = mismatches([out], [ref])
    assert "Mismatched elements: 29 / 32" in problem


def test_cancellation_rounding_passes_but_one_wrong_element_does_not() -> None:
    """A chunked sum rounds an element that cancels to ~0 like its large terms; that is no bug."""
    a = random(8, 4096, dtype=torch.float64) * 100
    a[3, -1] = -a[3, :-1].sum()  # row 3 sums to about zero
    a = a.float()
    ref = a.sum(1)
    chunked = a.view(8, 16, 256).sum(2).sum(1)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(chunked, ref)  # assert_close's plain defaults reject it
    assert mismatches([chunked], [ref]) == []
    wrong = chunked.clone()
    wrong[5] += 1e-3 * ref.abs().max()
    assert mismatches([wrong], [ref])


def test_one_wrong_element_of_a_large_low_precision_output() -> None:
    ref = random(1000, 1000).bfloat16()  # a relative L2 error would hide one element in 10^6
    out = ref.clone()
    out[500, 7] = ref[500, 7] + 1
    (problem,) = mismatches([out], [ref])
    assert "Mismatched elements: 1 / 1000000" in problem
    assert "(500, 7)" in problem


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool])
def test_integers_and_booleans_compare_exactly(dtype: torch.dtype) -> None:
    ref = torch.randint(0, 2, (64,), generator=torch.Generator().manual_seed(1)).to(dtype)
    out = ref.clone()
    out[9] = ~out[9] if dtype == torch.bool else out[9] + 1
    assert mismatches([ref.clone()], [ref]) == []
    (problem,) = mismatches([out], [ref])
    assert "Mismatched elements: 1 / 64" in problem


def test_shape_dtype_and_count_mismatches() -> None:
    ref = random(4, 8)
    assert mismatches([ref], [ref, ref]) == ["1 outputs but the reference has 2"]
    assert mismatches([ref.double()], [ref]) == ["output #0: (4, 8) torch.float64 vs reference (4, 8) torch.float32"]


def hir_run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """`hir-run ARGS` in this process (no torch import per call): exit status, stdout, stderr."""
    code = 0
    try:
        hir_run_main([str(a) for a in args])
    except SystemExit as exit:
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_check_passes_on_f32_computation_with_f64_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f64.mlir"
    path.write_text(F32_THEN_F64)
    code, out, err = hir_run(capsys, path, "--check", "--num-streams", "2", "--device", "cpu")
    assert code == 0, err
    assert "check: OK" in out


def test_check_with_nan_and_inf_in_the_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`hir-run --check` used to pass any program whose reference output held a NaN."""
    torch.save([with_non_finite(random(4, 8))], tmp_path / "in.pt")
    code, out, err = hir_run(capsys, SET_STREAM, "--check", "--inputs", tmp_path / "in.pt", "--device", "cpu")
    assert code == 0, err
    assert "check: OK" in out

    wrong = SET_STREAM_HIR.read_text().replace("fusion.set", "fusion.neg")  # -NaN is NaN: only finite ones differ
    assert wrong != SET_STREAM_HIR.read_text()
    (tmp_path / "wrong.hir.mlir").write_text(wrong)
    with_nan = random(4, 8)
    with_nan[0, 1] = float("nan")
    torch.save([with_nan], tmp_path / "nan.pt")
    code, out, err = hir_run(
        capsys, tmp_path / "wrong.hir.mlir", "--reference", SET_STREAM, "--check", "--inputs", tmp_path / "nan.pt"
    )
    assert code == 1, out
    assert "error: check failed" in err
    assert "output #0: Mismatched elements: 31 / 32" in err
    assert "Traceback" not in err
