"""
Renders a torch.profiler chrome trace as a per-stream GPU timeline (PNG): kernels and copies.
Needs matplotlib. `ag_gemm.py --profile DIR` calls it; by hand:

    python benchmarks/timeline.py DIR/ag_gemm_trace.json timeline.png "title"
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict


def render(trace_path: str, png_path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = json.load(open(trace_path))["traceEvents"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e]
    if not gpu:
        raise SystemExit(f"no GPU events in {trace_path}")
    # The traced region starts with a barrier (an NCCL all-reduce) that waits for the other ranks:
    # show what follows it.
    barriers = [e for e in gpu if "nccl" in e["name"].lower()]
    if barriers:
        first_end = min(barriers, key=lambda e: e["ts"])
        cut = first_end["ts"] + first_end["dur"]
        gpu = [e for e in gpu if e["ts"] >= cut]
    start = min(e["ts"] for e in gpu)
    by_stream: dict[int, list[dict]] = defaultdict(list)
    for e in gpu:
        by_stream[int(e.get("args", {}).get("stream", e.get("tid", 0)))].append(e)
    fig, ax = plt.subplots(figsize=(12, 1 + 0.6 * len(by_stream)))
    colors = {"kernel": "tab:blue", "gpu_memcpy": "tab:orange", "gpu_memset": "tab:gray"}
    for row, stream in enumerate(sorted(by_stream)):
        for e in by_stream[stream]:
            name = e["name"].lower()
            color = "tab:green" if "nccl" in name else colors[e["cat"]]
            if "gemm" in name or "sm90" in name or "cutlass" in name or "nvjet" in name:
                color = "tab:blue"
            ax.barh(row, e["dur"] / 1e3, left=(e["ts"] - start) / 1e3, color=color, edgecolor="black", linewidth=0.2)
    ax.set_yticks(range(len(by_stream)), [f"stream {s}" for s in sorted(by_stream)])
    ax.set_xlabel("ms")
    ax.set_title(title + "  (blue: compute kernels, orange: copy-engine copies, green: NCCL)")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip())
    p.add_argument("trace", help="a chrome trace (torch.profiler's export_chrome_trace)")
    p.add_argument("png", help="the PNG to write")
    p.add_argument("title", nargs="?", default="")
    return p


if __name__ == "__main__":
    args = build_parser().parse_args()
    render(args.trace, args.png, args.title)
