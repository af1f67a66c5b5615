"""
`--mlir-timing`: the wall time of parsing, each pass (a pipeline pass's stages nested under it),
verification and printing, as the table mlir-opt's `-mlir-timing` prints on stderr:

    ===-------------------------------------------------------------------------===
                             ... Execution time report ...
    ===-------------------------------------------------------------------------===
      Total Execution Time: 0.0512 seconds

      ----Wall Time----  ----Name----
        0.0301 ( 58.8%)  stream-lowering
        ...
        0.0512 (100.0%)  Total

`list` (the default, as in mlir-opt) sums the timers of one name that nest no others (a
pipeline pass's stages, not the pipeline) and sorts them by time; `tree`
keeps the nesting in the order the timers first ran. Rows of several chunks (--split-input-file) add up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import IO

DISPLAYS = ("list", "tree")
_RULE = "===" + "-" * 73 + "==="


@dataclass
class TimingReport:
    started: float = field(default_factory=time.perf_counter)
    _seconds: dict[tuple[str, ...], float] = field(default_factory=dict)
    """Per timer path (`("stream-lowering", "cse")`), in the order the timers first ran."""

    def add(self, path: tuple[str, ...], seconds: float) -> None:
        """Adds `seconds` to the timer at `path` and to each of its parents."""
        for depth in range(1, len(path) + 1):
            self._seconds[path[:depth]] = self._seconds.get(path[:depth], 0.0) + seconds

    def write(self, stream: IO[str], display: str = "list") -> None:
        total = time.perf_counter() - self.started
        if display == "tree":
            rows = [(len(path) - 1, path[-1], seconds) for path, seconds in self._seconds.items()]
        else:
            # The leaves only, as mlir-opt lists passes and not the pipelines around them: the
            # rows then add up to the total.
            parents = {path[:-1] for path in self._seconds}
            by_name: dict[str, float] = {}
            for path, seconds in self._seconds.items():
                if path not in parents:
                    by_name[path[-1]] = by_name.get(path[-1], 0.0) + seconds
            rows = [(0, name, seconds) for name, seconds in sorted(by_name.items(), key=lambda row: -row[1])]
        top = sum(seconds for path, seconds in self._seconds.items() if len(path) == 1)
        rows += [(0, "Rest", max(0.0, total - top)), (0, "Total", total)]
        lines = [_RULE, f"{'... Execution time report ...':^79}".rstrip(), _RULE]
        lines += [f"  Total Execution Time: {total:.4f} seconds", "", "  ----Wall Time----  ----Name----"]
        for depth, name, seconds in rows:
            share = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"  {seconds:>8.4f} ({share:5.1f}%)  {'  ' * depth}{name}")
        print("\n".join(lines), file=stream)
