"""
Test helpers next to the tests (device_under_test, fuzz_programs) are importable by name.

The multi-process tests (marked `distributed`) and the fuzzers run first: they are the longest,
and with `pytest -n` a long test that starts last keeps one worker busy after the others are done.
"""

import gc
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from skip_summary import pytest_terminal_summary  # noqa: F401  (the skip reasons, grouped, at the end)

# The cost model (overlap=auto, hir.compile's default lowering on CUDA) decides with the built-in
# device constants in tests, not with a calibration this machine may have cached.
os.environ.setdefault("HIR_DEVICE_CONSTANTS", "builtin")
# Fresh buffers hold NaN or a sentinel (runtime/poison.py), so that a read of memory never written
# fails a numeric test on CPU as it would on a GPU; the rank processes the tests start inherit it.
os.environ.setdefault("HIR_POISON", "1")

LONG_FIRST = ("test_race_mutations.py", "test_fuzz_stream_lowering.py", "test_fuzz_multidevice.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def long_first(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("distributed") or item.path.name in LONG_FIRST else 1

    items.sort(key=long_first)  # stable: the order within each group stays


def pytest_collection_finish(session: pytest.Session) -> None:
    # What collection made (torch, xDSL, hir, every test module) lives to the end: frozen, no
    # collection rescans it (they took a sixth of a test file's CPU, 4.9 of 30 s in tests/test_training.py).
    gc.collect()
    gc.freeze()
