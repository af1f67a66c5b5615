"""
`hir.compile(..., training=True)` in training loops as users write them, each against an eager
deep copy with the same optimizer on seeded random data (f32, CPU): a module cast to another
dtype after the first call, tensors registered on it after the first call or in forward, a
weight a pre-hook recomputes across a new trace, an optimizer step between a forward and its
backward, and AdamW with param groups over accumulated and clipped micro-batches under a
warmup-cosine schedule; loops on 2 gloo ranks through tests/training_round6_driver.py.
"""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from ranks import run_ranks
from test_distributed import _output
from test_training import assert_same_grads, randn

import hir
from hir.frontend import FrontendError

DRIVER = Path(__file__).resolve().parent / "training_round6_driver.py"


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(self.norm(x))))


def test_a_module_cast_after_the_first_call_is_an_error_naming_the_parameter() -> None:
    """
    `model.to(torch.bfloat16)` after the first step, called with float32 inputs (eager refuses
    the mixed matmul): the forward program's own error, "'func.func' op input #0 has dtype
    torch.bfloat16, expected torch.float32", which names no parameter; now the error names it, as
    inference's does, under grad mode and under no_grad. A call with bf16 inputs traces the module
    as it now is and trains as eager's bf16 copy.
    """
    torch.manual_seed(0)
    model = Mlp()
    step = hir.compile(model, (randn(6, 8),), training=True)
    for k in range(2):  # the second step runs LeanStep
        step(randn(6, 8, seed=k)).sum().backward()
    with torch.no_grad():
        step(randn(6, 8))
    model.zero_grad()
    model.to(torch.bfloat16)
    message = (
        "<Mlp>: the module's 'norm.weight' is now bfloat16[8], but the programs of this call's signature were traced "
        "when it was float32[8]: compile the module again (or call it with inputs of the new dtype"
    )
    with pytest.raises(FrontendError, match=re.escape(message)):
        step(randn(6, 8))
    with torch.no_grad(), pytest.raises(FrontendError, match=re.escape("'norm.weight' is now bfloat16")):
        step(randn(6, 8))
    eager = copy.deepcopy(model)
    x = randn(6, 8, seed=3).bfloat16()
    step(x).float().pow(2).mean().backward()
    eager(x).float().pow(2).mean().backward()
    assert_same_grads(model, eager, rtol=2e-2, atol=2e-2)


def test_an_optimizer_step_between_a_forward_and_its_backward_is_eagers_error() -> None:
    """
    After the first backward (LeanStep), the saved transpose of a weight updated in place by
    `optimizer.step()` raised torch's "A view was created in no_grad mode ... modified inplace
    with grad mode enabled", which names neither; now eager's error for the update.
    """
    torch.manual_seed(0)
    model = Mlp()
    step = hir.compile(model, (randn(6, 8),), training=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step(randn(6, 8)).sum().backward()  # the first backward: LeanStep runs the later steps
    optimizer.step()
    y = step(randn(6, 8, seed=1))
    optimizer.step()
    with pytest.raises(
        RuntimeError, match=r"modified by an inplace operation: a parameter .* \(an optimizer\.step\(\)"
    ):
        y.pow(2).sum().backward()


def no_decay_groups(model: torch.nn.Module) -> list[dict]:
    params = list(model.parameters())
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


def test_adamw_groups_over_accumulated_clipped_micro_batches_track_eager() -> None:
    """nanoGPT's loop: AdamW groups, warmup-cosine LambdaLR, 3 micro-batches, clip_grad_norm_, zero_grad(set_to_none=False)."""
    torch.manual_seed(0)
    model = Mlp()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(6, 8),), training=True)
    optimizers = [torch.optim.AdamW(no_decay_groups(m), lr=1e-2, betas=(0.9, 0.95)) for m in (model, eager)]
    warmup_cosine = lambda k: min(1.0, (k + 1) / 2) * 0.5 * (1 + math.cos(math.pi * k / 6))  # noqa: E731
    schedules = [torch.optim.lr_scheduler.LambdaLR(o, warmup_cosine) for o in optimizers]
    for k in range(3):
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=False)
        for micro in range(3):
            x, target = randn(6, 8, seed=10 * k + micro), randn(6, 4, seed=100 + 10 * k + micro)
            loss = F.mse_loss(step(x), target) / 3
            expected = F.mse_loss(eager(x), target) / 3
            torch.testing.assert_close(loss, expected)
            loss.backward()
            expected.backward()
        norms = [torch.nn.utils.clip_grad_norm_(m.parameters(), 0.1) for m in (model, eager)]
        torch.testing.assert_close(norms[0], norms[1])
        assert_same_grads(model, eager)
        for optimizer, schedule in zip(optimizers, schedules):
            optimizer.step()
            schedule.step()
        for (name, p), q in zip(model.named_parameters(), eager.parameters()):
            torch.testing.assert_close(p, q, msg=lambda m, name=name, k=k: f"step {k}: {name}: {m}")


