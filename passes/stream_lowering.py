"""
`stream-lowering`: the pipeline from fusion IR to an executable hir program.

Cost: linear in the module, as each of its stages is (their docstrings say why; xDSL's cse keeps
one scoped table of the ops seen). `hir-opt --time-passes` reports every stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from hir.passes.convert_fusion_to_hir import ConvertFusionToHirPass
from hir.passes.decompose_resharding import DecomposeReshardingPass
from hir.passes.expand_stream_loops import JOINS, ExpandStreamLoopsPass
from hir.passes.fusion_segment import DEFAULT_POLICY, POLICIES, FusionSegmentPass
from hir.passes.hir_loop_fusion import HirLoopFusionPass
from hir.passes.lower_communication import BACKENDS, COMM_PRIORITIES, LowerCommunicationPass
from hir.passes.propagate_sharding import PropagateShardingPass
from hir.passes.ring_intermediates import RingIntermediatesPass
from hir.passes.sink_waits import SinkWaitsPass
from hir.passes.stream_overlap import OVERLAP_MODES, StreamOverlapPass
from hir.passes.symmetric_memory import RELEASES
from hir.pipeline import one_of, require_one_of

INTERMEDIATES = ("ring", "whole")


@dataclass(frozen=True)
class StreamLoweringPass(ModulePass):
    """
    Lowers fusion IR to an executable hir program. Its stages are fusion-stream-overlap,
    fusion-decompose-resharding, fusion-segment, convert-fusion-to-hir, hir-loop-fusion,
    hir-lower-communication, hir-sink-waits, hir-ring-intermediates, hir-expand-stream-loops and cse; each is also
    a pass of its own. `overlap` is fusion-stream-overlap's option (`auto`: the cost model decides
    for `backend`), `policy` fusion-segment's, `backend`, `chunks`, `release` and `comm-priority`
    hir-lower-communication's; `intermediates=whole` leaves out hir-ring-intermediates; `join` is
    hir-expand-stream-loops' option. `propagate-sharding=true` runs fusion-propagate-sharding (its
    default traversal) first, so that unannotated tensors take the sharding of their neighbours.
    """

    name = "stream-lowering"

    policy: str = one_of(DEFAULT_POLICY, POLICIES)
    backend: str = one_of("nccl", BACKENDS)
    chunks: int = 0
    release: str = one_of("auto", RELEASES)
    intermediates: str = one_of("ring", INTERMEDIATES)
    comm_priority: str = one_of("normal", COMM_PRIORITIES)
    join: str = one_of("caller", JOINS)
    overlap: str = one_of("always", OVERLAP_MODES)
    propagate_sharding: bool = False

    def __post_init__(self) -> None:
        require_one_of("intermediates", self.intermediates, INTERMEDIATES)
        self.stages()  # the stages check their options when built: a bad one fails here, before any input is read

    def stages(self) -> tuple[ModulePass, ...]:
        """The passes `apply` runs, in order; drivers run them one by one to verify, time and print each."""
        ring = (RingIntermediatesPass(),) if self.intermediates == "ring" else ()
        propagate = (PropagateShardingPass(),) if self.propagate_sharding else ()
        return (
            *propagate,
            StreamOverlapPass(overlap=self.overlap, backend=self.backend),
            DecomposeReshardingPass(),
            FusionSegmentPass(policy=self.policy),
            ConvertFusionToHirPass(),
            HirLoopFusionPass(),
            LowerCommunicationPass(
                backend=self.backend, chunks=self.chunks, release=self.release, comm_priority=self.comm_priority
            ),
            SinkWaitsPass(),
            *ring,  # after communication lowering: it checks the streams each access runs on
            ExpandStreamLoopsPass(join=self.join),
            CommonSubexpressionElimination(),  # fused loops repeat views of the same slice
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for stage in self.stages():
            stage.apply(ctx, op)
