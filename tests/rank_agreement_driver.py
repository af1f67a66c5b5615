"""
Ranks that call a compiled tensor-parallel MLP with different signatures get one clear CallError
on every rank, before any collective runs (frontend/rank_agreement.py), and the function still
takes calls that agree afterwards:

- inference: rank 1 passes fewer rows than rank 0 at the first call;
- training: the input requires grad on rank 0 only (its backward would wait forever for rank 1's),
  or a parameter is frozen on one rank only;
- a later divergence: both ranks compiled a signature, then rank 1 calls with a new one while
  rank 0 calls the old one again; rank 1 raises after the store's timeout (3 s here);
- a replicated input whose values differ between the ranks (each drew its own batch), at the
  first call, and at a later call with HIR_CHECK_REPLICAS=1;
- every rank passing the global tensor where its shard is expected (inference with "[didx,
  serial]", training with "[(stream(2), didx), serial]"), while a batch of twice the rows, each
  rank its own, still runs.

    python -m torch.distributed.run --nproc-per-node 2 tests/rank_agreement_driver.py CASE[,CASE...]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import timedelta

import torch
import torch.distributed as dist
from ranks import expect_error, job_verdict
from shapes_mesh_driver import MLP, PARAMS, H, rows_of

import hir

ROWS = "[didx, serial]"


def own_rows(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    return t.chunk(world)[rank]


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


def matches(got: torch.Tensor, want: torch.Tensor, what: str) -> list[str]:
    if got.shape == want.shape and torch.allclose(got, want, rtol=1e-4, atol=1e-5):
        return []
    return [f"rank {dist.get_rank()}: {what}: {list(got.shape)} differs from eager's {list(want.shape)}"]


def replicas_differ(rank: int, world: int) -> list[str]:
    """Replicated rows (an all-reduce after the row-parallel linear): each rank drew its own x at the first call."""
    mlp = MLP()
    compiled = hir.compile(mlp, (torch.randn(8, H),), [None], [None], mesh=list(range(world)), param_layouts=PARAMS)
    x = torch.randn(8, H)
    own = x + rank  # what a rank that drew its own batch passes
    failures = expect_error(
        lambda: compiled(own),
        "<MLP>: argument 'x' (float32[8, 16]) is replicated",
        "the ranks of the mesh passed different values of it (the same values on: rank 0; rank 1)",
        "dist.broadcast(x, src=0)",
    )
    with torch.no_grad():
        return failures + matches(compiled(x), mlp(x), "the same x on every rank")


def replicas_differ_every_call(rank: int, world: int) -> list[str]:
    """HIR_CHECK_REPLICAS=1: a later call (a signature compiled before) is compared too."""
    os.environ["HIR_CHECK_REPLICAS"] = "1"  # read by hir.compile
    mlp = MLP()
    try:
        compiled = hir.compile(mlp, (torch.randn(8, H),), [None], [None], mesh=list(range(world)),
                               param_layouts=PARAMS)  # fmt: skip
    finally:
        del os.environ["HIR_CHECK_REPLICAS"]
    x, later = torch.randn(8, H), torch.randn(8, H)
    with torch.no_grad():
        failures = matches(compiled(x), mlp(x), "the first call")
        failures += expect_error(
            lambda: compiled(later + rank),
            "<MLP>: argument 'x' (float32[8, 16]) is replicated",
            "the same values on: rank 0; rank 1",
        )
        return failures + matches(compiled(later), mlp(later), "a later call of the same x on every rank")


def global_tensor(rank: int, world: int) -> list[str]:
    """Every rank passes the whole x: an error that says how to cut the shard; a batch of twice the rows runs."""
    mlp = MLP()
    x = torch.randn(8 * world, H)
    compiled = hir.compile(mlp, (x,), [ROWS], [ROWS], mesh=list(range(world)), param_layouts=PARAMS)
    failures = expect_error(
        lambda: compiled(x),
        f"<MLP>: argument 'x' (float32[{8 * world}, 16]) has the global shape of the example, and every rank "
        "passed the same values: it is the whole tensor",
        f"pass this rank's shard [8, 16], x.chunk({world})[rank] (layout '[didx, serial]': block rank of its rows)",
    )
    with torch.no_grad():
        failures += matches(compiled(own_rows(x, rank, world)), own_rows(mlp(x), rank, world), "its shard")
        twice = torch.randn(8 * world * world, H)  # each rank's shard has the example's global shape
        failures += matches(compiled(own_rows(twice, rank, world)), own_rows(mlp(twice), rank, world), "twice the rows")
    return failures


def global_tensor_training(rank: int, world: int) -> list[str]:
    """The training step's call with the whole x, rows in 2 chunks: the chunked layout's cut."""
    mlp = MLP()
    x = torch.randn(8 * world, H)
    chunked = "[(stream(2), didx), serial]"
    step = hir.compile(mlp, (x,), [chunked], mesh=list(range(world)), param_layouts=PARAMS, training=True)
    failures = expect_error(
        lambda: step(x).sum().backward(),
        f"argument 'x' (float32[{8 * world}, 16]) has the global shape of the example",
        f"x.view(2, {world}, -1, 16)[:, rank].flatten(0, 1) (layout '{chunked}': block rank of each of its 2 "
        "chunks of rows)",
    )
    mine = rows_of(x, 2, rank, world)
    return failures + matches(step(mine), rows_of(mlp(x), 2, rank, world), "its rows")


CASES: dict[str, Callable[[int, int], list[str]]] = {
    "rows_differ": rows_differ,
    "grad_on_one_rank": grad_on_one_rank,
    "frozen_on_one_rank": frozen_on_one_rank,
    "later_divergence": later_divergence,
    "replicas_differ": replicas_differ,
    "replicas_differ_every_call": replicas_differ_every_call,
    "global_tensor": global_tensor,
    "global_tensor_training": global_tensor_training,
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
