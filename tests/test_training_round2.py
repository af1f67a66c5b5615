"""
`hir.compile(..., training=True)` in training loops as users write them: parameters frozen and
unfrozen between steps, `retain_graph=True`, `create_graph=True`; each against an eager deep
copy on random data (f32, CPU), and on a 2-rank gloo mesh (tests/training_round2_driver.py).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from ranks import run_ranks
from test_distributed import _output
from test_training import randn

import hir

REPO = Path(__file__).resolve().parent.parent


class BatchNormed(torch.nn.Module):
    """A batch norm in training mode: its running statistics are updated, so AOT autograd's runtime runs it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.bn = torch.nn.BatchNorm1d(32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.bn(self.fc1(x))))


class Mlp(torch.nn.Module):
    """No state updated: after its first backward, the frontend's own LeanStep runs it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


def assert_same_grads(ours: torch.nn.Module, eager: torch.nn.Module, what: str) -> None:
    """Every .grad as eager's: None where eager's is None, else close."""
    for (name, p), (_, q) in zip(ours.named_parameters(), eager.named_parameters(), strict=True):
        assert (p.grad is None) == (q.grad is None), f"{what}: {name}.grad is {p.grad}, eager's {q.grad}"
        if q.grad is not None:
            torch.testing.assert_close(p.grad, q.grad, msg=lambda m, name=name: f"{what}: {name}: {m}")


def test_a_parameter_unfrozen_or_frozen_after_the_first_call_gets_eagers_gradient() -> None:
    """
    The backward is traced for the parameters that require grad at the call: a layer unfrozen
    after the first steps (fine-tuning that unfreezes a backbone) gets its gradient, one frozen
    since gets none, a switch back runs the steps compiled for it, and the SGD steps move the
    parameters as eager's do.
    """
    torch.manual_seed(0)
    model = Mlp()
    model.fc1.requires_grad_(False)
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, (randn(8, 16),), training=True)
    ours, theirs = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(eager.parameters(), lr=0.1)
    for step, frozen in enumerate(["fc1", None, "fc2", None]):
        for m in (model, eager):
            m.requires_grad_(True)
            if frozen is not None:
                m.get_submodule(frozen).requires_grad_(False)
        ours.zero_grad()
        theirs.zero_grad()
        x, target = randn(8, 16, seed=step), randn(8, 8, seed=10 + step)
        F.mse_loss(compiled(x), target).backward()
        F.mse_loss(eager(x), target).backward()
        assert_same_grads(model, eager, f"step {step}, {frozen or 'nothing'} frozen")
        ours.step()
        theirs.step()
    assert len(compiled._by_mode) == 3  # one per set of parameters that require grad
    for p, q in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(p, q)


def test_a_global_weight_unfrozen_after_the_first_call_gets_its_gradient() -> None:
    """A function of a global weight: the weight's requires_grad is read at every call too."""
    w = randn(16, 8, seed=1)
    b = randn(8, seed=2).requires_grad_()

    def layer(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ w + b)

    compiled = hir.compile(layer, (randn(4, 16),), training=True)
    compiled(randn(4, 16)).sum().backward()
    assert w.grad is None
    w.requires_grad_(True)
    b.grad = None
    x = randn(4, 16, seed=3)
    compiled(x).sum().backward()
    w_eager, b_eager = w.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    torch.tanh(x @ w_eager + b_eager).sum().backward()
    torch.testing.assert_close(w.grad, w_eager.grad)
    torch.testing.assert_close(b.grad, b_eager.grad)


def test_retain_graph_after_a_first_plain_backward() -> None:
    """
    A batch-normed model (AOT autograd's runtime): the first step's backward frees the graph,
    later ones keep it for a second loss through the same forward (`retain_graph=True`), as a GAN's
    two losses do; the gradients are eager's.
    """
    torch.manual_seed(0)
    model = BatchNormed()
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, (randn(8, 16),), training=True)
    for step in range(3):
        model.zero_grad()
        eager.zero_grad()
        x = randn(8, 16, seed=step)
        for y in (compiled(x), eager(x)):
            if step == 0:
                y.sum().backward()
            else:
                y.sum().backward(retain_graph=True)
                (y * y).mean().backward()
        assert_same_grads(model, eager, f"step {step}")
    torch.testing.assert_close(model.bn.running_var, eager.bn.running_var)


