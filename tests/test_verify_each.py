"""`hir.run_pipeline` verifies after every pass, or with `verify_each=False` once after the last
(`hir.compile`'s choice): a pass that leaves invalid IR is an error either way."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from hir import api
from hir.diagnostics import LocatedError

TEXT = """
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""


@dataclass(frozen=True)
class BreakResultShapePass(ModulePass):
    """Gives `fusion.exp`'s result another shape than its operand's: invalid IR."""

    name = "break-result-shape"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        exp = next(o for o in op.walk() if o.name == "fusion.exp")
        wrong = builtin.TensorType(builtin.f32, [4, 9])
        Rewriter.replace_op(exp, type(exp).create(operands=list(exp.operands), result_types=[wrong]))


@dataclass(frozen=True)
class CountPass(ModulePass):
    """Counts its runs in RUNS."""

    name = "count-runs"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        RUNS.append(1)


RUNS: list[int] = []


@pytest.fixture
def with_test_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    passes = dict(api.available_passes())
    passes[BreakResultShapePass.name] = lambda: BreakResultShapePass
    passes[CountPass.name] = lambda: CountPass
    monkeypatch.setattr(api, "available_passes", lambda: passes)
    RUNS.clear()


@pytest.mark.parametrize("verify_each", [True, False])
def test_invalid_ir_left_by_a_pass_is_an_error(with_test_passes: None, verify_each: bool) -> None:
    module = api.parse(TEXT, "f.mlir")
    with pytest.raises(LocatedError, match=r"4x9"):
        api.run_pipeline(module, "break-result-shape,cse", verify_each=verify_each)


def test_verify_each_false_checks_after_the_last_pass_only(
    with_test_passes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    once, each = api.parse(TEXT), api.parse(TEXT)
    verified: list[int] = []
    verify = api.verify
    monkeypatch.setattr(api, "verify", lambda m: (verified.append(len(RUNS)), verify(m))[1])
    api.run_pipeline(once, "count-runs,count-runs,count-runs", verify_each=False)
    assert verified == [3]
    verified.clear()
    RUNS.clear()
    api.run_pipeline(each, "count-runs,count-runs,count-runs")
    assert verified == [0, 1, 2, 3]
