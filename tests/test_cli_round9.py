"""hir-run and hir-opt on adversarial inputs: each is a clear error naming what is wrong, never an internal error."""

from pathlib import Path

import pytest
import torch

from hir.tools.hir_run import main as hir_run_main

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "set_stream.mlir")


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_:
        hir_run_main(argv)
    err = capsys.readouterr().err
    assert "internal error" not in err, err
    assert "Traceback" not in err, err
    return int(exit_.value.code or 0), err


def test_meta_tensor_input_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A meta tensor has a shape and dtype but no data: copying it to the device failed inside torch.
    path = tmp_path / "meta.pt"
    torch.save([torch.empty(4, 8, device="meta")], path)
    code, err = _fails([EXAMPLE, "--device", "cpu", "--inputs", str(path)], capsys)
    assert code == 1
    assert f"--inputs {path}: input #0 is a meta tensor, which holds no data" in err


@pytest.mark.parametrize("seed", ["99999999999999999999999999", str(-(1 << 63) - 1), "x"])
def test_seed_out_of_range_is_a_usage_error(seed: str, capsys: pytest.CaptureFixture[str]) -> None:
    # torch's generators take -2^63 to 2^64 - 1; a seed past that overflowed inside torch.manual_seed.
    code, err = _fails([EXAMPLE, "--device", "cpu", "--seed", seed], capsys)
    assert code == 2
    assert "argument --seed:" in err
