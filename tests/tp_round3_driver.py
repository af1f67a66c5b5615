"""
Tensor-parallel user code on 2 gloo ranks (tests/test_tp_round3.py) whose ranks do not compute the
same thing, each case against the unsharded module run eagerly:

- a forward that branches on a Python value that differs between the ranks (a per-rank flag):
  a scale on one rank only (each rank's result silently its own before), one more pair of
  tensor-parallel linears on one rank only (collectives that did not match: a hang), and a branch
  that only a later, larger batch takes, on one rank, also where that rank cannot compile its
  branch (its peers ran their program into a collective it never joined: a hang); every rank
  raises one CallError naming the ranks, and the function still runs calls the ranks agree on;
- a replicated parameter (a norm's weight, a row-parallel linear's bias) built from a per-rank
  seed: each rank computed with its own copy; now a CallError naming the parameter;
- the same module, built alike on every rank, over several calls and two batch sizes, with new
  inputs each call: every rank's rows match eager, and change with the inputs.

Exits non-zero (on every rank) when a case differs.

    python -m torch.distributed.run --nproc-per-node 2 tests/tp_round3_driver.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import expect_error, run_cases

import hir

H, FFN = 16, 32
ROWS = "[didx, serial]"
PARAMS = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}
TWO_MORE = {"fc3.weight": "[didx, serial]", "fc4.weight": "[serial, didx]"}


class Block(torch.nn.Module):
    """A pre-norm TP MLP (a replicated norm and row-parallel bias), with what a rank may do of its own."""

    def __init__(self, branch: str = "", flag: bool = False) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(H)
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN), torch.nn.Linear(FFN, H)
        self.fc3, self.fc4 = torch.nn.Linear(H, FFN, bias=False), torch.nn.Linear(FFN, H, bias=False)
        with torch.no_grad():  # not LayerNorm's ones and zeros: values a per-rank copy would change
            self.norm.weight.add_(0.1 * torch.randn(H))
            self.norm.bias.add_(0.1 * torch.randn(H))
        self.branch, self.flag = branch, flag
        self.compiled = False  # set after hir.compile: a branch on a later call's batch only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + self.fc2(F.gelu(self.fc1(self.norm(x))))
        later = self.compiled and x.shape[0] > 8  # the larger batch of a later call
        if self.branch == "scale" and self.flag:
            y = y * 2
        elif self.branch == "extra" and self.flag:
            y = y + self.fc4(F.relu(self.fc3(y)))
        elif self.branch == "later" and self.flag and later:
            y = y - 1
        elif self.branch == "later_fails" and self.flag and later:
            y = torch.special.i0(y)  # not in the ATen table: this rank cannot compile it
        return y


def own_rows(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    return t.chunk(world)[rank]


def compiled_block(block: Block, world: int, rows: int = 8) -> Callable[..., torch.Tensor]:
    compiled = hir.compile(block.eval(), (torch.randn(rows * world, H),), [ROWS], [ROWS], mesh=list(range(world)),
                           param_layouts={**PARAMS, **TWO_MORE})  # fmt: skip
    block.compiled = True
    return compiled


def matches(compiled: Callable[..., torch.Tensor], block: Block, rows: int, what: str) -> list[str]:
    rank, world = dist.get_rank(), dist.get_world_size()
    x = torch.randn(rows * world, H)
    with torch.no_grad():
        got, want = compiled(own_rows(x, rank, world)), own_rows(block(x), rank, world)
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
        return [f"rank {rank}: {what}: differs from eager by {(got - want).abs().max().item():.2e}"]
    return []


DIFFERENT_PROGRAMS = (
    "the ranks of the mesh traced different programs for the same call (the same program on: rank 0; rank 1)"
)


def branch(kind: str) -> Callable[[int, int], list[str]]:
    def case(rank: int, world: int) -> list[str]:
        block = Block(kind, flag=rank == 1)
        compiled = compiled_block(block, world)
        x = own_rows(torch.randn(8 * world if kind in ("scale", "extra") else 16 * world, H), rank, world)
        if kind == "later_fails":
            parts = ["<Block>: rank 1 could not compile the call that its peers compiled", "aten.i0.default"]
        else:
            parts = ["<Block>: " + DIFFERENT_PROGRAMS]
        with torch.no_grad():
            failures = expect_error(lambda: compiled(x), *parts)
        if kind in ("later", "later_fails"):  # the batch every rank compiled alike still runs
            block.flag = False  # eager's branch at that batch is the one every rank traced
            failures += matches(compiled, block, 8, "a call the ranks agree on")
        return failures

    return case


def per_rank_parameter(name: str) -> Callable[[int, int], list[str]]:
    def case(rank: int, world: int) -> list[str]:
        block = Block()
        with torch.no_grad():
            tensor = block.get_parameter(name)
            tensor.copy_(torch.randn(tensor.shape, generator=torch.Generator().manual_seed(rank + 1)))
        compiled = compiled_block(block, world)
        with torch.no_grad():
            failures = expect_error(
                lambda: compiled(own_rows(torch.randn(8 * world, H), rank, world)),
                f"<Block>: parameter '{name}' (float32[{H}]) is replicated",
                "the ranks of the mesh hold different values of it (the same values on: rank 0; rank 1)",
            )
        return failures

    return case


def agreeing_calls(rank: int, world: int) -> list[str]:
    """The same module on every rank: new inputs each call, two batch sizes, results that follow the inputs."""
    block = Block("scale", flag=False)
    compiled = compiled_block(block, world)
    failures, previous = [], None
    for call, rows in enumerate((8, 8, 4, 8, 4)):
        failures += matches(compiled, block, rows, f"call {call} ({rows} rows a rank)")
        with torch.no_grad():
            got = compiled(own_rows(torch.randn(8 * world, H), rank, world))
        if previous is not None and torch.equal(got, previous):
            failures.append(f"rank {rank}: call {call}: the same result for other inputs")
        previous = got.clone()
    return failures


CASES = {
    "agreeing calls": agreeing_calls,
    "branch: a scale on one rank": branch("scale"),
    "branch: more linears on one rank": branch("extra"),
    "branch: a later batch on one rank": branch("later"),
    "branch: a later batch one rank cannot compile": branch("later_fails"),
    "per-rank norm weight": per_rank_parameter("norm.weight"),
    "per-rank row-parallel bias": per_rank_parameter("fc2.bias"),
}


def main() -> int:
    return run_cases(CASES, "tp round 3")


if __name__ == "__main__":
    sys.exit(main())
