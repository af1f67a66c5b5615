"""
`--version` of hir's tools: hir's version and those of the two libraries it is built on, read from
the installed distributions' metadata (no import of torch: `hir-opt --version` stays instant).
"""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version
from typing import Any


def _installed(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


def version_text(tool: str) -> str:
    """`hir 0.1.0 (hir-opt)` and, indented below it, the xDSL and PyTorch versions."""
    return f"hir {_installed('hir')} ({tool})\n  xDSL {_installed('xdsl')}\n  PyTorch {_installed('torch')}"


class VersionAction(argparse.Action):
    """`--version`: prints `version_text(parser.prog)` and exits 0."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("help", "print the versions of hir, xDSL and PyTorch and exit")
        super().__init__(*args, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text(parser.prog))
        parser.exit()
