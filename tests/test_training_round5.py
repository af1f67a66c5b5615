"""
`hir.compile(..., training=True)` as users train real models: modules shared under two names,
losses, optimizers and autograd calls around the compiled step; each against an eager deep copy
of the same model with the same optimizer, on seeded random data (f32, CPU).
"""

from __future__ import annotations

import copy
import re
from functools import partial
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from test_training import randn
from test_training_round2 import assert_same_grads
from torch.nn.utils import parametrize
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

import hir
from hir.frontend.specialize import CallError


class SharedUnderTwoNames(torch.nn.Module):
    """One linear registered as `a` and as `b` (`self.b = self.a`), applied twice."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = self.a

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(F.relu(self.a(x)))


def test_a_submodule_registered_under_two_names_keeps_its_parameters() -> None:
    """
    torch's functional_call restored the twice-registered linear's weight twice, the second time
    to the traced tensor: the module lost its parameters to the trace (no gradient at the first
    step, a failed call at the next).
    """
    torch.manual_seed(0)
    model = SharedUnderTwoNames()
    eager = copy.deepcopy(model)
    weight = model.a.weight
    step = hir.compile(model, (randn(4, 8),), training=True)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    for k in range(2):
        for m, optimizer in zip((model, eager), optimizers):
            optimizer.zero_grad()
            (step if m is model else eager)(randn(4, 8, seed=k)).pow(2).mean().backward()
        assert model.a.weight is weight
        assert model.b.weight is weight
        assert_same_grads(model, eager, f"step {k}")
        for optimizer in optimizers:
            optimizer.step()


class BatchNormed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 16)
        self.norm = torch.nn.BatchNorm1d(16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.silu(self.norm(self.fc(x))))


def test_calls_under_inference_mode_run_the_inference_program() -> None:
    """
    An evaluation under `torch.inference_mode()` between training steps (the batch norm still in
    training mode, then in eval mode) was a `<capture>:` error: AOT autograd's trace read the
    version counters that inference tensors do not keep.
    """
    torch.manual_seed(0)
    model = BatchNormed()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(6, 8),), training=True)
    for k in range(2):
        with torch.inference_mode():
            torch.testing.assert_close(step(randn(6, 8, seed=k)), eager(randn(6, 8, seed=k)))
        torch.testing.assert_close(model.norm.running_var, eager.norm.running_var)
        step(randn(6, 8, seed=k)).sum().backward()
        eager(randn(6, 8, seed=k)).sum().backward()
        assert_same_grads(model, eager, f"step {k}")
    model.eval()
    eager.eval()
    with torch.inference_mode():
        torch.testing.assert_close(step(randn(5, 8, seed=3)), eager(randn(5, 8, seed=3)))


def test_torch_func_transforms_and_batched_gradients_are_refused_clearly() -> None:
    """
    `torch.func.vmap` / `grad` / `jacrev` over a compiled function, and `is_grads_batched=True`
    (a vectorized Jacobian) through a step's backward, were torch tracebacks from inside AOT
    autograd's runtime or the program's `out=` kernels; now errors that say what to do. A plain
    backward still runs after the refused one, at the first call and at later ones.
    """
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(6, 8),), training=True)
    inference = hir.compile(copy.deepcopy(model), (randn(6, 8),))
    transform = r"called inside a torch.func transform \(vmap, grad, jacrev, \.\.\.\)"
    with pytest.raises(CallError, match=transform):
        torch.func.vmap(inference)(randn(3, 6, 8))
    with pytest.raises(CallError, match=transform):
        torch.func.grad(lambda x: step(x).sum())(randn(6, 8))
    for k in range(2):  # AOT autograd's runtime at the first call, LeanStep after
        x = randn(6, 8, seed=k).requires_grad_()
        with pytest.raises(RuntimeError, match="has no batched backward"):
            torch.autograd.grad(step(x), x, torch.eye(4)[:, None].expand(4, 6, 4), is_grads_batched=True)
        step(x).pow(2).sum().backward()
        eager(x.detach()).pow(2).sum().backward()
        assert_same_grads(model, eager, f"call {k}")


class NormsAfterLinears(torch.nn.Module):
    """A linear's output normed directly (no f32 residual before the norm), as autocast gives it bf16."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.proj = torch.nn.Linear(32, 32)
        self.rms = torch.nn.RMSNorm(32)
        self.out = torch.nn.Linear(32, 10)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = self.rms(self.proj(F.gelu(self.norm(self.fc(x)))))
        return F.cross_entropy(self.out(h), target)


