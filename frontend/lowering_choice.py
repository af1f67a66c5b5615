"""
Which lowering `hir.compile` uses when the caller names none: on CUDA, the cost model's
(passes/stream_overlap.py `choose_lowering`: pipeline or not, over which backend), for a program
replayed as a CUDA graph or run eagerly; on CPU, `stream-lowering` as written.

Where the model's two predictions are within TUNE_BAND of each other, the other lowering is kept
as a candidate, and the first call measures both (frontend/autotune.py): the model ranks the
lowerings, a measurement on the machine settles the close calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xdsl.dialects.builtin import ModuleOp, TensorType

from hir.dialects.parallel_encoding import ParallelAttr
from hir.frontend.errors import FrontendError
from hir.passes.stream_overlap import Lowering, choose_lowering

DEFAULT_PIPELINE = "stream-lowering"
CHOSEN_OPTIONS = ("backend", "overlap")
"""The options the model picks; a caller who passes either keeps its lowering as written."""
TUNE_BAND = 0.5
"""Predictions closer than this (relative) are measured at the first call."""
PLAIN_POLICY = "contractions-with-epilogues"
"""
`fusion-segment`'s policy for a program without stream or device axes (a model on one device):
everything between two GEMMs one launch, and an f32 residual add in its GEMM's (one `addmm`),
where the pass's default runs each binary op alone with a buffer of its own, and copies out a
slice that a later launch reads. On one H200 (bf16, docs/benchmarks.md, "Segmentation
policies") it took a 4-layer decoding step from 0.527 to 0.492 ms replayed and a GPT-2-small
block from 0.118 to 0.098 ms, and each 2-9 % less without a graph. Programs with layouts keep
the default, with whose launches the stream and communication pipelines were measured.
"""


def choose_options(
    module: ModuleOp, pipeline: str, options: Mapping[str, Any], on_cuda: bool, replay: bool
) -> tuple[dict[str, Any], Lowering | None]:
    """
    The pass options to compile with, and the model's decision (None where it made none: a
    pipeline or option the caller wrote, or a CPU program, which the model does not describe).
    """
    chosen = dict(options)
    if pipeline == DEFAULT_PIPELINE and "policy" not in options and not _has_layouts(module):
        chosen["policy"] = PLAIN_POLICY
    if pipeline != DEFAULT_PIPELINE or not on_cuda or any(k in options for k in CHOSEN_OPTIONS):
        return chosen, None
    try:
        lowering = agreed_by_every_rank(choose_lowering(module, replay))
    except ValueError as err:  # a cache or $HIR_DEVICE_CONSTANTS file that does not read
        raise FrontendError(f"<compile>: error: {err}") from None
    chosen.update(lowering.options())
    return chosen, lowering


def _has_layouts(module: ModuleOp) -> bool:
    """Whether a value of `module` has stream or device axes (a parallel encoding on its type)."""
    for op in module.walk():
        values = [*op.results, *(a for region in op.regions for block in region.blocks for a in block.args)]
        if any(isinstance(v.type, TensorType) and isinstance(v.type.encoding, ParallelAttr) for v in values):
            return True
    return False


def candidates(lowering: Lowering | None, options: Mapping[str, Any]) -> list[tuple[dict[str, Any], Lowering]]:
    """The other lowerings to measure at the first call, with their options, where the model's call was close."""
    if lowering is None or not (chosen := lowering.predicted_ms):
        return []
    close = [
        o for o in lowering.others() if o.predicted_ms is not None and abs(o.predicted_ms / chosen - 1) <= TUNE_BAND
    ]
    return [({**options, **other.options()}, other) for other in close]


def agreed_by_every_rank(lowering: Lowering) -> Lowering:
    """
    Rank 0's decision on every rank of a torch.distributed job: ranks that read different device
    constants (another host's cache) would otherwise lower different programs, whose collectives
    would not match.
    """
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() == 1:
        return lowering
    shared: list[Any] = [lowering]
    dist.broadcast_object_list(shared, src=0)
    return shared[0]
