"""The cache of torch's composite-implicit ops (frontend/cia_ops.py) answers as torch does, and sees ops registered later."""

from __future__ import annotations

import pytest
import torch

from hir.frontend.cia_ops import cia_ops_collected_once

exported_program = pytest.importorskip("torch.export.exported_program")
if not hasattr(exported_program, "_collect_all_valid_cia_ops"):
    pytest.skip("this torch collects no composite-implicit ops", allow_module_level=True)


def test_the_cache_answers_as_torch_and_sees_ops_registered_later() -> None:
    collect = exported_program._collect_all_valid_cia_ops
    with cia_ops_collected_once():
        assert exported_program._collect_all_valid_cia_ops is not collect
        assert exported_program._collect_all_valid_cia_ops() == collect()
        library = torch.library.Library("hir_cia_test", "DEF")
        library.define("double(Tensor x) -> Tensor")
        library.impl("double", lambda x: x + x, "CompositeImplicitAutograd")
    assert exported_program._collect_all_valid_cia_ops is collect  # restored
    with cia_ops_collected_once():
        cached = exported_program._collect_all_valid_cia_ops()
    assert torch.ops.hir_cia_test.double.default in cached
    assert cached == collect()
