"""
Hypothesis profiles of the fuzz tests, and drawing a batch of examples in one go.

`ci` (the default) runs few examples, derandomized (the same ones every run); `long`
(`HIR_FUZZ_PROFILE=long`) runs many, from a fresh random seed unless `--hypothesis-seed=N` (or,
for batches, `HIR_FUZZ_SEED=N`) repeats one. `EXAMPLES[profile][test]` is how many.
"""

from __future__ import annotations

import os
import random
from typing import TypeVar

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

PROFILE = os.environ.get("HIR_FUZZ_PROFILE", "ci")
COUNT = os.environ.get("HIR_FUZZ_EXAMPLES")
"""Overrides the number of examples of every test (to try a profile quickly, or to run longer)."""
EXAMPLES: dict[str, dict[str, int]] = {
    "ci": {"single-device": 30, "one-rank": 12, "two-ranks": 30, "four-ranks": 0, "invalid-input": 160},
    "long": {"single-device": 5000, "one-rank": 400, "two-ranks": 1500, "four-ranks": 200, "invalid-input": 5000},
}

_COMMON = {"deadline": None, "suppress_health_check": list(HealthCheck), "print_blob": True}
settings.register_profile("ci", derandomize=True, database=None, **_COMMON)
settings.register_profile("long", **_COMMON)


def examples(test: str) -> int:
    return int(COUNT) if COUNT else EXAMPLES[PROFILE][test]


def settings_for(test: str) -> settings:
    """The settings of a test that hypothesis runs example by example."""
    return settings(settings.get_profile(PROFILE), max_examples=examples(test))


T = TypeVar("T")


def batch_seed() -> int:
    """The seed of a batch: fixed in `ci`, `HIR_FUZZ_SEED` or a random one in `long`."""
    if PROFILE == "ci":
        return 0
    return int(os.environ.get("HIR_FUZZ_SEED", random.randrange(2**32)))


def draw_batch(strategy: st.SearchStrategy[T], count: int, batch: int) -> list[T]:
    """
    `count` examples of `strategy` as hypothesis generates them for a test (small ones first,
    then larger, with its boundary-seeking heuristics), for a job that checks them all at once
    rather than one by one (there is then nothing to shrink: a failure names its program).
    """
    found: list[T] = []

    @settings(
        max_examples=count,
        derandomize=False,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(example: T) -> None:
        found.append(example)

    seed(batch)(collect)()
    return found
