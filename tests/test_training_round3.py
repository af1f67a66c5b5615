"""
`hir.compile(..., training=True)` in more training loops as users write them: each against an
eager deep copy of the same model with the same optimizer, on seeded random data (f32, CPU).
"""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
import torch.nn.functional as F
from test_training import randn
from test_training_round2 import Mlp, assert_same_grads

import hir
from hir.frontend import FrontendError


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
    for step, autocast in enumerate([False, True, False]):
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
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):  # an evaluation pass: programs of its own
        assert compiled(randn(8, 16, seed=20)).dtype == torch.bfloat16


class GradCam(torch.nn.Module):
    """Grad-CAM's way: forward registers a hook on the activation that keeps its gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 2)
        self.gradients: list[torch.Tensor] = []

    def save_gradient(self, grad: torch.Tensor) -> None:
        self.gradients.append(grad)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.relu(self.conv(x))
        if a.requires_grad:
            a.register_hook(self.save_gradient)
        return self.fc(a.mean((2, 3)))


class DomainAdversarial(torch.nn.Module):
    """A gradient reversal layer as a backward hook that returns the new input gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.features = torch.nn.Linear(16, 16)
        self.reverse = torch.nn.Identity()
        self.domain = torch.nn.Linear(16, 2)
        self.classes = torch.nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.features(x))
        return self.classes(h), self.domain(self.reverse(h))


def test_a_backward_hook_that_observes_is_an_error_at_its_line_and_one_that_returns_trains() -> None:
    """
    A backward hook (a module's, or a tensor's registered in forward) runs while AOT autograd
    traces the backward, on values of no call, and never at a call: one that keeps a gradient
    (Grad-CAM, gradient logging) kept one traced value and nothing after. An error at the hook's
    line. A hook that returns the new gradient (a gradient reversal layer) is traced into the
    backward program and trains as in eager.
    """
    from hir.frontend.errors import FrontendError

    torch.manual_seed(0)
    cam = GradCam()
    with pytest.raises(FrontendError, match=r"test_training_round3\.py:\d+: error: <GradCam>: a tensor hook that"):
        hir.compile(cam, (randn(2, 3, 5, 5),), training=True)(randn(2, 3, 5, 5))
    model = Mlp()
    kept: list[torch.Tensor] = []
    handle = model.fc2.register_full_backward_hook(lambda module, grad_in, grad_out: kept.append(grad_out[0]))
    compiled = hir.compile(model, (randn(8, 16),), training=True)
    with pytest.raises(FrontendError, match=r"test_training_round3\.py:\d+: error: <Mlp>: a backward hook that"):
        compiled(randn(8, 16))
    handle.remove()
    eager = copy.deepcopy(model)
    x = randn(8, 16, seed=1)
    compiled(x).sum().backward()  # the step traces again, without the hook
    eager(x).sum().backward()
    assert_same_grads(model, eager, "without the hook")

    torch.manual_seed(0)
    model = DomainAdversarial()
    eager = copy.deepcopy(model)
    for m in (model, eager):
        m.reverse.register_full_backward_hook(lambda module, grad_in, grad_out: (-0.5 * grad_in[0],))
    compiled = hir.compile(model, (randn(8, 16),), training=True)
    for step in range(2):
        x = randn(8, 16, seed=step)
        for classes, domain in (compiled(x), eager(x)):
            (classes.pow(2).sum() + domain.pow(2).sum()).backward()
        assert_same_grads(model, eager, f"step {step}")
        model.zero_grad()
        eager.zero_grad()


@pytest.mark.parametrize("norm", ["spectral_norm", "weight_norm"])
def test_the_old_spectral_and_weight_norms_train_as_eager(norm: str) -> None:
    """
    `torch.nn.utils.spectral_norm` / `weight_norm` (GAN code's) keep `fc.weight` as a plain
    attribute that their forward pre-hook recomputes from `weight_orig` (and the power iteration's
    buffers) or `weight_g` and `weight_v`. `weight_orig` had no gradient (the trace's reach stopped
    at the weight the hook assigned), and the weight norm's second backward ran into the freed
    graph of the weight computed at setup.
    """

    def model() -> torch.nn.Module:
        torch.manual_seed(0)
        mlp = Mlp()
        getattr(torch.nn.utils, norm)(mlp.fc1)
        return mlp

    with pytest.warns(FutureWarning) if norm == "weight_norm" else contextlib.nullcontext():
        ours, eager = model(), model()  # the old weight norm's module cannot be deep-copied
    compiled = hir.compile(ours, (randn(8, 16),), training=True)
    sgd, eager_sgd = torch.optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(eager.parameters(), lr=0.1)
    for step in range(3):
        x = randn(8, 16, seed=step)
        out, want = compiled(x), eager(x)
        torch.testing.assert_close(out, want)
        out.pow(2).sum().backward()
        want.pow(2).sum().backward()
        assert_same_grads(ours, eager, f"step {step}")
        sgd.step()
        eager_sgd.step()
        sgd.zero_grad()
        eager_sgd.zero_grad()
    for (name, p), q in zip(ours.state_dict().items(), eager.state_dict().values(), strict=True):
        torch.testing.assert_close(p, q, msg=lambda m, name=name: f"{name}: {m}")  # weight_u and weight_v too


