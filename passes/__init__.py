"""Passes over fusion and hir modules, registered by name with lazy factories."""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# pass name -> (module under hir.passes, class)
_PASSES: dict[str, tuple[str, str]] = {
    "fusion-propagate-sharding": ("propagate_sharding", "PropagateShardingPass"),
    "fusion-stream-overlap": ("stream_overlap", "StreamOverlapPass"),
    "fusion-hide-communication": ("hide_communication", "HideCommunicationPass"),
    "fusion-decompose-resharding": ("decompose_resharding", "DecomposeReshardingPass"),
    "fusion-segment": ("fusion_segment", "FusionSegmentPass"),
    "convert-fusion-to-hir": ("convert_fusion_to_hir", "ConvertFusionToHirPass"),
    "hir-loop-fusion": ("hir_loop_fusion", "HirLoopFusionPass"),
    "hir-lower-communication": ("lower_communication", "LowerCommunicationPass"),
    "hir-sink-waits": ("sink_waits", "SinkWaitsPass"),
    "hir-ring-intermediates": ("ring_intermediates", "RingIntermediatesPass"),
    "hir-expand-stream-loops": ("expand_stream_loops", "ExpandStreamLoopsPass"),
    "stream-lowering": ("stream_lowering", "StreamLoweringPass"),
}


def _factory(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(import_module(f"hir.passes.{module}"), cls)


def get_all_hir_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Name -> lazy factory, like `xdsl.transforms.get_all_passes`."""
    return {name: _factory(module, cls) for name, (module, cls) in _PASSES.items()}
