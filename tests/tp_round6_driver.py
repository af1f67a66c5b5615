"""
Tensor-parallel model code on 2 gloo ranks (tests/test_tp_round6.py), each case against the
unsharded module run eagerly on the full inputs:

- a training step of a weight-shared block (one tensor-parallel MLP applied twice, as a
  universal transformer or ALBERT does) and of a row-parallel weight tied under two names: the
  two gradients of a sharded weight were refused ("aten.add.Tensor of a sharded parameter or
  gradient is not supported on a mesh"); each device now adds its own blocks. Two steps with an
  SGD update between them, output, input and parameter gradients.

Exits non-zero (on every rank) when a case differs.

    python -m torch.distributed.run --nproc-per-node 2 tests/tp_round6_driver.py
"""

from __future__ import annotations

import copy
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import own, run_cases

import hir

H, FFN = 8, 16
ROWS, COL, ROW = "[didx, serial]", "[didx, serial]", "[serial, didx]"


def differs(got: torch.Tensor | None, want: torch.Tensor, what: str, tol: float = 1e-4) -> list[str]:
    if got is None or got.shape != want.shape or not torch.allclose(got, want, rtol=tol, atol=tol):
        return [f"rank {dist.get_rank()}: {what} differs from eager"]
    return []


class SharedBlock(torch.nn.Module):
    """One pre-norm TP MLP applied twice: every weight gets two gradients."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(H)
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN), torch.nn.Linear(FFN, H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(2):
            x = x + self.fc2(F.gelu(self.fc1(self.norm(x))))
        return x


class TiedRows(torch.nn.Module):
    """fc3 reads fc2's weight: a row-parallel weight under two names, two gradients."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN, bias=False), torch.nn.Linear(FFN, H, bias=False)
        self.fc3 = torch.nn.Linear(FFN, H, bias=False)
        self.fc3.weight = self.fc2.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(F.gelu(self.fc1(x))) + self.fc2(F.relu(self.fc1(x)))


def training_steps(block: torch.nn.Module, layouts: dict[str, str]) -> list[str]:
    """Two steps with an SGD update between them: output, x.grad and each parameter's gradient."""
    rank, world = dist.get_rank(), dist.get_world_size()
    eager = copy.deepcopy(block)
    x = torch.randn(4 * world, H)
    compiled = hir.compile(block, (x,), [ROWS], mesh=list(range(world)), param_layouts=layouts, training=True)
    ours, theirs = (torch.optim.SGD(m.parameters(), lr=0.05) for m in (block, eager))
    failures = []
    for step in range(2):
        x = torch.randn(4 * world, H)
        mine, whole = own(x, rank, world).clone().requires_grad_(), x.clone().requires_grad_()
        y, want = compiled(mine), eager(whole)
        (y * y).sum().backward()
        (want * want).sum().backward()
        failures += differs(y, own(want, rank, world).detach(), f"step {step}: the output")
        failures += differs(mine.grad, own(whole.grad, rank, world), f"step {step}: x.grad", 1e-3)
        for name, p in block.named_parameters():
            layout = {"[didx]": ROWS}.get(layouts.get(name, ""), layouts.get(name))
            want_grad = own(eager.get_parameter(name).grad, rank, world, layout)
            failures += differs(own(p.grad, rank, world, layout), want_grad, f"step {step}: {name}.grad", 1e-3)
        for opt in (ours, theirs):
            opt.step()
            opt.zero_grad()
    return failures


def shared_weights(rank: int, world: int) -> list[str]:
    megatron = {"fc1.weight": COL, "fc1.bias": "[didx]", "fc2.weight": ROW}
    failures = training_steps(SharedBlock(), megatron)
    return failures + training_steps(TiedRows(), {"fc1.weight": COL, "fc2.weight": ROW})


CASES = {
    "training: a block applied twice, a tied row-parallel weight": shared_weights,
}


def main() -> int:
    return run_cases(CASES, "tp round 6")


if __name__ == "__main__":
    sys.exit(main())
