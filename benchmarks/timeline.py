"""
The timeline of a benchmark's torch.profiler trace as a PNG (hir.runtime.timeline draws it: the hir
ops' ranges on the host, then kernels and copies per CUDA stream), from the end of the barrier the
benchmark's traced region starts with. `ag_gemm.py --profile DIR` calls it; by hand:

    python benchmarks/timeline.py DIR/ag_gemm_trace.json timeline.png "title"
"""

from __future__ import annotations

import argparse

from hir.runtime import timeline
from hir.runtime.timeline import PlottingUnavailable

__all__ = ["PlottingUnavailable", "build_parser", "render"]


def render(trace_path: str, png_path: str, title: str) -> None:
    """The timeline after the first NCCL kernel (the barrier, which waits for the other ranks)."""
    timeline.render(trace_path, png_path, title, after_first_collective=True)


def build_parser() -> argparse.ArgumentParser:
    p = timeline.build_parser()
    p.prog = "timeline.py"
    p.description = "Draw a benchmark's torch.profiler trace as a timeline PNG, from the end of its first barrier."
    return p


if __name__ == "__main__":
    args = build_parser().parse_args()
    render(args.trace, args.png, args.title)
