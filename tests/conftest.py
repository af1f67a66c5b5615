"""Test helpers next to the tests (device_under_test, fuzz_programs) are importable by name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
