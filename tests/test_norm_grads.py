"""
`fusion.layer_norm_backward` and `fusion.rms_norm_backward` against autograd of the norms
written out in f64, on random data (whole, and with the rows streamed); and the training step
of a norm's module, whose backward imports them (frontend/training_ops.py).
"""

from __future__ import annotations

import copy

import pytest
import torch

import hir


def _reference(kind: str, grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None, dims: int, eps: float):
    """dx of the norm written out: (x - mean) * rsqrt(var + eps) (layer) or x * rsqrt(mean(x^2) + eps) (rms)."""
    x = x.double().requires_grad_()
    axes = tuple(range(x.dim() - dims, x.dim()))
    if kind == "layer":
        mean = x.mean(axes, keepdim=True)
        y = (x - mean) * torch.rsqrt(((x - mean) ** 2).mean(axes, keepdim=True) + eps)
    else:
        y = x * torch.rsqrt((x * x).mean(axes, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    y.backward(grad.double())
    return x.grad.float()  # type: ignore[union-attr]


CASES = [
    # kind, shape, normalized axes, weight, eps
    ("layer", (6, 16), 1, True, 1e-5),
    ("layer", (2, 3, 4, 8), 2, False, 1e-3),
    ("rms", (6, 16), 1, True, 1e-6),
    ("rms", (4, 5, 8), 1, False, 1e-5),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]} {c[1]} dims {c[2]} weight {c[3]}" for c in CASES])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_norm_backward_matches_the_math(case: tuple, stream: bool) -> None:
    kind, shape, count, has_weight, eps = case
    rank = len(shape)
    dims = list(range(rank - count, rank))
    layout = f", #fusion.parallel<[stream{', serial' * (rank - 1)}]>" if stream else ""
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    result = f"tensor<{'x'.join(map(str, shape))}xf32{layout}>"
    w_type = f"tensor<{'x'.join(map(str, shape[-count:]))}xf32>"
    args = f"%dy: {t}, %x: {t}" + (f", %w: {w_type}" if has_weight else "")
    operands = "%dy, %x" + (", %w" if has_weight else "")
    types = f"{t}, {t}" + (f", {w_type}" if has_weight else "")
    text = (
        f"func.func @main({args}) -> {result} {{\n"
        f"  %dx = fusion.{kind}_norm_backward {operands} dims = {dims} eps = {eps:e} : {types} -> {result}\n"
        f"  func.return %dx : {result}\n}}\n"
    )
    generator = torch.Generator().manual_seed(11)
    grad, x = (torch.randn(shape, generator=generator) for _ in range(2))
    x = x * 3 + 1  # a mean and a scale away from 0 and 1
    weight = torch.randn(shape[-count:], generator=generator) if has_weight else None
    expected = _reference(kind, grad, x, weight, count, eps)
    inputs = [grad, x, *([weight] if weight is not None else [])]
    lowered = hir.run_pipeline(hir.parse(text), "stream-lowering")
    assert ("hir.for" in str(lowered)) == stream
    for program in (hir.parse(text), lowered):
        (got,) = hir.execute(program, inputs)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


class PreNorm(torch.nn.Module):
    def __init__(self, norm: torch.nn.Module) -> None:
        super().__init__()
        self.norm, self.fc = norm, torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc(self.norm(x))


NORMS = {
    "LayerNorm": lambda: torch.nn.LayerNorm(16),
    "LayerNorm without affine": lambda: torch.nn.LayerNorm(16, elementwise_affine=False),
    "LayerNorm without bias": lambda: torch.nn.LayerNorm(16, bias=False),
    "RMSNorm": lambda: torch.nn.RMSNorm(16),
    "RMSNorm with eps": lambda: torch.nn.RMSNorm(16, eps=1e-3),
}


@pytest.mark.parametrize("name", list(NORMS))
def test_a_norms_training_step_runs_its_fused_backward(name: str) -> None:
    """The forward's norm is one fusion op and the backward's input gradient one op; every gradient matches eager."""
    torch.manual_seed(0)
    module = PreNorm(NORMS[name]())
    with torch.no_grad():
        for p in module.norm.parameters():
            p.add_(torch.randn_like(p) * 0.3)  # not the ones and zeros a norm starts with
    eager = copy.deepcopy(module)
    x = torch.randn(2, 6, 16) * 2 + 0.5
    compiled = hir.compile(module, (x,), training=True)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    grad = torch.randn(2, 6, 16)
    compiled(xa).backward(grad)
    eager(xb).backward(grad)
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-4, atol=1e-5)
    for (pname, p), q in zip(module.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=pname)
    programs = next(iter(compiled.graphs.values()))
    kind = "layer_norm" if "Layer" in name else "rms_norm"
    assert f"fusion.{kind} " in programs["forward"].fusion_text
    assert f"fusion.{kind}_backward " in programs["backward"].fusion_text