def test_a_submodule_replaced_after_the_first_call_is_read_and_traced() -> None:
    """
    `model.fc2 = nn.Linear(...)` (a new head) or `model.fc2 = nn.Sequential(..., nn.Dropout())`
    after the first call: the calls read the new submodule's parameters and run its code, as
    eager does, for training and inference (the programs read the old submodule's parameters, and
    the new one got no gradient).
    """
    torch.manual_seed(0)
    model = Mlp()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(8, 16),), training=True)
    inference = hir.compile(model, (randn(8, 16),))
    x = randn(8, 16, seed=1)
    step(x).sum().backward()
    with torch.no_grad():
        inference(x)
    for head in (torch.nn.Linear(32, 8), torch.nn.Sequential(torch.nn.Linear(32, 8), torch.nn.Dropout(1.0))):
        model.fc2, eager.fc2 = head, copy.deepcopy(head)
        model.zero_grad()
        eager.zero_grad()
        out, want = step(x), eager(x)
        torch.testing.assert_close(out, want)
        out.pow(2).sum().backward()
        want.pow(2).sum().backward()
        assert_same_grads(model, eager, f"after model.fc2 = {head}")
        with torch.no_grad():
            torch.testing.assert_close(inference(x), want)


class ConvBatchNormed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 4)
        self.bn1 = torch.nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn1(self.fc(F.relu(self.bn(self.conv(x))).mean((2, 3))))


def test_batch_norm_under_autocast_saves_f32_statistics_as_eager() -> None:
    """
    Under autocast a batch norm takes a bf16 input and f32 parameters; torch's CPU kernel saves
    the mean and 1/std for the backward in f32, where torch's decomposition rounded them to bf16:
    the gradients of the norms and of the layers before were off by up to 0.46 (eager's own error
    against f64: 0.03). Now they are eager's.
    """
    torch.manual_seed(0)
    model = ConvBatchNormed()
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, (randn(4, 3, 6, 6),), training=True)
    x, target = randn(4, 3, 6, 6, seed=1), torch.randint(0, 4, (4,), generator=torch.Generator().manual_seed(2))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        losses = [F.cross_entropy(m(x), target, label_smoothing=0.1) for m in (compiled, eager)]
    for loss in losses:
        loss.backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-2, atol=1e-2, msg=lambda m, name=name: f"{name}: {m}")
    for (name, b), c in zip(model.named_buffers(), eager.buffers(), strict=True):
        torch.testing.assert_close(b, c, rtol=1e-2, atol=1e-2, msg=lambda m, name=name: f"{name}: {m}")


def test_a_sparse_embedding_is_an_error_naming_the_layer() -> None:
    """`nn.Embedding(sparse=True)` has a sparse gradient, which the programs do not make: an error that says so."""
    from hir.frontend.errors import FrontendError

    model = torch.nn.Sequential(torch.nn.Embedding(20, 8, padding_idx=0, sparse=True), torch.nn.Linear(8, 2))
    ids = torch.randint(0, 20, (4, 6), generator=torch.Generator().manual_seed(0))
    compiled = hir.compile(model, (ids,), training=True)
    with pytest.raises(FrontendError, match=r"<Sequential>: 0 is an nn\.Embedding with sparse=True.*use sparse=False"):
        compiled(ids)
    with torch.no_grad():  # no gradient: an inference program
        torch.testing.assert_close(compiled(ids), model(ids))


class _DroppedTPMLP(torch.nn.Module):
    """The TP MLP with a dropout on its output: the mode decides whether the step draws."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32, bias=False)
        self.fc2 = torch.nn.Linear(32, 16, bias=False)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(F.gelu(self.fc1(x))))


_TP_PARAMS = {"fc1.weight": "[didx, serial]", "fc2.weight": "[serial, didx]"}


def test_a_mesh_step_follows_the_module_mode_and_a_replaced_layer() -> None:
    # The steps of the first call's mode ran after model.train() (no dropout drawn, silently) and
    # read a replaced layer's old weights.
    torch.manual_seed(0)
    model, x, rows = _DroppedTPMLP().eval(), torch.randn(8, 16), "[didx, serial]"
    step = hir.compile(model, (x,), [rows], [rows], mesh=[0], param_layouts=_TP_PARAMS, training=True)
    torch.testing.assert_close(step(x), model(x))
    model.train()
    with pytest.raises(FrontendError, match=r"test_training_round3\.py:\d+: error: aten\.native_dropout"):
        step(x)
    model.eval()
    model.fc2 = torch.nn.Linear(32, 16, bias=False)
    out = step(x)
    torch.testing.assert_close(out, model(x))
    out.square().sum().backward()
    eager = copy.deepcopy(model)
    eager.zero_grad()
    eager(x).square().sum().backward()
    torch.testing.assert_close(model.fc2.weight.grad, eager.fc2.weight.grad)
