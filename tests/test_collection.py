"""The compiling thresholds of the garbage collector are the pipeline's only: the caller's come back."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from hir import api
from hir.collection import COMPILING_THRESHOLDS, fewer_collections
from hir.tools.hir_opt import main as hir_opt_main


def test_the_callers_thresholds_come_back_after_an_error() -> None:
    before = gc.get_threshold()

    def failing_pass() -> None:
        with fewer_collections():
            assert gc.get_threshold() == COMPILING_THRESHOLDS
            raise RuntimeError("a pass failed")

    with pytest.raises(RuntimeError):
        failing_pass()
    assert gc.get_threshold() == before


def test_run_pipeline_collects_less_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []

    class RecordingPipeline(PassPipeline):
        def apply(self, ctx: Context, op: ModuleOp) -> None:
            seen.append(gc.get_threshold())
            super().apply(ctx, op)

    monkeypatch.setattr(api, "PassPipeline", RecordingPipeline)
    module = api.parse(
        """
        func.func @f(%x: tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
          %y = fusion.exp %x : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
          func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
        }
        """
    )
    before = gc.get_threshold()
    api.run_pipeline(module, "stream-lowering")
    assert seen == [COMPILING_THRESHOLDS]
    assert gc.get_threshold() == before


def test_hir_opt_in_process_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    """Only the executable (`command`) keeps the compiling thresholds and freezes objects."""
    source = tmp_path / "in.mlir"
    source.write_text(
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = fusion.exp %x : tensor<4xf32> -> tensor<4xf32>\n"
        "  func.return %y : tensor<4xf32>\n"
        "}\n"
    )
    # What conftest.py froze may be freed meanwhile (and leave the count): unfrozen, the count is 0.
    gc.unfreeze()
    try:
        before = gc.get_threshold()
        hir_opt_main([str(source), "--stream-lowering", "-o", str(tmp_path / "out.mlir")])
        assert (gc.get_threshold(), gc.get_freeze_count()) == (before, 0)
    finally:
        gc.collect()
        gc.freeze()
    assert "fusion.exp" in (tmp_path / "out.mlir").read_text()