@pytest.mark.distributed
def test_training_round6_cases_on_two_gloo_ranks() -> None:
    result = run_ranks([str(DRIVER)], timeout=240)
    assert result.returncode == 0, _output(result)
    assert "training round 6: 1 cases match eager or raise the same clear error" in result.stdout, _output(result)


class Scaled(Mlp):
    """A scale that a later version of the model adds (`model.scale = nn.Parameter(...)`, then `use_scale`)."""

    use_scale = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return y * self.scale if self.use_scale else y


def test_parametrizations_pruning_and_parameters_registered_after_the_first_call_train() -> None:
    """
    A LoRA-like parametrization, pruning and a new parameter, each registered
    after the first step: the step read the tensors by the names of the compile ('the module no
    longer has 'fc1.weight'', or the new parameter 'neither an argument nor the module's'); now
    each new set of names traces the step again, and every step's gradients are eager's.
    """
    import torch.nn.utils.prune as prune
    from torch.nn.utils import parametrize

    class LowRankDelta(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Parameter(randn(16, 2, seed=5)), torch.nn.Parameter(randn(2, 8, seed=6))

        def forward(self, w: torch.Tensor) -> torch.Tensor:
            return w + 0.1 * self.a @ self.b

    torch.manual_seed(0)
    model = Scaled()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(6, 8),), training=True)
    changes = [
        lambda m: parametrize.register_parametrization(m.fc1, "weight", LowRankDelta()),
        lambda m: prune.l1_unstructured(m.fc2, "weight", amount=0.5),
        lambda m: (setattr(m, "scale", torch.nn.Parameter(torch.full((4,), 1.5))), setattr(m, "use_scale", True)),
    ]
    for k, change in enumerate([None, *changes]):
        if change is not None:
            change(model)
            change(eager)
        model.zero_grad()
        eager.zero_grad()
        x = randn(6, 8, seed=k)
        step(x).pow(2).mean().backward()
        eager(x).pow(2).mean().backward()
        assert_same_grads(model, eager)


def test_a_weight_a_pre_hook_recomputes_trains_across_a_new_trace() -> None:
    """
    Pruning and the old `weight_norm` keep `fc2.weight` as a plain attribute computed once from
    the parameters and recompute it in forward. The first backward of a step traced later (here
    after `model.eval()`) ran the stale attribute's graph again: "Trying to backward through the
    graph a second time"; now the later traces pass it detached, as later calls of a step do.
    """
    import torch.nn.utils.prune as prune

    torch.manual_seed(0)
    model = Mlp()
    eager = copy.deepcopy(model)
    for m in (model, eager):
        prune.l1_unstructured(m.fc2, "weight", amount=0.5, importance_scores=torch.arange(64.0).view(4, 16))
    step = hir.compile(model, (randn(6, 8),), training=True)
    for k in range(3):
        if k == 1:
            model.eval()
            eager.eval()
        model.zero_grad()
        eager.zero_grad()
        step(randn(6, 8, seed=k)).pow(2).mean().backward()
        eager(randn(6, 8, seed=k)).pow(2).mean().backward()
        assert_same_grads(model, eager)


class LazyPositions(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not hasattr(self, "positions"):
            self.register_buffer("positions", torch.arange(4.0))
        return self.fc(x) + self.positions


def test_a_buffer_registered_in_forward_is_an_error_at_its_line_and_leaves_the_module_as_it_was() -> None:
    """
    A buffer registered at forward's first call was torch's "Unexpected fake buffer
    _tensor_constant0" at the call, naming no line, and the module kept the trace's tensor as its
    buffer (a FunctionalTensor); now an error at the registration's line, the module unchanged.
    """
    model = LazyPositions()
    step = hir.compile(model, (randn(6, 8),), training=True)
    with pytest.raises(
        FrontendError, match=r"test_training_round6\.py:\d+: error: .*registers the buffer 'self.positions'"
    ):
        step(randn(6, 8))
    assert "positions" not in dict(model.named_buffers())
