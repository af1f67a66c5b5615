"""
Differential fuzzer of `--stream-lowering`: random fusion DAGs (tests/fuzz_programs.py) are run as
written (the reference) and lowered (either fusion-segment policy), and the lowered program must
verify and compute the same outputs with any number of streams (docs/testing.md).

Profiles: `ci` (300 examples, derandomized: the same programs every run) unless the environment
says `HIR_FUZZ_PROFILE=long` (5000 examples, a fresh random seed each run; pass
`--hypothesis-seed=N` to repeat one).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hir.dialects import fusion, hir

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_programs import POLICIES, FuzzProgram, check_lowering, fusion_programs

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow], "print_blob": True}
settings.register_profile("ci", max_examples=300, derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=5000, **_COMMON)
PROFILE = os.environ.get("HIR_FUZZ_PROFILE", "ci")


def coverage_events(program: FuzzProgram, lowered: object) -> None:
    """What the example exercised (`pytest --hypothesis-show-statistics` tallies these)."""
    event(f"stream ops: {min(program.num_stream_ops, 4)}{'+' if program.num_stream_ops >= 4 else ''}")
    loops = [op for op in lowered.walk() if isinstance(op, hir.ForOp)]  # type: ignore[attr-defined]
    launches_per_loop = [sum(isinstance(o, hir.LaunchOp) for o in loop.body.block.ops) for loop in loops]
    event(f"main loops: {sum(n > 0 for n in launches_per_loop)}")
    if any(n > 1 for n in launches_per_loop):
        event("a loop fused by hir-loop-fusion")
    launches = [op for op in lowered.walk() if isinstance(op, hir.LaunchOp)]  # type: ignore[attr-defined]
    if any(sum(isinstance(o, fusion.FusionOp) for o in launch.body.block.ops) > 1 for launch in launches):
        event("a multi-op segment launch")
    if any(isinstance(op, hir.AliasChunkOp) for op in lowered.walk()):  # type: ignore[attr-defined]
        event("stream(N) chunks")


@settings(settings.get_profile(PROFILE))
@given(fusion_programs(), st.integers(1, 8), st.sampled_from(POLICIES))
def test_stream_lowering_matches_reference(program: FuzzProgram, num_streams: int, policy: str) -> None:
    lowered = check_lowering(
        program.text, num_streams=num_streams, policy=policy, seed=program.seed, may_reject=program.may_reject
    )
    if lowered is None:
        event("refused with a diagnostic (may_reject)")
        return
    coverage_events(program, lowered)
