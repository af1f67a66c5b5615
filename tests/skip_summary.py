"""
The skipped tests at the end of a run, one line per reason with its count and files, so that a
run without a GPU says which tests are CUDA-only and why, and which wait for a longer profile:

    ---------------------- skipped: 171 tests, by reason ----------------------
        142  needs a CUDA GPU  [test_runtime_hir.py, test_race_check.py, test_cuda_graph.py, +5 files]
         12  4 ranks run in the long profile (HIR_FUZZ_PROFILE=long)  [test_fuzz_uneven.py]

conftest.py registers the hook; `pytest -rs` lists each skip with its line instead.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

SHOWN_FILES = 3


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    by_reason: dict[str, list[str]] = defaultdict(list)
    for report in skipped:
        reason = "no reason given"
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        by_reason[reason].append(Path(report.nodeid.split("::")[0]).name)
    if not by_reason:
        return
    terminalreporter.write_sep("-", f"skipped: {len(skipped)} tests, by reason")
    for reason, files in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        distinct = list(dict.fromkeys(files))
        shown = ", ".join(distinct[:SHOWN_FILES])
        if len(distinct) > SHOWN_FILES:
            shown += f", +{len(distinct) - SHOWN_FILES} files"
        terminalreporter.write_line(f"  {len(files):5d}  {reason}  [{shown}]")