@pytest.mark.parametrize("module", [Mlp, BatchNormed])
def test_create_graph_is_refused_at_the_first_call_and_later(module: type) -> None:
    """
    A gradient penalty (`create_graph=True`) is refused with the same error by either runtime, at
    the first call (AOT autograd's) and at later ones, rather than an error about donated buffers
    or torch.compile, or gradients that silently have no graph.
    """
    torch.manual_seed(0)
    compiled = hir.compile(module(), (randn(8, 16),), training=True)
    for step in range(2):
        x = randn(8, 16, seed=step).requires_grad_()
        with pytest.raises(RuntimeError, match=r"hir\.compile\(\.\.\., training=True\) has no double backward"):
            torch.autograd.grad(compiled(x).pow(2).sum(), x, create_graph=True)
        compiled(x).sum().backward()  # the step still trains


class KeepsAuxLoss(torch.nn.Module):
    """A mixture of experts' way: the load-balancing loss kept on the module for the loop to add."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(16, 4)
        self.aux_loss: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = self.gate(x).softmax(-1)
        self.aux_loss = probs.mean(0).pow(2).sum()
        return probs


class KeepsMaps(torch.nn.Module):
    """Attention maps appended to a list, to plot after the step."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(16, 4)
        self.maps: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = self.gate(x).softmax(-1)
        self.maps.append(probs)
        return probs


def test_a_tensor_stored_on_the_module_is_an_error_at_its_line() -> None:
    """
    The programs do not run forward's Python code: a tensor it stores on the module would hold the
    trace's value at every call (an aux loss the loop adds, maps to plot). An error at the line that
    stores it (naming the list that grew), with the module's attributes as they were.
    """
    from hir.frontend.errors import FrontendError

    aux, maps = KeepsAuxLoss(), KeepsMaps()
    for module, refusal in (
        (aux, r"test_training_round2\.py:\d+: error: <KeepsAuxLoss>: forward stores a tensor in self\.aux_loss;"),
        (maps, r"<capture>: error: <KeepsMaps>: forward adds tensors to self\.maps;"),
    ):
        compiled = hir.compile(module, (randn(8, 16),), training=True)
        with pytest.raises(FrontendError, match=refusal):
            compiled(randn(8, 16))
    assert aux.aux_loss is None
    assert maps.maps == []
    # A tensor that needs no grad (a prediction kept for metrics) is a warning at its line.
    predicted = KeepsAuxLoss()
    predicted.forward = lambda x: setattr(predicted, "aux_loss", x.argmax(-1)) or predicted.gate(x)  # type: ignore[method-assign]
    with pytest.warns(UserWarning, match=r"test_training_round2\.py:\d+: error: <KeepsAuxLoss>: forward stores"):
        hir.compile(predicted, (randn(8, 16),), training=True)(randn(8, 16))
    assert predicted.aux_loss is None


def test_a_forward_hook_that_observes_is_an_error_at_its_line_and_one_that_returns_stays() -> None:
    """
    A forward hook that keeps a module's output (features for a perceptual loss) would see the
    trace's values only: an error at the hook's line. A hook that returns a new output is traced
    into the program, as eager runs it.
    """
    from hir.frontend.errors import FrontendError

    torch.manual_seed(0)
    model = Mlp()
    features: list[torch.Tensor] = []
    handle = model.fc1.register_forward_hook(lambda m, args, out: features.append(out))
    with pytest.raises(
        FrontendError, match=r"test_training_round2\.py:\d+: error: <Mlp>: a forward hook that returns None"
    ):
        hir.compile(model, (randn(8, 16),), training=True)(randn(8, 16))
    handle.remove()
    model.fc1.register_forward_hook(lambda m, args, out: out * 0.5)
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, (randn(8, 16),), training=True)
    x = randn(8, 16, seed=1)
    torch.testing.assert_close(compiled(x), eager(x))
    compiled(x).sum().backward()
    eager(x).sum().backward()
    assert_same_grads(model, eager, "a hook that returns")


@pytest.mark.distributed
def test_mesh_steps_follow_requires_grad() -> None:
    result = run_ranks([str(REPO / "tests" / "training_round2_driver.py")], timeout=240)
    assert result.returncode == 0, _output(result)
    assert "training round 2 on a mesh: every check matches eager torch" in result.stdout


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_half_precision_rms_norm_trains_with_torchs_default_eps(dtype: torch.dtype) -> None:
    # torch's kernel takes f32's eps for bf16/f16 inputs; the input's own (bf16's 0.0078) moved
    # small activations' norms by up to 0.28.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.RMSNorm(16)).to(dtype)
    eager = copy.deepcopy(model)
    x = torch.randn(4, 16, dtype=dtype) * 1e-3
    step = hir.compile(model, (x,), training=True)
    torch.testing.assert_close(step(x), eager(x))
