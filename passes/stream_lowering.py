"""`stream-lowering`: the pipeline from fusion IR to an executable hir program."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from hir.passes.convert_fusion_to_hir import ConvertFusionToHirPass
from hir.passes.decompose_resharding import DecomposeReshardingPass
from hir.passes.expand_stream_loops import ExpandStreamLoopsPass
from hir.passes.fusion_segment import FusionSegmentPass
from hir.passes.hir_loop_fusion import HirLoopFusionPass
from hir.passes.lower_communication import LowerCommunicationPass


@dataclass(frozen=True)
class StreamLoweringPass(ModulePass):
    """
    Lowers fusion IR to an executable hir program. Its stages are fusion-decompose-resharding,
    fusion-segment, convert-fusion-to-hir, hir-loop-fusion, hir-lower-communication,
    hir-expand-stream-loops and cse; each is also a pass of its own. `policy` is fusion-segment's
    option, `backend`, `chunks` and `release` hir-lower-communication's.
    """

    name = "stream-lowering"

    policy: str = "standalone-host-ops"
    backend: str = "nccl"
    chunks: int = 0
    release: str = "auto"

    def __post_init__(self) -> None:
        self.stages()  # the stages check their options when built: a bad one fails here, before any input is read

    def stages(self) -> tuple[ModulePass, ...]:
        """The passes `apply` runs, in order; drivers run them one by one to verify, time and print each."""
        return (
            DecomposeReshardingPass(),
            FusionSegmentPass(policy=self.policy),
            ConvertFusionToHirPass(),
            HirLoopFusionPass(),
            LowerCommunicationPass(backend=self.backend, chunks=self.chunks, release=self.release),
            ExpandStreamLoopsPass(),
            CommonSubexpressionElimination(),  # fused loops repeat views of the same slice
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for stage in self.stages():
            stage.apply(ctx, op)
