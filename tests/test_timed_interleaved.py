"""
benchmarks/ag_gemm.py's `timed_interleaved`, on CPU in one process: warm-up rounds, then rounds in
which every variant runs once, in the mapping's order (the same sequence on every rank), and one
median per variant.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from ag_gemm import timed_interleaved  # benchmarks/ is a folder of scripts, not a package


def test_variants_run_round_robin_after_a_warm_up() -> None:
    calls: list[str] = []
    fns = {name: (lambda name=name: calls.append(name)) for name in ("eager", "hir", "hir graph")}
    times = timed_interleaved(fns, reps=3, warmup=2, device="cpu")
    assert calls == ["eager", "hir", "hir graph"] * (2 + 3)
    assert list(times) == ["eager", "hir", "hir graph"]
    assert all(ms >= 0.0 for ms in times.values())


def test_each_variant_gets_its_own_median() -> None:
    """A slow variant measures slow, a fast one fast, though they alternate."""

    def slow() -> None:
        time.sleep(0.02)

    times = timed_interleaved({"fast": lambda: None, "slow": slow}, reps=3, warmup=0, device="cpu")
    assert times["slow"] >= 15.0
    assert times["fast"] < 10.0


def test_no_warm_up_and_the_median_of_the_rounds() -> None:
    durations = iter([0.0, 0.03, 0.0])  # the second of three repetitions is the outlier

    def uneven() -> None:
        time.sleep(next(durations))

    times = timed_interleaved({"uneven": uneven}, reps=3, warmup=0, device="cpu")
    assert times["uneven"] < 20.0


def test_no_repetitions_is_refused() -> None:
    with pytest.raises(ValueError, match="reps must be at least 1, got 0"):
        timed_interleaved({"eager": lambda: None}, reps=0, warmup=1, device="cpu")