def test_norms_of_bf16_activations_with_f32_weights_under_autocast() -> None:
    """
    Under autocast a LayerNorm or RMSNorm of a linear's bf16 output with its f32 weight was an
    `<import>` error ("operand #1 has element type f32, the result bf16"), training or not:
    torch's kernel normalizes such an input in f32 and rounds the result once, as the norm of
    the input widened to f32 does.
    """
    torch.manual_seed(0)
    model = NormsAfterLinears()
    eager = copy.deepcopy(model)
    example = (randn(8, 16), torch.arange(8))
    step = hir.compile(model, example, training=True)
    inference = hir.compile(copy.deepcopy(model), example)
    for k in range(2):
        x, target = randn(8, 16, seed=k), torch.arange(8) % (k + 5)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss, want = step(x, target), eager(x, target)
            with torch.no_grad():
                torch.testing.assert_close(inference(x, target), want.detach())
        torch.testing.assert_close(loss, want)
        loss.backward()
        want.backward()
        for (name, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
            # bf16 gradients: the norm's weight and bias sum bf16 products in another order than eager
            assert (p.grad - q.grad).norm() <= 1e-2 * q.grad.norm(), (k, name)
            p.grad, q.grad = None, None


class CumulativeBatchNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.norm = torch.nn.BatchNorm2d(8, momentum=None)  # a cumulative average of the batches' statistics
        self.out = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.norm(self.conv(x))).mean((2, 3)))


def test_a_batch_norm_with_momentum_none_averages_its_statistics_as_eager() -> None:
    """
    `momentum=None` divides by the batch count read as a Python number, which was an error at the
    call, training or not; the traced forward's factor is now a tensor. A momentum set after the
    first call traces torch's forward again.
    """
    torch.manual_seed(0)
    model = CumulativeBatchNorm()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(4, 3, 6, 6),), training=True)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    for k in range(3):
        if k == 2:
            model.norm.momentum = eager.norm.momentum = 0.5
        for f, optimizer in zip((step, eager), optimizers):
            optimizer.zero_grad()
            f(randn(4, 3, 6, 6, seed=k)).pow(2).sum().backward()
            optimizer.step()
        assert_same_grads(model, eager, f"step {k}")
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            torch.testing.assert_close(getattr(model.norm, name), getattr(eager.norm, name), msg=name)
    model.norm.momentum = eager.norm.momentum = None
    inference = hir.compile(model, (randn(4, 3, 6, 6),))  # also for inference: a train-mode norm updates its statistics
    with torch.no_grad():
        torch.testing.assert_close(inference(randn(4, 3, 6, 6, seed=7)), eager(randn(4, 3, 6, 6, seed=7)))
    torch.testing.assert_close(model.norm.running_var, eager.norm.running_var)


