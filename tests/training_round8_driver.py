"""
The Megatron TP transformer layer (benchmarks/tp_layer.py's `TPLayer`: heads sharded, q, k, v and
fc1 column-parallel, o and fc2 row-parallel) on gloo ranks (tests/test_training_round8.py),
against the unsharded layer run eagerly on the global rows:

- one-token sequences (T = 1, a decode step's shape): the view of a column-parallel output to
  `[B, 1, heads, hd]` read the unit sequence axis as the heads axis ("1 heads (axis 1 of [4, 1,
  4, 4]) do not split over 2 devices"), and the attention's `[B, 1, heads, hd]` back to `[B, H]`
  as a merge of that unit axis with the heads (then "a product of heads and row-weight^T tensors
  is not supported"); now AdamW training steps as eager (the attention's softmax
  statistics kept, sharded as the heads), `zero_grad(set_to_none=False)` after the second.

Exits non-zero (on every rank) when a case differs.

    python tests/rank_launcher.py --processes 2 --port 29500 -- tests/training_round8_driver.py
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist
from ranks import own, run_cases

import hir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from tp_layer import PARAM_LAYOUTS, TPLayer

TOL = dict(rtol=1e-4, atol=1e-5)
HIDDEN, HEADS = 16, 4


def _layer(seq: int) -> TPLayer:
    layer = TPLayer(HIDDEN, HEADS, 32, seq, torch.float32, "cpu")
    with torch.no_grad():
        for p in (*layer.norm1.parameters(), *layer.norm2.parameters()):
            p.add_(0.1 * torch.randn_like(p))  # not a norm's ones and zeros
    return layer


def _grads(model: TPLayer, eager: TPLayer, rank: int, world: int, what: str) -> list[str]:
    failures = []
    for name, p in model.named_parameters():
        layout = PARAM_LAYOUTS.get(name)
        got, want = own(p.grad, rank, world, layout), own(eager.get_parameter(name).grad, rank, world, layout)
        if not torch.allclose(got, want, **TOL):
            failures.append(f"rank {rank}: {what}: {name}.grad differs by {(got - want).abs().max():.2e}")
    return failures


def training(seq: int, rows: str, optimizer: Callable[..., torch.optim.Optimizer]) -> Callable[[int, int], list[str]]:
    def case(rank: int, world: int) -> list[str]:
        model = _layer(seq)
        eager = copy.deepcopy(model)
        M = 2 * seq * world  # two sequences per rank
        failures = []
        step = hir.compile(model, (torch.randn(M, HIDDEN),), [rows], mesh=list(range(world)),
                           param_layouts=PARAM_LAYOUTS, training=True)  # fmt: skip
        ours, theirs = optimizer(model.parameters()), optimizer(eager.parameters())
        for k in range(2):
            x, target = torch.randn(M, HIDDEN), torch.randn(M, HIDDEN)
            loss = ((step(own(x, rank, world)) - own(target, rank, world)) ** 2).sum() / target.numel()
            loss.backward()
            expected = ((eager(x) - target) ** 2).sum() / target.numel()
            expected.backward()
            total = loss.detach().clone()
            dist.all_reduce(total)  # the ranks' losses of their rows sum to eager's
            if not torch.allclose(total, expected.detach(), **TOL):
                failures.append(f"rank {rank}: step {k}: loss {total.item():.6f}, eager {expected.item():.6f}")
            failures += _grads(model, eager, rank, world, f"step {k}")
            ours.step()
            theirs.step()
            ours.zero_grad(set_to_none=k % 2 == 0)
            theirs.zero_grad(set_to_none=k % 2 == 0)
        return failures

    return case


def adamw(params: object) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-2)  # type: ignore[arg-type]


CASES = {
    "one-token sequences": training(1, "[didx, serial]", adamw),
}


def main() -> int:
    return run_cases(CASES, "training round 8")


if __name__ == "__main__":
    sys.exit(main())
