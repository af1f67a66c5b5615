"""
`hir.compile(..., training=True)` in more training loops as users write them: each against an
eager deep copy of the same model with the same optimizer, on seeded random data (f32, CPU).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from test_training import randn
from test_training_round2 import Mlp

import hir


def test_autocast_around_the_call_picks_programs_of_its_own() -> None:
    """
    AOT autograd's trace casts as the autocast region around the call does: a step first called
    inside `torch.autocast` returns bf16 and one called outside f32, as eager. Each state traces
    programs of its own (the first call's were run for every later call: an evaluation outside the
    region after training inside it got bf16 results, and the reverse f32 ones).
    """
    torch.manual_seed(0)
    model = Mlp()
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, (randn(8, 16),), training=True)
    ours, theirs = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(eager.parameters(), lr=0.1)
    for step, autocast in enumerate([False, True, True, False, True]):
        x, target = randn(8, 16, seed=step), randn(8, 8, seed=10 + step)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out, want = compiled(x), eager(x)
        assert out.dtype == want.dtype == (torch.bfloat16 if autocast else torch.float32), step
        tolerance = {"rtol": 2e-2, "atol": 2e-2} if autocast else {}
        torch.testing.assert_close(out, want, **tolerance)
        F.mse_loss(out.float(), target).backward()
        F.mse_loss(want.float(), target).backward()
        for p, q in zip(model.parameters(), eager.parameters(), strict=True):
            assert p.grad is not None
            assert p.grad.dtype == q.grad.dtype == torch.float32
            torch.testing.assert_close(p.grad, q.grad, **tolerance)
        ours.step()
        theirs.step()
        ours.zero_grad()
        theirs.zero_grad()
        with torch.no_grad():  # the programs differ between runs: the next step starts from the same weights
            for p, q in zip(model.parameters(), eager.parameters(), strict=True):
                p.copy_(q)
    model.eval()
    eager.eval()
    x = randn(8, 16, seed=20)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert compiled(x).dtype == torch.bfloat16
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), eager(x))
