"""Renders a torch.profiler chrome trace as a per-stream GPU timeline (PNG): kernels and copies."""

from __future__ import annotations

import json
import sys
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


if __name__ == "__main__":
    render(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