class GaussianHead(torch.nn.Module):
    """A regression head predicting a mean and a log-variance, trained with the Gaussian NLL."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 10)
        self.nll = torch.nn.GaussianNLLLoss(full=True)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_var = self.fc(x).chunk(2, -1)
        shared = F.gaussian_nll_loss(mean, target, log_var.exp().mean(-1), reduction="sum")  # one variance per row
        return self.nll(mean, target, log_var.exp()), shared


def test_the_gaussian_nll_loss_trains_and_is_nan_for_a_negative_variance() -> None:
    """
    torch's Gaussian NLL checks `torch.any(var < 0)` with a Python branch: an error at the call,
    training or not. Traced, the loss is torch's, and NaN where eager raises.
    """
    torch.manual_seed(0)
    model = GaussianHead()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(6, 8), randn(6, 5)), training=True)
    for k in range(2):
        x, target = randn(6, 8, seed=k), randn(6, 5, seed=k + 5)
        ours, want = step(x, target), eager(x, target)
        torch.testing.assert_close(ours, want)
        sum(ours).backward()
        sum(want).backward()
        assert_same_grads(model, eager, f"step {k}")
    loss = hir.compile(F.gaussian_nll_loss, (randn(6, 5), randn(6, 5), randn(6, 5).abs()))
    var = randn(6, 5, seed=3).abs()
    torch.testing.assert_close(loss(x[:, :5], target, var), F.gaussian_nll_loss(x[:, :5], target, var))
    var[2, 1] = -1.0
    assert loss(x[:, :5], target, var).isnan()


class ReturnsACount(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        return self.fc(x), 3


def test_an_output_that_is_a_python_number_is_an_error_that_says_so() -> None:
    """The training step's error named `(3)` "not a tensor computed by the graph"; now as inference's says it."""
    step = hir.compile(ReturnsACount(), (randn(4, 8),), training=True)
    with pytest.raises(
        hir.FrontendError, match=r"an output is a Python int \(3\), not a tensor computed by the program"
    ):
        step(randn(4, 8))


class RenormedEmbedding(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(20, 8, max_norm=1.0)  # rows renormed in place at every lookup
        self.out = torch.nn.Linear(8, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.emb(ids))).mean(1)


def test_an_embedding_with_max_norm_renorms_its_rows_as_eager() -> None:
    """`embedding_renorm_` was an op the table lacks (an error at the call); now the rows it selects, scaled."""
    torch.manual_seed(0)
    model = RenormedEmbedding()
    eager = copy.deepcopy(model)
    ids = [torch.randint(0, 20, (4, 8), generator=torch.Generator().manual_seed(k)) for k in range(3)]
    step = hir.compile(model, (ids[0],), training=True)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.5) for m in (model, eager)]
    for k in range(2):
        for f, optimizer in zip((step, eager), optimizers):
            optimizer.zero_grad()
            f(ids[k]).pow(2).sum().backward()
            optimizer.step()
        assert_same_grads(model, eager, f"step {k}")
        torch.testing.assert_close(model.emb.weight, eager.emb.weight)
    with torch.no_grad():
        torch.testing.assert_close(step(ids[2]), eager(ids[2]))
    torch.testing.assert_close(model.emb.weight, eager.emb.weight)


class TwoInputs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.gate = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * torch.sigmoid(self.gate(context))


def test_the_compiled_modules_own_backward_hooks_run_at_every_backward() -> None:
    """
    A full backward hook on the compiled module itself (logging the gradients of its inputs and
    outputs) ran once in the trace and was refused as an observer; now each `backward()` runs it
    on that call's gradients, as eager, and a pre-hook's and a hook's new gradients are used.
    """
    torch.manual_seed(0)
    model = TwoInputs()
    eager = copy.deepcopy(model)
    seen: dict[str, list[tuple[torch.Tensor | None, ...]]] = {"ours": [], "eager": []}
    for m, key in ((model, "ours"), (eager, "eager")):
        m.register_full_backward_hook(
            lambda mod, grad_in, grad_out, key=key: (
                seen[key].append((*grad_in, *grad_out)) or (grad_in[0] * 2, *grad_in[1:])
            )
        )
        m.register_full_backward_pre_hook(lambda mod, grad_out: (grad_out[0].clamp(-0.1, 0.1),))
    step = hir.compile(model, (randn(6, 8), randn(6, 8)), training=True)
    for k in range(3):  # AOT autograd's runtime at the first call, LeanStep after; context by name
        x = randn(6, 8, seed=k).requires_grad_()
        context = randn(6, 8, seed=k + 3)
        for f, m in ((step, model), (eager, eager)):
            a = x.detach().clone().requires_grad_()
            (f(a, context=context) if k < 2 else f(a, context)).pow(2).sum().backward()
            m.grads = a.grad
        torch.testing.assert_close(model.grads, eager.grads)
        assert_same_grads(model, eager, f"step {k}")
        model.zero_grad()
        eager.zero_grad()
    assert len(seen["ours"]) == len(seen["eager"]) == 3
    for ours, want in zip(seen["ours"], seen["eager"]):
        assert [g is None for g in ours] == [g is None for g in want]
        for a, b in zip(ours, want):
            if b is not None:
                torch.testing.assert_close(a, b)


class Unsupported(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.i0(self.fc(x))


def test_an_error_in_an_autocast_region_names_the_users_line() -> None:
    """
    Compiled inside `torch.autocast`, torch's decomposition inlines the region's body and gave
    its ops the generated code's line (`<eval_with_key>.46:6`) as theirs; now the user's line.
    """
    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(hir.FrontendError) as err:
        hir.compile(Unsupported(), (randn(4, 8),))
    assert re.match(r".*test_training_round5\.py:\d+: error: aten\.i0\.default is not supported", str(err.value))
    assert str(err.value).endswith("return torch.special.i0(self.fc(x))"), str(err.value)


def test_an_op_of_the_training_step_that_does_not_verify_names_the_users_line() -> None:
    """A float64 batch for a float32 model (eager refuses it too) was `<import>: error: the imported ... does not verify`."""
    step = hir.compile(BatchNormed(), (randn(6, 8),), training=True)
    with pytest.raises(hir.FrontendError) as err:
        step(randn(6, 8).double())
    assert re.search(
        r"test_training_round5\.py:\d+: error: aten\.addmm\.default cannot be imported: operand", str(err.value)
    )


def _save_matmuls(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    return CheckpointPolicy.MUST_SAVE if op == torch.ops.aten.addmm.default else CheckpointPolicy.PREFER_RECOMPUTE


class SelectivelyCheckpointed(torch.nn.Module):
    """Two MLP blocks, each under selective activation checkpointing (a policy that saves the matmuls)."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([NormsAfterLinears().proj, NormsAfterLinears().proj])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        policy = partial(create_selective_checkpoint_contexts, _save_matmuls)
        for block in self.blocks:
            x = checkpoint(
                lambda t, block=block: F.gelu(block(torch.tanh(t))), x, use_reentrant=False, context_fn=policy
            )
        return x


