"""
Differential fuzzer of `--stream-lowering` on one device: random fusion DAGs (tests/fuzz/programs.py)
are run as written (the reference) and lowered (either fusion-segment policy); the lowered
program must verify, print text that parses back to the same module, and compute the same outputs
with any number of streams, on inputs laid out in memory in any way (transposed, strided, offset,
expanded views) and into preallocated outputs (docs/testing.md).

Profiles (tests/fuzz/profiles.py): `ci` unless the environment says `HIR_FUZZ_PROFILE=long`.
"""

from __future__ import annotations

import re

from device_under_test import DEVICE
from fuzz.check import LAYOUTS, OUTPUT_LAYOUTS, POLICIES, RunOptions, check_lowering
from fuzz.profiles import settings_for
from fuzz.programs import fusion_programs
from fuzz.values import FuzzProgram
from hypothesis import event, given
from hypothesis import strategies as st

from hir.dialects import fusion, hir

ELEMENT_TYPE = re.compile(r"tensor<(?:\d+x)*(\w+?)[,>]")
EMPTY = re.compile(r"tensor<(?:\d+x)*0x")


def coverage_events(program: FuzzProgram, lowered: object, options: RunOptions) -> None:
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
    for elt in sorted(set(ELEMENT_TYPE.findall(program.text)) - {"f32"}):
        event(f"element type {elt}")
    if EMPTY.search(program.text):
        event("an empty tensor")
    if any(layout != "contiguous" for layout in options.layouts):
        event("a non-contiguous input")
    if any(layout != "none" for layout in options.outputs):
        event("preallocated outputs")


run_options = st.builds(
    RunOptions,
    num_streams=st.integers(1, 8),
    policy=st.sampled_from(POLICIES),
    layouts=st.lists(st.sampled_from(LAYOUTS), max_size=4).map(tuple),
    outputs=st.lists(st.sampled_from(OUTPUT_LAYOUTS), max_size=3).map(tuple),
)


@settings_for("single-device")
@given(fusion_programs(int_matmul=DEVICE == "cpu"), run_options)
def test_stream_lowering_matches_reference(program: FuzzProgram, options: RunOptions) -> None:
    options = RunOptions(options.num_streams, options.policy, program.seed, options.layouts, options.outputs)
    lowered = check_lowering(program.text, options, may_reject=program.may_reject)
    if lowered is None:
        event("refused with a diagnostic (may_reject)")
        return
    coverage_events(program, lowered, options)
