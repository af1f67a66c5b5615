"""
Differential fuzzer of `--stream-lowering` over meshes of devices: hypothesis draws a batch of
random multi-device programs (tests/fuzz/multidevice.py), each with a pipeline (any
communication backend: nccl, copy-engine with its chunks, ring; either fusion-segment policy;
`propagate-sharding=true` for a program with unannotated intermediates; half of them after
`fusion-hide-communication`, as `hir.compile` lowers) and a number of streams,
and one job of gloo processes on the CPU checks them all against the fusion-level
reference on the unsharded inputs (tests/fuzz/driver.py), since a job costs seconds to start.

Profiles (tests/fuzz/profiles.py): `ci` checks a fixed batch on 2 ranks and a small one on 1 (a
mesh of one device, with every stream-lowering option drawn); `long` (`HIR_FUZZ_PROFILE=long`,
`HIR_FUZZ_SEED=N` repeats a batch) larger batches on 1, 2 and 4 ranks.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import torch.distributed as dist
from fuzz.check import POLICIES
from fuzz.driver import Case, write_cases
from fuzz.mesh_rules import propagated_problem, serial_problem
from fuzz.multidevice import multidevice_programs
from fuzz.profiles import PROFILE, batch_seed, draw_batch, examples
from fuzz.values import (
    ALL_GATHER,
    ALL_REDUCE,
    BROADCAST,
    BROADCAST_AXIS,
    CONTRACTION_PARTIAL_SUM,
    GATHER_IN_CONTRACTION_LOOP,
    MESH_CHANGE,
    MOVED_DIDX,
    REDUCE_SCATTER,
    SHARD_LOOP,
    SHARD_LOOP_INTO_OP,
    SHARD_LOOP_SET,
    UNANNOTATED,
    UNEVEN,
    FuzzProgram,
)
from hypothesis import strategies as st
from ranks import run_ranks

from hir.passes.expand_stream_loops import JOINS
from hir.passes.lower_communication import COMM_PRIORITIES
from hir.passes.stream_lowering import INTERMEDIATES
from hir.passes.stream_overlap import OVERLAP_MODES
from hir.passes.symmetric_memory import RELEASES

BACKENDS = ("nccl", "copy-engine", "ring")
"""hir-lower-communication's backends, drawn alike."""
PROPAGATE = "propagate-sharding=true"
SCHEDULING_OPTIONS: dict[str, tuple[str, ...]] = {
    "overlap": OVERLAP_MODES,
    "release": RELEASES,
    "comm-priority": COMM_PRIORITIES,
    "join": JOINS,
    "intermediates": INTERMEDIATES,
}
"""stream-lowering's options drawn on one rank (each default first), besides the backend, chunks and policy."""
DRIVER = Path(__file__).resolve().parent / "fuzz" / "driver.py"
JOB_SIZE = 400
"""Programs per job (a long batch runs in several)."""
CASE = tuple[FuzzProgram, str, int]
"""A program, the pipeline that lowers it and a number of streams."""
REQUIRED_FEATURES: dict[str, Callable[[CASE], bool]] = {
    "allgather": lambda case: ALL_GATHER in case[0].facts,
    "allreduce": lambda case: ALL_REDUCE in case[0].facts,
    "reduce_scatter": lambda case: REDUCE_SCATTER in case[0].facts and "backend=ring" not in case[1],
    "broadcast": lambda case: BROADCAST in case[0].facts,
    "broadcast-by-shard": lambda case: SHARD_LOOP in case[0].facts and "copy-engine" not in case[1],
    "copy-engine-push": lambda case: (
        SHARD_LOOP_INTO_OP in case[0].facts
        and SHARD_LOOP_SET not in case[0].facts
        and "copy-engine" in case[1]
        and pushes_into_peers(case)
    ),
    "matmul-and-communication-in-one-loop": lambda case: GATHER_IN_CONTRACTION_LOOP in case[0].facts,
    "matmul-then-sum-over-didx": lambda case: CONTRACTION_PARTIAL_SUM in case[0].facts,
    "collective_permute": lambda case: (
        "backend=ring" in case[1] and bool(case[0].facts & {ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER})
    ),
    "propagated-sharding": lambda case: UNANNOTATED in case[0].facts,
    "moved-didx": lambda case: MOVED_DIDX in case[0].facts and not case[0].may_reject,
    "broadcast-into-didx": lambda case: BROADCAST_AXIS in case[0].facts and not case[0].may_reject,
    "mesh-change": lambda case: MESH_CHANGE in case[0].facts and not case[0].may_reject,
    "uneven": lambda case: UNEVEN in case[0].facts and "backend=" not in case[1] and not case[0].may_reject,
}
"""
What the lowered programs of a `ci` batch must do (the features tests/fuzz/driver.py reports),
and the generator's facts that predict each: the batch is chosen to cover them all.
"""
ONE_RANK_FEATURES = (
    "allgather",
    "allreduce",
    "reduce_scatter",
    "broadcast",
    "copy-engine-push",
    "matmul-then-sum-over-didx",
    "propagated-sharding",
    "moved-didx",
)
"""
Those a mesh of one device can show: it has no other mesh to move values to, no uneven axis
(every didx axis has extent 1 = D), a loop over its one shard has a constant root, and the ring
backend keeps a collective over one device as it is.
"""
POOL = 8
"""A `ci` batch of N cases is chosen from the first POOL * N drawn."""
PER_FEATURE = 3


