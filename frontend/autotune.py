"""
The first call of a `hir.compile`d function on a GPU, where the cost model left two lowerings
close (frontend/lowering_choice.py): each runs a few times on the call's own inputs, as the calls
will run (replayed as a CUDA graph or not), and the faster one is kept. On a mesh every rank times
the same candidates in the same order, and the slowest rank's time decides, so that every rank
keeps the same program.
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
    samples = []
    for _ in range(repeats):
        synchronize_ranks()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        else:
            began = time.perf_counter()
            run()
            samples.append((time.perf_counter() - began) * 1e3)
    return statistics.median(samples)


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
