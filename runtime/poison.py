"""
Poisoned allocations: a checked mode in which every buffer the runtime allocates starts as NaN
(floating point), the largest negative value (signed integers), the largest value (unsigned) or
True (booleans), instead of whatever the allocator hands out. A program that reads memory it never
wrote then gives a wrong answer on CPU too, where fresh memory is often zeros and hides it, as it
would on a GPU.

On with `HIR_POISON=1` in the environment (every process of a job reads it: the test suites and
CI set it), `hir-run --poison`, or `Program(..., poison=True)`. Poisoned: `hir.allocate`'s
buffers (a caller's preallocated output is the caller's, and is not touched) and a symmetric
buffer when it is first made, before any peer can see it (it is reused by later runs, whose
peers may already be writing into it).
"""

from __future__ import annotations

import os

import torch

ENVIRONMENT_VARIABLE = "HIR_POISON"


def enabled() -> bool:
    """Whether the environment asks for poisoned allocations."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "") not in ("", "0")


def poison_value(dtype: torch.dtype) -> float | int | bool:
    """What a fresh buffer of `dtype` holds in the poisoned mode: a value no correct program leaves there by chance."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    info = torch.iinfo(dtype)
    return info.min if info.min < 0 else info.max


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fills `t` with its dtype's poison value, in place; returns it."""
    if t.numel():
        t.fill_(poison_value(t.dtype))
    return t