def pushes_into_peers(case: CASE) -> bool:
    """
    Whether the lowered program pushes into a peer's memory (`hir.peer_view`). The generator's
    facts only suggest it: the copy-engine backend leaves a loop to the collectives when, for
    one, its gathered buffer outlives it, so the few cases the facts suggest are lowered here.
    """
    import hir

    try:
        return "hir.peer_view" in str(hir.run_pipeline(hir.parse(case[0].text), case[1]))
    except Exception:  # a program the lowering refuses (with a diagnostic) pushes nothing
        return False


def choose(drawn: list[CASE], count: int, features: Sequence[str] = tuple(REQUIRED_FEATURES)) -> list[CASE]:
    """
    `count` cases: for each required feature, PER_FEATURE that the generator predicts do it (a
    prediction can miss: the copy-engine backend leaves a loop alone when a gathered buffer
    outlives it), spread over the pool since neighbours are often alike; then the first others.
    """
    chosen: list[CASE] = []
    for predicts in [REQUIRED_FEATURES[f] for f in features]:
        wanted = PER_FEATURE - sum(predicts(case) for case in chosen)
        candidates = [case for case in drawn if predicts(case) and all(case is not c for c in chosen)]
        if wanted > 0 and candidates:
            chosen += candidates[:: max(1, len(candidates) // wanted)][:wanted]
    chosen += [case for case in drawn if all(case is not c for c in chosen)][: count - len(chosen)]
    return chosen[:count]


pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(
        not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo"
    ),
]


def may_reject(program: FuzzProgram, pipeline: str) -> bool:
    """
    Whether a refusal with a diagnostic is an acceptable answer: the generator kept a placement
    the lowering refuses, fusion-propagate-sharding chose one (mesh_rules.propagated_problem), or
    `overlap=never` / `auto` lowers a serial form the lowering refuses (mesh_rules.serial_problem).
    """
    backend = re.search(r"backend=(\S+?)[ }]", pipeline)
    chunks = re.search(r"chunks=(\d+)", pipeline)
    if "backend=copy-engine" in pipeline and "policy=resharding-only" in pipeline and "fusion.sum" in program.text:
        # The policy is drawn after the program: one that fuses a partial sum's producer with its
        # neighbours leaves the copy-engine backend a producer it cannot split by destination,
        # a documented refusal (passes/copy_engine_reduce.py) that the generator does not predict.
        return True
    if program.may_reject:
        return True
    options = (backend.group(1) if backend else BACKENDS[0], int(chunks.group(1)) if chunks else 0)
    if re.search(r"overlap=(never|auto)\b", pipeline):  # the serial form, always or where the model prefers it
        if serial_problem(program.text, *options, propagate=PROPAGATE in pipeline) is not None:
            return True
    return PROPAGATE in pipeline and propagated_problem(program.text, *options) is not None


@st.composite
def fuzz_cases(draw: st.DrawFn, world_size: int) -> CASE:
    """A program, the pipeline that lowers it and a number of streams."""
    backend = draw(st.sampled_from(BACKENDS))  # first: the generator predicts the backend's refusals
    chunks = draw(st.integers(0, 3)) if backend == "copy-engine" else 0  # and those of its chunks
    unannotate = draw(st.integers(0, 3)) == 0
    program = draw(multidevice_programs(world_size, unannotate=unannotate, backend=backend, chunks=chunks))
    options = []
    if (policy := draw(st.sampled_from(POLICIES))) != POLICIES[0]:
        options.append(f"policy={policy}")
    if backend != BACKENDS[0]:
        options.append(f"backend={backend}")
    if chunks:
        options.append(f"chunks={chunks}")
    if UNANNOTATED in program.facts:
        options.append(PROPAGATE)
    if world_size == 1:
        # The options that only schedule the same communication: on one device, every one of them.
        for option, values in SCHEDULING_OPTIONS.items():
            if (value := draw(st.sampled_from(values))) != values[0]:
                options.append(f"{option}={value}")
    pipeline = "stream-lowering" + (f"{{{' '.join(options)}}}" if options else "")
    streams = draw(st.integers(1, 4))
    if draw(st.booleans()):  # hir.compile's order: work no collective waits for moved after one
        pipeline = f"fusion-hide-communication,{pipeline}"
    return program, pipeline, streams


def check_batch(
    tmp_path: Path, world_size: int, count: int, features: Sequence[str] = tuple(REQUIRED_FEATURES)
) -> collections.Counter[str]:
    """
    Draws `count` cases (in `ci`, chosen to show `features`), checks them in multi-process jobs;
    returns how often each feature occurred.
    """
    seed = batch_seed()
    if PROFILE == "ci":
        drawn = choose(draw_batch(fuzz_cases(world_size), POOL * count, seed), count, features)
    else:
        drawn = draw_batch(fuzz_cases(world_size), count, seed)
    cases = [
        Case(f"p{k}", program.text, pipeline, streams, program.seed, may_reject(program, pipeline))
        for k, (program, pipeline, streams) in enumerate(drawn)
    ]
    tally: collections.Counter[str] = collections.Counter()
    for start in range(0, len(cases), JOB_SIZE):
        job = cases[start : start + JOB_SIZE]
        path = tmp_path / f"cases{start}.json"
        write_cases(path, job)
        result = run_ranks([str(DRIVER), str(path)], processes=world_size, timeout=60 + 3 * len(job))
        verdicts = dict(re.findall(r"^CASE (\S+) (.*)$", result.stdout, re.MULTILINE))
        by_name = {c.name: c for c in job}
        failed = {name: v for name, v in verdicts.items() if not v.startswith(("OK", "REFUSED", "SKIPPED"))}
        if missing := [c.name for c in job if c.name not in verdicts]:
            started = re.findall(r"^START (\S+)$", result.stdout, re.MULTILINE)
            culprit = started[-1] if started and started[-1] in missing else missing[0]
            failed.setdefault(culprit, f"the job ended (exit {result.returncode}) before its verdict")
        if failed:
            reports = [
                f"{name}: {verdict}\n{by_name[name].text}-- reproduce: save it as repro.mlir, then "
                f"{by_name[name].command_line(world_size)}"
                for name, verdict in failed.items()
            ]
            pytest.fail(
                f"{len(failed)} of {len(job)} programs failed on {world_size} ranks (batch seed {seed}, "
                f"HIR_FUZZ_SEED={seed} repeats it):\n\n" + "\n\n".join(reports) + f"\n\n--- job stdout (tail)\n"
                f"{result.stdout[-3000:]}\n--- stderr (tail)\n{result.stderr[-3000:]}"
            )
        assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        for verdict in verdicts.values():
            word, _, found = verdict.partition(" ")
            tally[word] += 1
            if word == "OK":
                tally.update(found.split(",") if found else [])
    print(f"\n{world_size} ranks, batch seed {seed}: {dict(sorted(tally.items()))}")
    return tally


def test_two_ranks(tmp_path: Path) -> None:
    tally = check_batch(tmp_path, 2, examples("two-ranks"))
    if PROFILE == "ci":
        missing = [f for f in REQUIRED_FEATURES if not tally[f]]
        assert not missing, f"the lowered programs of the batch lack {missing}: {tally}"


def test_one_rank(tmp_path: Path) -> None:
    """
    A mesh of one device (`mesh = [0]`, every didx axis of extent 1), as on a one-GPU machine:
    each program run without a communicator and over a process group of one (tests/fuzz/driver.py),
    with every stream-lowering option drawn (`SCHEDULING_OPTIONS`).
    """
    tally = check_batch(tmp_path, 1, examples("one-rank"), ONE_RANK_FEATURES)
    if PROFILE == "ci":
        missing = [f for f in ONE_RANK_FEATURES if not tally[f]]
        assert not missing, f"the lowered programs of the batch lack {missing}: {tally}"


@pytest.mark.skipif(examples("four-ranks") == 0, reason="4 ranks run in the long profile (HIR_FUZZ_PROFILE=long)")
def test_four_ranks(tmp_path: Path) -> None:
    check_batch(tmp_path, 4, examples("four-ranks"))
