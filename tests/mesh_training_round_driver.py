"""
Training loops of a tensor-parallel pre-norm block (a replicated LayerNorm and row-parallel bias,
column-parallel fc1, row-parallel fc2) compiled with hir.compile(..., training=True) on 2 gloo
ranks (tests/test_mesh_training_round.py), against the unsharded module trained eagerly on the
global batches:

- a replicated parameter (the norm's weight, the row-parallel bias) built from a per-rank seed:
  each rank trained with its own copy, without an error; now one CallError on every rank naming
  the parameter, at the first call, as for inference;
- SGD steps with a new batch size between them (a new signature, whose check compares the
  replicated parameters after the optimizer's updates: they stay equal on every rank, no error),
  every step's loss, gradients and updated parameters as eager's;
- gradient clipping: `compiled.clip_grad_norm_` clips by the norm of the whole gradient, eager's,
  on every rank, so the replicated parameters stay equal across the ranks (torch's own
  clip_grad_norm_ sees each rank's blocks only: each rank got its own norm, and the replicated
  parameters drifted apart);
- evaluations between steps, under no_grad and inference_mode, in train and eval mode.

The last three are one loop (new batch sizes, clipped and unclipped steps, evaluations between
two steps), so that each signature and mode is traced once.

Exits non-zero (on every rank) when a case differs.

    python -m torch.distributed.run --nproc-per-node 2 tests/mesh_training_round_driver.py
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from ranks import expect_error, own, run_cases

import hir

H, FFN = 16, 32
ROWS = "[didx, serial]"
PARAMS = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}
TOL = dict(rtol=1e-4, atol=1e-5)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(H)
        self.fc1, self.fc2 = torch.nn.Linear(H, FFN), torch.nn.Linear(FFN, H)
        with torch.no_grad():  # not LayerNorm's ones and zeros
            self.norm.weight.add_(0.1 * torch.randn(H))
            self.norm.bias.add_(0.1 * torch.randn(H))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


def compiled_block(block: Block, world: int) -> Callable[..., torch.Tensor]:
    return hir.compile(block, (torch.randn(8 * world, H),), [ROWS], mesh=list(range(world)), param_layouts=PARAMS,
                       training=True)  # fmt: skip


def against_eager(block: Block, eager: Block, what: str, grads: bool) -> list[str]:
    """Each parameter (or its .grad): this rank's block as eager's; a replicated one whole, and alike on every rank."""
    rank, world = dist.get_rank(), dist.get_world_size()
    failures = []
    for name, p in block.named_parameters():
        got, want = (p.grad, eager.get_parameter(name).grad) if grads else (p, eager.get_parameter(name))
        assert got is not None
        assert want is not None
        got, want = own(got.detach(), rank, world, PARAMS.get(name)), own(want.detach(), rank, world, PARAMS.get(name))
        if not torch.allclose(got, want, **TOL):
            failures.append(f"rank {rank}: {what}: {name}{'.grad' * grads} differs by {(got - want).abs().max():.2e}")
        if name not in PARAMS:
            copies = [torch.empty_like(got) for _ in range(world)]
            dist.all_gather(copies, got.contiguous())
            if any(not torch.equal(c, copies[0]) for c in copies):
                failures.append(f"rank {rank}: {what}: the replicated {name}{'.grad' * grads} differs between ranks")
    return failures


def per_rank_parameter(name: str) -> Callable[[int, int], list[str]]:
    def case(rank: int, world: int) -> list[str]:
        block = Block()
        with torch.no_grad():
            block.get_parameter(name).add_(1e-3 * rank)  # a per-rank copy, a little off
        compiled = compiled_block(block, world)
        return expect_error(
            lambda: compiled(own(torch.randn(8 * world, H), rank, world)).sum().backward(),
            f"<Block>: parameter '{name}' (float32[{H}]) is replicated",
            "the ranks of the mesh hold different values of it (the same values on: rank 0; rank 1)",
        )

    return case


def evaluations(block: Block, eager: Block, compiled: Callable[..., torch.Tensor], rank: int, world: int) -> list[str]:
    """
    The module evaluated between steps: under no_grad and inference_mode, in train and in eval mode
    (a new mode's program, traced at that call: under inference_mode it was a '<call>' error,
    'Inference tensors cannot be saved for backward').
    """
    failures = []
    for what in ("no_grad", "inference_mode", "eval, inference_mode", "eval, no_grad"):
        block.train("eval" not in what)
        eager.train("eval" not in what)
        y = torch.randn(8 * world, H)
        with torch.inference_mode() if "inference" in what else torch.no_grad():
            got, want = compiled(own(y, rank, world)), own(eager(y), rank, world)
        if not torch.allclose(got, want, **TOL):
            failures.append(f"rank {rank}: {what}: differs from eager by {(got - want).abs().max():.2e}")
    block.train()
    eager.train()
    return failures


def training_loop(rank: int, world: int) -> list[str]:
    """
    SGD steps with new batches of changing sizes: steps 1 and 3 clipped by compiled.clip_grad_norm_
    (the others not), evaluations between steps 1 and 2, and step 2 a new batch size after them.
    """
    block = Block()
    eager = copy.deepcopy(block)
    compiled = compiled_block(block, world)
    ours = torch.optim.SGD(block.parameters(), lr=0.1, momentum=0.9)
    theirs = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    failures = []
    for step, rows in enumerate((8, 4, 12, 8)):
        if step == 2:
            failures += evaluations(block, eager, compiled, rank, world)
        clip = step % 2 == 1
        ours.zero_grad()
        theirs.zero_grad()
        x, target = torch.randn(rows * world, H), torch.randn(rows * world, H)
        # The loss of this rank's rows; their sum over the ranks is eager's loss of the batch.
        loss = ((compiled(own(x, rank, world)) - own(target, rank, world)) ** 2).sum() / target.numel()
        loss.backward()
        expected = ((eager(x) - target) ** 2).sum() / target.numel()
        expected.backward()
        total = loss.detach().clone()
        dist.all_reduce(total)
        if not torch.allclose(total, expected.detach(), **TOL):
            failures.append(f"rank {rank}: step {step}: loss {total.item():.6f}, eager {expected.item():.6f}")
        failures += against_eager(block, eager, f"step {step}", grads=True)
        if clip:
            norm = compiled.clip_grad_norm_(0.05)  # type: ignore[attr-defined]
            want = torch.nn.utils.clip_grad_norm_(eager.parameters(), 0.05)
            if not torch.allclose(norm, want, **TOL):
                failures.append(f"rank {rank}: step {step}: gradient norm {norm.item():.6f}, eager {want.item():.6f}")
            failures += against_eager(block, eager, f"step {step}, clipped", grads=True)
        ours.step()
        theirs.step()
        failures += against_eager(block, eager, f"step {step}, updated", grads=False)
    return failures


CASES = {
    "per-rank norm weight": per_rank_parameter("norm.weight"),
    "per-rank row-parallel bias": per_rank_parameter("fc2.bias"),
    # One loop for the batch sizes that change, clip_grad_norm_ and the evaluations: each compiled
    # signature or mode is traced once (the same checks as a loop of each, a third of the traces).
    "SGD, batch sizes that change, clip_grad_norm_, evaluations under no_grad and inference_mode": training_loop,
}


def main() -> int:
    return run_cases(CASES, "mesh training round")


if __name__ == "__main__":
    sys.exit(main())