def test_selective_activation_checkpointing_trains_as_eager() -> None:
    """
    Each selective checkpoint region tags its ops with its number where torch.compile's tracer
    gives it one; traced by AOT autograd alone the number was None, and torch's partitioner
    failed comparing two (a `<capture>:` error).
    """
    torch.manual_seed(0)
    model = SelectivelyCheckpointed()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(4, 32),), training=True)
    x = randn(4, 32, seed=1)
    step(x).pow(2).sum().backward()
    eager(x).pow(2).sum().backward()
    assert_same_grads(model, eager, "step")


class Symmetric(torch.nn.Module):
    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return (w + w.t()) / 2


class SymmetricTwice(torch.nn.Module):
    """A parametrized (symmetric) weight read twice, as a recurrent cell reads it at every step."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        parametrize.register_parametrization(self.fc, "weight", Symmetric())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.tanh(self.fc(x)))


def test_parametrizations_cached_around_the_call_are_computed_in_the_trace() -> None:
    """
    Inside `parametrize.cached()` the trace read the cached weight: a `<capture>:` error in
    training, and for inference a fake tensor left in the cache, which the caller's eager calls
    in the region then computed with.
    """
    torch.manual_seed(0)
    model = SymmetricTwice()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(4, 8),), training=True)
    for k in range(2):
        with parametrize.cached():
            step(randn(4, 8, seed=k)).pow(2).sum().backward()
            eager(randn(4, 8, seed=k)).pow(2).sum().backward()
        assert_same_grads(model, eager, f"step {k}")
    with parametrize.cached():
        inference = hir.compile(copy.deepcopy(model), (randn(4, 8),))
        want = eager(randn(4, 8, seed=5))
        assert not isinstance(want, torch._subclasses.FakeTensor)
        torch.testing.assert_close(inference(randn(4, 8, seed=5)), want)
