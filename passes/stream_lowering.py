"""`stream-lowering`: the pipeline from fusion IR to an executable hir program."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from hir.passes.convert_fusion_to_hir import ConvertFusionToHirPass
from hir.passes.fusion_segment import FusionSegmentPass
from hir.passes.hir_loop_fusion import HirLoopFusionPass


@dataclass(frozen=True)
class StreamLoweringPass(ModulePass):
    """
    fusion-segment, convert-fusion-to-hir, hir-loop-fusion (each also a pass of its own).
    `policy` is fusion-segment's merge policy.
    """

    name = "stream-lowering"

    policy: str = "standalone-host-ops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        FusionSegmentPass(policy=self.policy).apply(ctx, op)
        op.verify()
        ConvertFusionToHirPass().apply(ctx, op)
        op.verify()
        HirLoopFusionPass().apply(ctx, op)
