"""
Ranks that call a compiled tensor-parallel MLP with different signatures get one clear CallError
on every rank, before any collective runs (frontend/rank_agreement.py), and the function still
takes calls that agree afterwards:

- inference: rank 1 passes fewer rows than rank 0 at the first call;
- training: the input requires grad on rank 0 only (its backward would wait forever for rank 1's),
  or a parameter is frozen on one rank only;
- a later divergence: both ranks compiled a signature, then rank 1 calls with a new one while
  rank 0 calls the old one again; rank 1 raises after the store's timeout (3 s here).

    python -m torch.distributed.run --nproc-per-node 2 tests/rank_agreement_driver.py CASE[,CASE...]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import timedelta

import torch
import torch.distributed as dist
from ranks import job_verdict
from shapes_mesh_driver import MLP, PARAMS, H

import hir
from hir.frontend import FrontendError

ROWS = "[didx, serial]"


def own_rows(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    return t.chunk(world)[rank]


def expect_error(call: Callable[[], object], *parts: str) -> list[str]:
    try:
        call()
    except FrontendError as err:
        missing = [p for p in parts if p not in str(err)]
        return [f"rank {dist.get_rank()}: the error lacks {missing}: {err}"] if missing else []
    return [f"rank {dist.get_rank()}: no error"]


def agreeing_call(compiled: Callable[..., torch.Tensor], mlp: MLP, rank: int, world: int) -> list[str]:
    x = torch.randn(8 * world, H)
    with torch.no_grad():
        got, want = compiled(own_rows(x, rank, world)), own_rows(mlp(x), rank, world)
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
        return [f"rank {rank}: after the error, differs by {(got - want).abs().max().item():.2e}"]
    return []


def rows_differ(rank: int, world: int) -> list[str]:
    mlp = MLP()
    compiled = hir.compile(mlp, (torch.randn(8 * world, H),), [ROWS], [ROWS], mesh=list(range(world)),
                           param_layouts=PARAMS)  # fmt: skip
    rows = 8 if rank == 0 else 4
    failures = expect_error(
        lambda: compiled(torch.randn(rows, H)),
        "<MLP>: the ranks of the mesh called it with different arguments",
        "rank 0: (x: float32[8, 16])",
        "rank 1: (x: float32[4, 16])",
    )
    return failures + agreeing_call(compiled, mlp, rank, world)


def grad_on_one_rank(rank: int, world: int) -> list[str]:
    mlp = MLP()
    compiled = hir.compile(mlp, (torch.randn(8 * world, H),), [ROWS], mesh=list(range(world)),
                           param_layouts=PARAMS, training=True)  # fmt: skip
    x = torch.randn(8, H, requires_grad=rank == 0)
    failures = expect_error(
        lambda: compiled(x).sum().backward(),
        "rank 0: (x: float32[8, 16] requiring grad, grad mode on)",
        "rank 1: (x: float32[8, 16], grad mode on)",
    )
    return failures + agreeing_call(compiled, mlp, rank, world)


def frozen_on_one_rank(rank: int, world: int) -> list[str]:
    """A parameter frozen on rank 1 only: its backward program would have no gradient of it."""
    mlp = MLP()
    compiled = hir.compile(mlp, (torch.randn(8 * world, H),), [ROWS], mesh=list(range(world)),
                           param_layouts=PARAMS, training=True)  # fmt: skip
    mlp.fc2.weight.requires_grad_(rank == 0)
    failures = expect_error(
        lambda: compiled(torch.randn(8, H)).sum().backward(),
        "rank 0: (x: float32[8, 16], grad mode on)",
        "rank 1: (x: float32[8, 16], grad mode on; frozen fc2.weight)",
    )
    mlp.fc2.weight.requires_grad_(True)
    return failures + agreeing_call(compiled, mlp, rank, world)


def later_divergence(rank: int, world: int) -> list[str]:
    mlp = MLP()
    compiled = hir.compile(mlp, (torch.randn(8 * world, H),), [ROWS], [ROWS], mesh=list(range(world)),
                           param_layouts=PARAMS)  # fmt: skip
    failures = agreeing_call(compiled, mlp, rank, world)
    if rank == 1:
        dist.distributed_c10d._get_default_store().set_timeout(timedelta(seconds=3))  # the collectives' is 30 s
        failures += expect_error(
            lambda: compiled(torch.randn(4, H)),
            "this rank (1) called it with a new signature (x: float32[4, 16]) and rank 0 did not",
        )
        print("\n".join(failures) or "rank 1 raised the timeout's error", flush=True)
        os._exit(1 if failures else 0)  # rank 0 waits in its collective: leaving ends it
    compiled(torch.randn(8, H))  # the cached program; its collective fails when rank 1 leaves
    return ["rank 0: its collective returned"]


CASES: dict[str, Callable[[int, int], list[str]]] = {
    "rows_differ": rows_differ,
    "grad_on_one_rank": grad_on_one_rank,
    "frozen_on_one_rank": frozen_on_one_rank,
    "later_divergence": later_divergence,
}


def main() -> int:
    cases = sys.argv[1].split(",")
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    failures = []
    for case in cases:
        torch.manual_seed(0)  # the same module and inputs on every rank
        failures += CASES[case](dist.get_rank(), dist.get_world_size())
    return job_verdict(failures, f"{', '.join(cases)}: every rank raised the same clear error")


if __name__ == "__main__":
    sys.exit(main())
