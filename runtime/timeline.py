"""
The timeline of a torch.profiler Chrome trace as a PNG: one row per nesting level of the hir and
fusion ops' ranges on the host (what the runtime names them: `hir.launch fusion.relu @ f.mlir:12:5`),
then one row per CUDA stream with its kernels and copies. `hir-run --profile DIR` writes it next
to the trace; by hand:

    python -m hir.runtime.timeline DIR/trace.json timeline.png "title"

Reading the trace needs nothing; drawing it needs matplotlib (setup.sh installs it: the `plot` extra).
"""

from __future__ import annotations

import argparse
import functools
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent  # the import package `hir` is the repository's root
PLOT_HINT = "the timeline PNG needs matplotlib: " + (
    f"pip install -e '{_CHECKOUT}[plot]' (this checkout's plot extra, which setup.sh installs)"
    if (_CHECKOUT / "pyproject.toml").is_file()
    else "pip install matplotlib"
)

OP_PREFIXES = ("hir.", "fusion.")
"""Ranges named after ops: what the runtime records (runtime/compiler.py, `range_name`)."""
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


class PlottingUnavailable(RuntimeError):
    """matplotlib is not installed: the trace is there, its picture is not."""


@dataclass
class Span:
    start: float
    """Microseconds since the first event shown."""
    duration: float
    name: str
    color: str


@dataclass
class Row:
    label: str
    spans: list[Span] = field(default_factory=list)


def load_events(trace: str | Path) -> list[dict]:
    return json.loads(Path(trace).read_text())["traceEvents"]


def color_of(name: str, category: str) -> str:
    """Compute blue, communication green, copies orange, the rest (streams, views, loops, memsets) gray."""
    if category in GPU_CATEGORIES:
        if "nccl" in name.lower():
            return "tab:green"
        return {"kernel": "tab:blue", "gpu_memcpy": "tab:orange"}.get(category, "tab:gray")
    op = name.split(" ")[0]
    if op in communication_ops():
        return "tab:green"
    return "tab:blue" if op == "hir.launch" or op.startswith("fusion.") else "tab:gray"


@functools.cache
def communication_ops() -> frozenset[str]:
    """The hir ops that move data between devices or wait for them: collectives, P2P, waits, barriers."""
    from hir.dialects import hir

    return frozenset(op.name for op in hir.HIR_OPS if issubclass(op, hir.CommunicationOp | hir.WaitOp | hir.BarrierOp))


def timeline_rows(events: Sequence[dict], *, after_first_collective: bool = False) -> list[Row]:
    """
    The host rows (op ranges by nesting depth: a loop above the ops of its body), then a row per
    CUDA stream. `after_first_collective`: show only what follows the first NCCL kernel (a
    benchmark that starts its traced region with a barrier, which waits for the other ranks).
    """
    complete = [e for e in events if e.get("ph") == "X" and "dur" in e and "ts" in e]
    host = sorted(
        (e for e in complete if e.get("name", "").startswith(OP_PREFIXES) and e.get("cat") != "gpu_user_annotation"),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    gpu = [e for e in complete if e.get("cat") in GPU_CATEGORIES]
    if after_first_collective:
        barriers = [e for e in gpu if "nccl" in e["name"].lower()]
        if barriers:
            first = min(barriers, key=lambda e: e["ts"])
            cut = first["ts"] + first["dur"]
            gpu = [e for e in gpu if e["ts"] >= cut]
            host = [e for e in host if e["ts"] >= cut]
    shown = host + gpu
    if not shown:
        return []
    origin = min(e["ts"] for e in shown)

    def span(e: dict) -> Span:
        return Span(e["ts"] - origin, e["dur"], e["name"], color_of(e["name"], e.get("cat", "")))

    levels: dict[int, Row] = {}
    open_ends: dict[tuple, list[float]] = defaultdict(list)  # per thread: the ends of the enclosing ranges
    for e in host:
        ends = open_ends[(e.get("pid"), e.get("tid"))]
        while ends and ends[-1] <= e["ts"]:
            ends.pop()
        depth = len(ends)
        ends.append(e["ts"] + e["dur"])
        levels.setdefault(depth, Row("host: ops" if depth == 0 else f"host: nested {depth}")).spans.append(span(e))
    streams: dict[int, Row] = {}
    for e in gpu:
        stream = int(e.get("args", {}).get("stream", e.get("tid", 0)))
        streams.setdefault(stream, Row(f"stream {stream}")).spans.append(span(e))
    return [levels[d] for d in sorted(levels)] + [streams[s] for s in sorted(streams)]


def render(trace: str | Path, png: str | Path, title: str = "", *, after_first_collective: bool = False) -> None:
    """Draws the trace's timeline into `png`; PlottingUnavailable without matplotlib."""
    rows = timeline_rows(load_events(trace), after_first_collective=after_first_collective)
    if not rows:
        raise ValueError(f"{trace} has no op ranges and no GPU events to draw")
    try:
        import matplotlib
    except ImportError:
        raise PlottingUnavailable(PLOT_HINT) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    end = max(s.start + s.duration for row in rows for s in row.spans)
    fig, ax = plt.subplots(figsize=(12, 1 + 0.6 * len(rows)))
    for y, row in enumerate(reversed(rows)):  # the first row on top
        ax.broken_barh(
            [(s.start / 1e3, s.duration / 1e3) for s in row.spans],
            (y - 0.4, 0.8),
            facecolors=[s.color for s in row.spans],
            edgecolor="black",
            linewidth=0.2,
        )
        for s in row.spans:
            if s.duration > end / 25:  # a label where it fits
                label = s.name.split(" @ ")[0]
                ax.text((s.start + s.duration / 2) / 1e3, y, label, ha="center", va="center", fontsize=6, clip_on=True)
    ax.set_yticks(range(len(rows)), [row.label for row in reversed(rows)])
    ax.set_xlabel("ms")
    ax.set_title((title + "  " if title else "") + "(blue: compute, green: communication, orange: copies)")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m hir.runtime.timeline", description="Draw a torch.profiler Chrome trace as a timeline PNG."
    )
    p.add_argument("trace", help="a Chrome trace (torch.profiler's export_chrome_trace, hir-run --profile)")
    p.add_argument("png", help="the PNG to write")
    p.add_argument("title", nargs="?", default="")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        render(args.trace, args.png, args.title)
    except (PlottingUnavailable, ValueError, OSError) as err:
        raise SystemExit(f"error: {err}") from None


if __name__ == "__main__":
    main()
