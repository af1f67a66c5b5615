"""The device constants of the cost model: the cache file, its errors, and hir-calibrate's pieces that need no GPU."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import hir
from hir.passes.device_constants import (
    BUILTIN,
    CACHE_DIR_VARIABLE,
    ENVIRONMENT_VARIABLE,
    DeviceConstants,
    cache_path,
    load_constants,
    save_constants,
)
from hir.tools import calibrate


def test_builtin_unless_a_cache_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    assert cache_path() == tmp_path / "device-constants.json"
    assert load_constants() == BUILTIN
    measured = replace(BUILTIN, machine="2x test GPU", gemm_flop_per_ms=400e9, host_ms_per_op=0.002)
    assert save_constants(measured) == cache_path()
    loaded = load_constants()
    assert loaded == replace(measured, source=str(cache_path()))
    assert not list(tmp_path.glob("*.tmp"))  # written through a temporary file, renamed
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "builtin")  # the built-in ones, whatever is cached
    assert load_constants() == BUILTIN


def test_an_explicit_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save_constants(replace(BUILTIN, nccl_bytes_per_ms=1e6), tmp_path / "other.json")
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, str(path))
    assert load_constants().nccl_bytes_per_ms == 1e6
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match=r"missing\.json: no such file"):
        load_constants()


def test_malformed_files_are_named(tmp_path: Path) -> None:
    values = json.loads(BUILTIN.to_json())
    del values["barrier_ms"]
    with pytest.raises(ValueError, match=r"c\.json: device constants lack barrier_ms \(recalibrate: hir-calibrate\)"):
        DeviceConstants.from_json(json.dumps(values), "c.json")
    with pytest.raises(ValueError, match=r"c\.json: not a JSON file of device constants"):
        DeviceConstants.from_json('{"machine": ', "c.json")
    with pytest.raises(ValueError, match=r"c\.json: not a JSON object of device constants"):
        DeviceConstants.from_json("[1, 2]", "c.json")
    values = {**json.loads(BUILTIN.to_json()), "gemm_flop_per_ms": "fast"}
    with pytest.raises(ValueError, match="gemm_flop_per_ms must be a non-negative number, got 'fast'"):
        DeviceConstants.from_json(json.dumps(values), "c.json")


def test_the_cache_changes_the_decision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """stream-lowering{overlap=auto} reads the machine's constants: slower links make M=1024 pipeline."""
    text = (
        Path(__file__).resolve().parent.parent / "tests/lit/passes/fusion-stream-overlap/auto_small_m.mlir"
    ).read_text()
    small = text.split("// -----")[0]

    def lowered_loops() -> int:
        module = hir.run_pipeline(hir.parse(small, "small.mlir"), "stream-lowering{overlap=auto backend=copy-engine}")
        return sum(op.name == "hir.for" for op in module.walk())

    assert lowered_loops() == 0
    slow = replace(BUILTIN, nccl_bytes_per_ms=BUILTIN.nccl_bytes_per_ms / 8, host_ms_per_op=0.0)
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, str(save_constants(slow, tmp_path / "slow.json")))
    assert lowered_loops() > 0


def test_fit_line() -> None:
    latency, rate = calibrate.fit_line([1e9, 2e9, 4e9], [0.019 + 1e9 / 8e11, 0.019 + 2e9 / 8e11, 0.019 + 4e9 / 8e11])
    assert latency == pytest.approx(0.019)
    assert rate == pytest.approx(8e11)


def test_executed_ops_counts_loop_bodies_per_iteration() -> None:
    module = hir.run_pipeline(hir.parse(calibrate.HOST_MODULE, "calibrate"), "stream-lowering")
    once = calibrate.executed_ops(module, iterations=1)
    assert calibrate.executed_ops(module, iterations=256) > 100 * once // 2
    assert calibrate.executed_ops(module, iterations=256) == 3080  # benchmarks/host_overhead.py's count


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where no GPU exists")
def test_calibrate_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert calibrate.main(["--print-only"]) == 1
    assert "no CUDA GPU here; the cost model uses the built-in constants" in capsys.readouterr().err


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="measures a CUDA GPU")
def test_calibrate_on_a_gpu(tmp_path: Path) -> None:
    assert calibrate.main(["--gpus", "1", "--out", str(tmp_path / "c.json")]) == 0
    measured = DeviceConstants.from_json((tmp_path / "c.json").read_text(), "c.json")
    assert 1e8 < measured.gemm_flop_per_ms < 1e13  # 0.1-10 000 TFLOP/s
    assert 0 < measured.host_ms_per_op < 1


def test_hir_compile_names_a_broken_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU hir.compile reads the constants; a broken file is a FrontendError naming it, not a traceback."""
    from hir.frontend import FrontendError
    from hir.frontend.lowering_choice import choose_options

    broken = tmp_path / "broken.json"
    broken.write_text("{")
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, str(broken))
    text = (Path(__file__).resolve().parent.parent / "examples/multidevice/ag_matmul_by_device.mlir").read_text()
    with pytest.raises(FrontendError, match=r"<compile>: error: .*broken\.json: not a JSON file of device constants"):
        choose_options(hir.parse(text, "ag.mlir"), "stream-lowering", {}, on_cuda=True, replay=True)
