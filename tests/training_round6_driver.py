"""
Training loops of a tensor-parallel pre-norm block (a replicated LayerNorm and row-parallel bias,
column-parallel fc1, row-parallel fc2) compiled with hir.compile(..., training=True) on gloo
ranks (tests/test_training_round6.py), against the unsharded module trained eagerly on the
global batches:

- gradient accumulation over micro-batches (`loss / k`, k backwards before the step) with
  `zero_grad(set_to_none=False)`, AdamW with param groups (no weight decay on the norm and the
  biases), a StepLR schedule and the compiled step's `clip_grad_norm_` (by the 2-norm, then the
  inf-norm): every loss, gradient block, norm and updated parameter as eager's;
- then the module cast to bf16 (`model.to(torch.bfloat16)`): a call with float32 rows was the
  forward program's own error ("'func.func' op input #0 has dtype torch.bfloat16, expected
  torch.float32"), which names no parameter; now a FrontendError on every rank naming the
  parameter and both dtypes. A call with bf16 rows traces the module as it now is, and its
  gradients are eager's bf16 ones, within bf16's rounding.

Exits non-zero (on every rank) when a case differs.

    python tests/rank_launcher.py --processes 2 --port 29500 -- tests/training_round6_driver.py
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from mesh_training_round_driver import PARAMS, TOL, Block, against_eager, compiled_block, own
from ranks import expect_error, run_cases

H = 16


def no_decay_groups(model: torch.nn.Module) -> list[dict]:
    """nanoGPT's groups: weight decay on the matrices, none on the norm's weight and the biases."""
    params = list(model.parameters())
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


def cast_after_training(
    block: Block, eager: Block, compiled: Callable[..., torch.Tensor], rank: int, world: int
) -> list[str]:
    """
    The module trained in f32, then cast to bf16: f32 rows are an error naming a parameter, bf16
    rows train. `eager` is the unsharded module trained alongside (`block` holds this rank's
    blocks of the sharded parameters only: the optimizer never updated the rest, which no rank reads).
    """
    for m in (block, eager):
        m.zero_grad()
        m.to(torch.bfloat16)
    x = torch.randn(8 * world, H)
    failures = expect_error(
        lambda: compiled(own(x, rank, world)),
        "<Block>: the module's 'norm.weight' is now bfloat16[16], but the programs of this call's signature were "
        "traced when it was float32[16]",
    )
    rows = x.bfloat16()
    compiled(own(rows, rank, world)).float().pow(2).sum().backward()
    eager(rows).float().pow(2).sum().backward()
    for name, p in block.named_parameters():
        got = own(p.grad.float(), rank, world, PARAMS.get(name))
        want = own(eager.get_parameter(name).grad.float(), rank, world, PARAMS.get(name))
        # Both are bf16 sums in their own order: a few of bf16's roundings of the largest entry apart.
        if (got - want).abs().max() > 2e-2 * want.abs().max():
            failures.append(f"rank {rank}: bf16 {name}.grad differs by {(got - want).abs().max():.2e}")
    return failures


def accumulation_then_bf16(rank: int, world: int) -> list[str]:
    """
    Two micro-batches a step, AdamW with param groups, StepLR, clipped by the compiled step (by
    the 2-norm, then the inf-norm); then the module cast to bf16.
    """
    block = Block()
    eager = copy.deepcopy(block)
    compiled = compiled_block(block, world)
    ours, theirs = (torch.optim.AdamW(no_decay_groups(m), lr=1e-2) for m in (block, eager))
    schedules = [torch.optim.lr_scheduler.StepLR(o, 1, gamma=0.5) for o in (ours, theirs)]
    failures = []
    for step in range(2):
        ours.zero_grad(set_to_none=False)
        theirs.zero_grad(set_to_none=False)
        for micro in range(2):
            x, target = torch.randn(8 * world, H), torch.randn(8 * world, H)
            loss = F.mse_loss(compiled(own(x, rank, world)), own(target, rank, world), reduction="sum")
            (loss / target.numel() / 2).backward()
            expected = F.mse_loss(eager(x), target, reduction="sum") / target.numel() / 2
            expected.backward()
            total = loss.detach() / target.numel() / 2
            dist.all_reduce(total)
            if not torch.allclose(total, expected.detach(), **TOL):
                failures.append(f"rank {rank}: step {step}.{micro}: loss {total.item()}, eager {expected.item()}")
        failures += against_eager(block, eager, f"step {step}", grads=True)
        norm_type = float("inf") if step == 1 else 2.0
        norm = compiled.clip_grad_norm_(0.05, norm_type=norm_type)  # type: ignore[attr-defined]
        want = torch.nn.utils.clip_grad_norm_(eager.parameters(), 0.05, norm_type=norm_type)
        if not torch.allclose(norm, want, **TOL):
            failures.append(f"rank {rank}: step {step}: norm {norm.item()}, eager {want.item()}")
        failures += against_eager(block, eager, f"step {step}, clipped", grads=True)
        for optimizer, schedule in zip((ours, theirs), schedules):
            optimizer.step()
            schedule.step()
        failures += against_eager(block, eager, f"step {step}, updated", grads=False)
    return failures + cast_after_training(block, eager, compiled, rank, world)


CASES = {"accumulation, AdamW groups, StepLR, clipped, then cast to bf16": accumulation_then_bf16}


def main() -> int:
    return run_cases(CASES, "training round 6")


if __name__ == "__main__":
    sys.exit(main())
