"""
The first call of a `hir.compile`d function on a GPU: the lowerings the cost model left close
(frontend/lowering_choice.py), each replayed as a CUDA graph and run eagerly, run a few times on
the call's own inputs, and the fastest is kept. The contenders are timed round-robin
(`medians_interleaved`): the GPU's clocks are still rising after the compile, and a contender
timed first, in a block of its own, would be measured slower than one timed last. On a mesh every
rank times the same contenders in the same order, and the slowest rank's time decides, so that
every rank keeps the same program.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

WARMUP = 2
REPEATS = 5
ROUNDS = 7
"""Timed rounds of `medians_interleaved` (each contender once per round)."""
WARMUP_SECONDS = 0.3
"""
The least warm-up of a one-process measurement on a GPU: a GPU just out of idle runs at clocks
a sustained run does not keep, and a program that overlaps GEMMs with memory-bound work (the
batch in stream chunks) gains only at the sustained ones.
"""


def median_ms(
    run: Callable[[], Any],
    device: torch.device,
    synchronize_ranks: Callable[[], None],
    warmup: int = WARMUP,
    repeats: int = REPEATS,
) -> float:
    """
    The median ms of `repeats` runs after `warmup`, each started together on every rank: CUDA
    events on a GPU, the wall clock on CPU. (hir-calibrate times with it too.)
    """
    for _ in range(warmup):
        run()
    return statistics.median(time_once(run, device, synchronize_ranks) for _ in range(repeats))


def medians_interleaved(
    runs: Sequence[Callable[[], Any]],
    device: torch.device,
    synchronize_ranks: Callable[[], None],
    failed: Callable[[BaseException], bool],
    warmup: int = WARMUP,
    rounds: int = ROUNDS,
    failed_anywhere: Callable[[bool], bool] = bool,
    warmup_seconds: float = 0.0,
) -> tuple[list[float], list[BaseException | None]]:
    """
    The median ms of each of `runs`, timed round-robin: `warmup` rounds, then `rounds` rounds in
    which each runs once (started together on every rank, as `median_ms`). A run that raises an
    error `failed` accepts (a capture refused or failed) is out from then on: its time is inf and
    its error is returned; any other error propagates. After each run of the first round, the
    ranks agree through `failed_anywhere` (true where any rank's run failed) whether the run is
    out: a capture that fails on one rank only (its memory, say) then drops the contender on
    every rank, whose later runs would wait for the missing rank's collectives. With
    `warmup_seconds` (one process only: ranks would run different counts), the warm-up rounds go
    on until that much time has passed (WARMUP_SECONDS).
    """
    errors: list[BaseException | None] = [None] * len(runs)
    samples: list[list[float]] = [[] for _ in runs]
    began = time.perf_counter()
    k = timed = 0
    while timed < rounds and any(e is None for e in errors):
        # Time never runs backwards: once over, the warm-up does not come back.
        warming = k < warmup or time.perf_counter() - began < warmup_seconds
        for j, run in enumerate(runs):
            if errors[j] is not None:
                continue
            try:
                if warming:
                    run()
                else:
                    samples[j].append(time_once(run, device, synchronize_ranks))
            except BaseException as err:
                if not failed(err):
                    raise
                errors[j] = err
            if k == 0 and failed_anywhere(errors[j] is not None) and errors[j] is None:
                errors[j] = RuntimeError("the run failed on another rank")
        if warming and device.type == "cuda":
            torch.cuda.synchronize(device)  # the warm-up's time is the device's, not the host's queue
        if not warming:
            timed += 1
        k += 1
    return [statistics.median(s) if errors[j] is None else math.inf for j, s in enumerate(samples)], errors


def any_rank(flag: bool, device: torch.device) -> bool:
    """Whether `flag` holds on any rank of the job (this process's flag without one)."""
    return slowest_rank([float(flag)], device)[0] > 0


def time_once(run: Callable[[], Any], device: torch.device, synchronize_ranks: Callable[[], object]) -> float:
    """The ms of one run, started after the ranks meet and the device is idle (the benchmarks time with it too)."""
    synchronize_ranks()
    if device.type != "cuda":
        began = time.perf_counter()
        run()
        return (time.perf_counter() - began) * 1e3
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def slowest_rank(times: Sequence[float], device: torch.device) -> list[float]:
    """Each candidate's time maxed over the ranks of the job (itself without one)."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() == 1:
        return list(times)
    finite = [t if math.isfinite(t) else 1e30 for t in times]  # a candidate that failed anywhere loses everywhere
    shared = torch.tensor(finite, dtype=torch.float64, device=device if dist.get_backend() == "nccl" else "cpu")
    dist.all_reduce(shared, op=dist.ReduceOp.MAX)
    return shared.tolist()


def synchronize_ranks() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()
