"""
Mutation test of the race checker. In the lowered programs of the test corpus (tests/race_mutants.py:
examples/ and the lit inputs that stream-lowering accepts, with each communication backend), each
`hir.synchronize`, `hir.wait` and `hir.barrier` is deleted in turn (one mutant per op) and the program is run
with the race checker, with 2, 3 and 1 streams. Every mutant must be killed (a run reports a race)
unless the deleted op orders nothing that another edge does not already order: those mutants are
listed below, each with the argument. The test fails when a mutant outside the lists survives
(the score dropped), when a listed one is killed (the argument no longer holds: remove it), when
a run fails with something else than a race, and when the corpus shrinks.

Last measured (CPU): single device, 157 programs, 178 mutants, 177 killed, 1 equivalent (100% of
the others); two ranks (gloo, the ring backend included), 697 mutants, 596 killed, 101 equivalent
(100%).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch.distributed as dist
from race_mutants import NUM_STREAMS_ORIGINAL, PIPELINES, corpus, hand_written, mutants, verdict
from ranks import run_ranks

MUTANTS_SCRIPT = Path(__file__).resolve().parent / "race_mutants.py"

EQUIVALENT_SINGLE_DEVICE = {
    "tests/lit/passes/fusion-segment/stream_compatibility.mlir:different_chunks/any-backend/hir.synchronize#3": (
        "the join after the second loop (%n, 4 chunks on streams i mod n). The third loop (%r, 8 rows) "
        "runs on every stream the second one ran on, each after its own second-loop work, and the caller's "
        "stream joins each of them at its end; the second loop's accesses (read %e, write %n) conflict with "
        "nothing the third loop or the caller's stream does before that. Redundant."
    ),
}

# ag_matmul_by_device with the copy-engine backend, with and without chunks, the loop over the
# shards of decompose_resharding's @shared_gather, and the loop over the
# 0-d shards of copy_engine_scalar_shard (one push each, so `chunks` changes nothing there): hir.synchronize#2
# and the barrier of the peeled first iteration are inside `scf.if %remote` of the peeled first
# iteration (hir.barrier#0, or #1 after the release barrier at the start with release=start),
# hir.synchronize#6 is the `hir.synchronize %comm` before the return.
_DEAD = (
    "dead code: the peeled first iteration (i = 0) multiplies each device's own shard (d = (0 + rank) mod D "
    "= rank), so its `scf.if %remote` never runs and this `hir.synchronize %comm` never executes"
)
_REDUNDANT_COMM_JOIN = (
    "redundant: every push on the comm stream is followed, in the same iteration, by `hir.barrier` on the "
    "comm stream and by `hir.synchronize %comm` on the compute stream, which the caller's stream joins "
    "at the end of the iteration: the caller's stream is already after all the comm stream's work"
)
EQUIVALENT_MULTIDEVICE = {
    f"{program}/{backend}/{op}": reason
    for program, backends in (
        (
            "examples/multidevice/ag_matmul_by_device.mlir:main",
            ("copy-engine", "copy-engine-chunks", "copy-engine-start"),
        ),
        ("tests/lit/passes/multidevice/copy_engine_scalar_shard.mlir:main", ("copy-engine", "copy-engine-start")),
        ("tests/lit/passes/multidevice/shard_slots_packed.mlir:main", ("copy-engine", "copy-engine-start")),
        # The streamed consumer of decompose_resharding's @shared_gather: the same loop over the shards
        # (the whole-tensor gather its two other consumers share is an NCCL all-gather before it).
        (
            "tests/lit/passes/multidevice/decompose_resharding.mlir:shared_gather",
            ("copy-engine", "copy-engine-chunks", "copy-engine-start"),
        ),
    )
    for backend in backends
    for dead_barrier in ("hir.barrier#1" if backend == "copy-engine-start" else "hir.barrier#0",)
    for op, reason in (
        ("hir.synchronize#2", _DEAD),
        (dead_barrier, _DEAD.replace("this `hir.synchronize %comm`", "its `hir.barrier`")),
        ("hir.synchronize#6", _REDUNDANT_COMM_JOIN),
    )
}

# The same loops over the shards with the ring backend (passes/ring_shards.py): the step of the peeled
# first iteration, its `hir.wait` and the worker's `hir.synchronize %comm` (#2), is inside its
# `scf.if %remote`. decompose_resharding's @shared_gather waits for its NCCL all-gather first (wait #0).
EQUIVALENT_MULTIDEVICE |= {
    f"{program}/ring/{op}": _DEAD.replace("this `hir.synchronize %comm`", what)
    for program, first_wait in (
        ("examples/multidevice/ag_matmul_by_device.mlir:main", "hir.wait#0"),
        ("tests/lit/passes/multidevice/copy_engine_scalar_shard.mlir:main", "hir.wait#0"),
        ("tests/lit/passes/multidevice/shard_slots_packed.mlir:main", "hir.wait#0"),
        ("tests/lit/passes/multidevice/decompose_resharding.mlir:shared_gather", "hir.wait#1"),
    )
    for op, what in (
        ("hir.synchronize#2", "this `hir.synchronize %comm`"),
        (first_wait, "the `hir.wait` of its collective-permute"),
    )
}

# The copy-engine reduce-scatter and all-reduce (passes/copy_engine_reduce.py). In walk order, the
# reduce-scatter's hir.synchronize ops are: #0 the comm stream's fork, #1 the workers' fork, #2 the
# push waiting for a remote GEMM, #3 the reduction stream waiting for the comm stream (after the
# barrier), #4 the reduction stream waiting for the own GEMM, #5 the caller's stream joining the
# worker, #6 the caller's stream waiting for the reduction stream after the loop. The all-reduce adds
# #5 the comm stream waiting for the reduction (the all-gather's pushes) and #6 the reduction stream
# waiting for the comm stream (after the all-gather barrier), so its join of the worker is #7.
_WORKER_JOIN = (
    "redundant: the join of the worker at the end of each iteration. The worker's last work in the "
    "iteration is the launch of the own partial (the producer's last piece), which the reduction stream "
    "waits for (hir.synchronize %s) before its adds, and the caller's stream waits for the reduction stream "
    "right after the loop"
)
_COMM_FORK = (
    "redundant: the comm stream's fork from the caller's stream when no release barrier starts the comm "
    "stream. Its first work is a push, after `hir.synchronize %s` on a worker, which forked from the caller's "
    "stream, so every access of the comm stream is already ordered after the caller's stream at entry"
)
_ALLREDUCE_RELEASE = (
    "redundant: a release barrier for the all-reduce, asked for by `release`. The all-gather barriers of the "
    "pipeline already order every read of a receive buffer before the peers' next-run pushes (see "
    "`_release` in passes/copy_engine_reduce.py), and the race checker finds every access ordered without it"
)
# The reduce-scatter of the example, one whose producer is a tanh after the matmul, and the TP MLP
# with its rows in one chunk (its all-gather an NCCL collective before the loop, waited for).
_REDUCE_SCATTERS = (
    "examples/multidevice/matmul_reduce_scatter.mlir:main",
    "tests/lit/passes/multidevice/copy_engine_reduce_options_invalid.mlir:main",
    "examples/multidevice/tp_mlp.mlir:main",
)
_REDUCE_SCATTER = _REDUCE_SCATTERS[0]
# A reduce-scatter whose output a tanh reads in the same iteration: #5 is the worker waiting for the
# reduction stream before the tanh, #6 the caller's stream joining the worker, #7 the caller's
# stream waiting for the reduction stream after the loop.
_CONSUMER = "tests/lit/passes/multidevice/copy_engine_reduce_consumer.mlir:main"
_REDUCE_JOIN_AFTER_CONSUMER = (
    "redundant: the caller's stream waiting for the reduction stream after the loop, when the worker already "
    "waited for it (before the tanh that reads the reduced chunk) and the caller's stream joined the worker "
    "at the end of the iteration"
)
_ALLREDUCE = "examples/multidevice/matmul_allreduce.mlir:main"
# The same all-reduce with its rows in one chunk (the input that by-shard leaves as written).
_ALLREDUCES = (_ALLREDUCE, "tests/lit/passes/fusion-stream-overlap/by_shard.mlir:main")
_ALL_COPY_ENGINE = ("copy-engine", "copy-engine-chunks", "copy-engine-start", "copy-engine-end")
EQUIVALENT_MULTIDEVICE |= {
    # A loop of one iteration (the TP MLP's rows in one chunk, by_shard.mlir) runs on the caller's
    # stream (hir-expand-stream-loops): no worker to join.
    **{
        f"{program}/{backend}/hir.synchronize#5": _WORKER_JOIN
        for program in _REDUCE_SCATTERS
        if program != "examples/multidevice/tp_mlp.mlir:main"
        for backend in ("copy-engine", "copy-engine-chunks", "copy-engine-end")
    },
    **{f"{program}/copy-engine-end/hir.synchronize#0": _COMM_FORK for program in _REDUCE_SCATTERS},
    "tests/lit/passes/multidevice/copy_engine_reduce_scatter_one_chunk.mlir:main/copy-engine-end/hir.synchronize#0": (
        _COMM_FORK
    ),
    **{f"{_ALLREDUCE}/{backend}/hir.synchronize#7": _WORKER_JOIN for backend in _ALL_COPY_ENGINE},
    # With release=start, a loop of one iteration forks no comm stream (its first work is the first
    # push's wait, then the release barrier): no fork to delete in by_shard.mlir.
    **{
        f"{p}/{backend}/hir.synchronize#0": _COMM_FORK
        for p in _ALLREDUCES
        for backend in _ALL_COPY_ENGINE
        if not (p != _ALLREDUCE and backend == "copy-engine-start")
    },
    **{
        f"{_CONSUMER}/{backend}/hir.synchronize#7": _REDUCE_JOIN_AFTER_CONSUMER
        for backend in ("copy-engine", "copy-engine-chunks", "copy-engine-end")
    },
    f"{_CONSUMER}/copy-engine-end/hir.synchronize#0": _COMM_FORK,
    **{f"{p}/copy-engine-start/hir.barrier#0": _ALLREDUCE_RELEASE for p in _ALLREDUCES},
    **{f"{p}/copy-engine-end/hir.barrier#2": _ALLREDUCE_RELEASE for p in _ALLREDUCES},
    # The send of a strided slice in a stream loop goes from a contiguous staging copy, allocated in
    # the iteration, that nothing writes or reads after the send.
    "tests/lit/passes/resharding/strided_slice_in_loop.mlir:main/nccl/hir.wait#0": (
        "redundant: the wait of an hir.send whose buffer is the iteration's staging copy of the slice, "
        "which no op writes or reads after the send"
    ),
}

# decompose_resharding's @left_alone is a real copy-engine all-reduce: matmul_allreduce's pipeline
# (4 chunks of 32x48 over mesh [0, 1]) whose reduced chunk a relu reads in the same iteration, plus
# an NCCL all-gather of %x after the loop. Its hir.synchronize ops in walk order: #0 the comm
# stream's fork, #1 the workers' fork, #2 the push waiting for the remote GEMM, #3 the reduction
# stream waiting for the comm stream, #4 the reduction stream waiting for the own GEMM, #5 the comm
# stream waiting for the reduction (all-gather pushes), #6 the reduction stream waiting for the comm
# stream, #7 the worker waiting for the reduction stream before the relu, #8 the caller's stream
# joining the worker, #9 the caller's stream waiting for the reduction stream after the loop. The
# release barrier is hir.barrier#0 with release=start and hir.barrier#2 (before the return) with
# release=end. Every other mutant (the all-gather's hir.wait included) is killed.
_LEFT_ALONE = "tests/lit/passes/multidevice/decompose_resharding.mlir:left_alone"
EQUIVALENT_MULTIDEVICE |= {
    **{
        f"{_LEFT_ALONE}/{backend}/hir.synchronize#0": _COMM_FORK
        + (" (the release barrier at the start accesses no buffer)" if backend == "copy-engine-start" else "")
        for backend in _ALL_COPY_ENGINE
    },
    **{
        f"{_LEFT_ALONE}/{backend}/hir.synchronize#9": _REDUCE_JOIN_AFTER_CONSUMER.replace("the tanh", "the relu")
        for backend in _ALL_COPY_ENGINE
    },
    f"{_LEFT_ALONE}/copy-engine-start/hir.barrier#0": _ALLREDUCE_RELEASE,
    f"{_LEFT_ALONE}/copy-engine-end/hir.barrier#2": _ALLREDUCE_RELEASE,
}

# The TP MLP pipelined by shard (passes/copy_engine_shard_reduce.py): in walk order, #0 the comm
# stream's fork, #1 the workers' fork; the peeled first (local) iteration's remote branches (never
# taken): barrier#0 (the all-gather push's), #2 the worker waiting for the comm stream, #3 the push
# stream waiting for the worker; #4 the caller's stream joining the peeled iteration's worker; the
# loop's barrier#1, #5 and #6; #7 the caller's stream joining the worker at the end of an iteration;
# after the loop #8 the comm stream waiting for the push stream, barrier#2 (every partial landed),
# #9 the caller's stream waiting for the comm stream (before the adds); then the all-gather's own
# end: #10 the caller's stream waiting for the comm stream again and barrier#3 (release=end).
_BY_SHARD = "examples/multidevice/tp_mlp.mlir:main/copy-engine-by-shard"
_BY_SHARD_PEELED = "dead: in the peeled first iteration, which works on this device's own shard (d == rank), the remote branch never runs"
EQUIVALENT_MULTIDEVICE |= {
    f"{_BY_SHARD}/hir.barrier#0": _BY_SHARD_PEELED,
    f"{_BY_SHARD}/hir.synchronize#2": _BY_SHARD_PEELED,
    f"{_BY_SHARD}/hir.synchronize#3": _BY_SHARD_PEELED,
    f"{_BY_SHARD}/hir.synchronize#7": (
        "redundant: the caller's join of the worker at the end of an iteration. The worker's last work in a "
        "remote iteration is the GEMM of the partial, which the push stream waits for before its push; the comm "
        "stream waits for the push stream after the loop, and the caller's stream for the comm stream"
    ),
    f"{_BY_SHARD}/hir.synchronize#10": "redundant: the caller's stream waited for the comm stream just before (#9)",
    f"{_BY_SHARD}/hir.barrier#3": (
        "redundant: the release barrier at the end. The barrier after the loop (#2) follows every read of the "
        "slots (the workers' GEMMs, which the push stream and then the comm stream wait for), and a peer's pushes "
        "of the next run follow that barrier; its pushes into the receive buffer also follow the next run's "
        "all-gather barriers, which this device reaches only after its adds"
    ),
}

# Sums to a rotating root without a broadcast, on the copy engines (passes/copy_engine.py,
# copy_engine_shard_reduce.py): in walk order, #0 the comm stream's fork, #1 the push stream
# waiting for the comm stream, #2 the workers' fork; #3 the push stream waiting for the worker in
# the peeled first iteration's remote branch (never taken), #4 the caller's stream joining that
# iteration's worker; in the loop #5 the push stream waiting for the worker, #6 the caller's join
# of the worker; after it #7 the comm stream waiting for the push stream, barrier#0 (every partial
# landed), #8 the caller's stream waiting for the comm stream before the adds; #9 the same again
# before the release barrier at the end (release=end). With release=start, #0 and #1 put the
# pushes after the start barrier, which follows the previous run's adds: both are killed there.
_REDUCE_ONLY_PEELED = (
    "dead: the peeled first iteration works on this device's own rows (d == rank): its remote branch never runs"
)
_REDUCE_ONLY_JOIN = (
    "redundant: the caller's join of the worker at the end of a later iteration. The worker's last work there is "
    "the GEMM of a remote partial, which the push stream waits for (#5) before its push; the comm stream waits for "
    "the push stream after the loop (#7), and the caller's stream for the comm stream (#8)"
)
_REDUCE_ONLY_END = "redundant: the caller's stream waited for the comm stream just before the adds (#8)"
_REDUCE_ONLY_FORKS = (
    "redundant with release=end: the comm stream's only work is after the loop, waiting for the push stream, whose "
    "every push waits for a worker (#5), forked from the caller's stream (#2)"
)
EQUIVALENT_MULTIDEVICE |= {
    f"{program}/{backend}/hir.synchronize#{k}": reason
    for program in (
        "tests/lit/passes/resharding/rotating_root.mlir#0:matmul_reduce",
        "tests/lit/passes/resharding/rotating_root_backends.mlir:main",
    )
    for backend in ("copy-engine", "copy-engine-start")
    for k, reason in (
        *(((0, _REDUCE_ONLY_FORKS), (1, _REDUCE_ONLY_FORKS)) if backend == "copy-engine" else ()),
        (3, _REDUCE_ONLY_PEELED),
        (6, _REDUCE_ONLY_JOIN),
        (9, _REDUCE_ONLY_END),
    )
}

# Two stream loops of 6 iterations each (fusion-hide-communication's unannotated case, nccl): the
# first writes %p on pool streams i mod num_streams, and #1 is the caller's join of its worker. The
# second loop runs on the same pool streams (the same 6 indices) and the caller joins each of them
# after it (#3), which covers the first loop's work on that stream, earlier in its order.
EQUIVALENT_MULTIDEVICE[
    "tests/lit/passes/fusion-hide-communication/unannotated.mlir:unannotated/nccl/hir.synchronize#1"
] = (
    "redundant: the second stream loop runs on the same pool streams and the caller's stream joins each of "
    "them after it (#3), which orders the first loop's writes of %p before the return"
)

# The lowerings of the multi-device corpus. The default run takes each backend once: nccl, the copy
# engines (their automatic chunk count and release barrier at the start), the copy-engine pipeline by
# shard and the ring. `chunks=2`, `release=start` and `release=end` only set options of the same
# copy-engine pipelines: they run in the long profile (HIR_FUZZ_PROFILE=long), which checks the whole
# corpus, the score of docs/testing.md.
LONG = os.environ.get("HIR_FUZZ_PROFILE") == "long"
MULTIDEVICE_BACKENDS = tuple(PIPELINES) if LONG else ("nccl", "copy-engine", "copy-engine-by-shard", "ring")

# The corpus as of writing; fewer means programs went missing from it.
MIN_PROGRAMS_SINGLE_DEVICE, MIN_HAND_WRITTEN, MIN_MUTANTS_SINGLE_DEVICE = 140, 50, 155
MIN_PROGRAMS_MULTIDEVICE, MIN_MUTANTS_MULTIDEVICE = (180, 690) if LONG else (160, 420)


def check_score(results: dict[str, str], equivalent: dict[str, str], minimum: int) -> None:
    errors = {name: v for name, v in results.items() if v.startswith("error")}
    assert not errors, f"mutants that failed with something else than a race: {errors}"
    survivors = {name for name, v in results.items() if v == "no race"}
    unexpected = sorted(survivors - equivalent.keys())
    killed = len(results) - len(survivors)
    score = f"{killed} of {len(results)} mutants killed, {len(survivors)} survived"
    assert not unexpected, f"{score}; not argued to be equivalent:\n  " + "\n  ".join(unexpected)
    stale = sorted(name for name in equivalent if name not in survivors)
    assert not stale, "listed as equivalent but killed or no longer in the corpus:\n  " + "\n  ".join(stale)
    assert len(results) >= minimum, f"{score}: the corpus shrank below {minimum} mutants"
    print(f"{score}: {killed} of {len(results) - len(equivalent)} non-equivalent ones (100%)")


RACY_HAND_WRITTEN = {
    "tests/lit/passes/hir-loop-fusion/different_streams.mlir#0:different_callers/hand-written": (
        "an input of hir-loop-fusion's tests, not of the stream-lowering shape: the second loop forks from and "
        "joins into %other, a pool stream that never waits for the caller's stream nor is waited by it, so it "
        "reads %buf1 before the first loop's workers are known to have written it, and %buf2 is returned unjoined"
    ),
}


def test_single_device_corpus_and_mutants() -> None:
    """The corpus runs without a race (1 to 8 streams), and every non-equivalent mutant is killed."""
    programs = corpus(multidevice=False)
    written = hand_written()
    originals = {p.name: verdict(p.module, p.entry, num_streams=NUM_STREAMS_ORIGINAL) for p in programs + written}
    racy = {name: v for name, v in originals.items() if v != "no race"}
    assert racy.keys() == RACY_HAND_WRITTEN.keys(), racy
    assert all(v.startswith("race:") for v in racy.values()), racy
    assert len(programs) >= MIN_PROGRAMS_SINGLE_DEVICE
    assert len(written) >= MIN_HAND_WRITTEN
    results = {}
    for mutant in mutants(programs):
        with mutant.applied() as module:
            results[mutant.name] = verdict(module, mutant.program.entry)
    check_score(results, EQUIVALENT_SINGLE_DEVICE, MIN_MUTANTS_SINGLE_DEVICE)


@pytest.mark.distributed
@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_multidevice_corpus_and_mutants() -> None:
    """The programs that communicate, on 2 ranks in one job; races through symmetric memory included."""
    pipelines = ",".join(MULTIDEVICE_BACKENDS)
    result = run_ranks([str(MUTANTS_SCRIPT), "--multidevice", "--pipelines", pipelines], timeout=480)
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr[-3000:]}"
    assert result.returncode == 0, output
    originals = dict(re.findall(r"^ORIGINAL (\S+) (.*)$", result.stdout, re.MULTILINE))
    assert len(originals) >= MIN_PROGRAMS_MULTIDEVICE, output
    assert all(v == "no race" for v in originals.values()), originals
    results = dict(re.findall(r"^MUTANT (\S+) (.*)$", result.stdout, re.MULTILINE))
    # The equivalent mutants of the lowerings this run checks.
    equivalent = {k: v for k, v in EQUIVALENT_MULTIDEVICE.items() if k.rsplit("/", 2)[1] in MULTIDEVICE_BACKENDS}
    check_score(results, equivalent, MIN_MUTANTS_MULTIDEVICE)
    # The push into the peer's buffer, read by the peer's compute stream that no longer waits for the
    # comm stream after the barrier, or with no barrier in between: only the cross-rank check sees it.
    program = "examples/multidevice/ag_matmul_by_device.mlir:main/copy-engine"
    pattern = r"race on device \d's %a_gathered_symmetric: the read by .* on device \d's pool stream"
    for mutant in ("hir.synchronize#4", "hir.barrier#1"):
        assert re.search(pattern, results[f"{program}/{mutant}"])
    # Without the final barrier a device returns while its peer may still read what it pushed.
    assert "@main returns on device" in results[f"{program}/hir.barrier#2"]
    # The reduce-scatter: without a chunk's barrier the peer adds up partials that may not have
    # landed; without the release barrier at the start, the next run's pushes may overwrite
    # partials that the peer still adds up.
    scatter = f"{_REDUCE_SCATTER}/copy-engine"
    landed = r"race on device \d's %received: the read by .* and the write by .* are not ordered"
    assert re.search(landed, results[f"{scatter}/hir.barrier#1"])
    assert "@main returns on device" in results[f"{scatter}/hir.barrier#0"]
