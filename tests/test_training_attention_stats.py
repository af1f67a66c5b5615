"""
A training step's attention keeps its forward's softmax statistics: `hir.compile(...,
training=True)` imports unmasked `F.scaled_dot_product_attention` as `fusion.sdpa` and
`fusion.sdpa_logsumexp` (one fused kernel call at run time), saves the result and the statistics,
and its backward is one `fusion.sdpa_backward_stats`, torch's fused backward kernel on them: the
attention does not run again in the backward, and the three gradients are not stacked into a
copy. Gradients match eager on random data; the runtime's fallbacks (no kernel's statistics at
hand, a dtype the fused kernel refuses) match too. The CUDA tests check the flash and
memory-efficient kernels' statistics and backward against autograd.
"""

from __future__ import annotations

import collections
import copy
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import hir
from hir.runtime import attention_kernels as kernels

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from tp_layer import TPLayer


class AtenCounts(TorchDispatchMode):
    """Counts the aten ops a call runs."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def _layer(device: str = "cpu", dtype: torch.dtype = torch.float32) -> TPLayer:
    torch.manual_seed(0)
    layer = TPLayer(32, 4, 64, 8, dtype, device)
    with torch.no_grad():
        for p in (*layer.norm1.parameters(), *layer.norm2.parameters()):
            p.add_(torch.randn_like(p) * 0.1)  # not the ones and zeros a norm starts with
    return layer


def _step(model: torch.nn.Module, x: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.clone().requires_grad_()
    out = model(x)
    out.backward(dy)
    return out.detach(), x.grad  # type: ignore[return-value]


def test_tp_layer_keeps_the_statistics_and_matches_eager() -> None:
    """The TP layer's step: one attention kernel in the forward, none in the backward, no stack; eager's gradients."""
    layer = _layer()
    eager = copy.deepcopy(layer)
    compiled = hir.compile(layer, (torch.randn(32, 32),), training=True)
    x, dy = torch.randn(32, 32), torch.randn(32, 32)
    _step(compiled, x, dy)  # traces
    for model in (layer, eager):
        model.zero_grad()
    x = x.clone().requires_grad_()
    with AtenCounts() as forward:
        out = compiled(x)
    with AtenCounts() as backward:
        out.backward(dy)
    want_out, want_dx = _step(eager, x.detach(), dy)
    torch.testing.assert_close(out, want_out)
    torch.testing.assert_close(x.grad, want_dx)
    for (name, p), q in zip(layer.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)

    programs = next(iter(compiled.graphs.values()))
    assert "fusion.sdpa_logsumexp " in programs["forward"].fusion_text
    text = programs["backward"].fusion_text
    assert "fusion.sdpa_backward_stats " in text
    assert "fusion.sdpa_backward " not in text
    # The forward's kernel returns the statistics with the result; the backward runs the fused
    # backward kernel on them, not the attention again, and reads each gradient where the kernel
    # wrote it (no stack, and the heads merged back into GEMM operands as views: no clone).
    assert forward.counts["_scaled_dot_product_flash_attention_for_cpu"] == 1
    assert backward.counts["_scaled_dot_product_flash_attention_for_cpu"] == 0
    assert backward.counts["_scaled_dot_product_flash_attention_for_cpu_backward"] == 1
    assert backward.counts["stack"] == 0
    assert backward.counts["clone"] == 0


class Attention(torch.nn.Module):
    """Self-attention on [B, heads, T, E] with an optional mask, as a user writes it."""

    def __init__(self, mask: torch.Tensor | None = None, causal: bool = False, scale: float | None = None):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.mask, self.causal, self.scale = mask, causal, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.proj(x), x * 0.5, x.sin()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask, is_causal=self.causal, scale=self.scale)
        return y * 2.0


@pytest.mark.parametrize(
    ("dtype", "mask", "causal", "stats"),
    [
        (torch.float32, None, False, True),  # unmasked: the statistics kept
        (torch.float64, None, True, True),
        (torch.float32, "bool", False, False),  # an arbitrary mask: the attention again, as before
    ],
    ids=["f32", "f64-causal", "masked"],
)
def test_attention_gradients_match_eager(dtype: torch.dtype, mask: str | None, causal: bool, stats: bool) -> None:
    torch.manual_seed(1)
    m = torch.rand(5, 5) > 0.3 if mask else None
    if m is not None:
        m.fill_diagonal_(True)  # no row masked whole
    model = Attention(m, causal, 0.4).to(dtype)
    eager = copy.deepcopy(model)
    x, dy = torch.randn(2, 3, 5, 8, dtype=dtype), torch.randn(2, 3, 5, 8, dtype=dtype)
    compiled = hir.compile(model, (x,), training=True)
    got, got_dx = _step(compiled, x, dy)
    want, want_dx = _step(eager, x, dy)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_dx, want_dx)
    torch.testing.assert_close(model.proj.weight.grad, eager.proj.weight.grad)
    backward = next(iter(compiled.graphs.values()))["backward"].fusion_text
    assert ("fusion.sdpa_backward_stats " in backward) == stats
    assert ("fusion.sdpa_backward " in backward) != stats


def test_statistics_without_the_kernels() -> None:
    """
    `fusion.sdpa_logsumexp` of a result whose kernel kept nothing (another launch), or that was
    written since, computes the statistics again; the backward from statistics matches autograd.
    """
    torch.manual_seed(2)
    q, k, v = (torch.randn(2, 3, 6, 8) for _ in range(3))
    scores = (q @ k.transpose(-2, -1) * 0.3).masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf"))
    want = scores.logsumexp(-1)
    out, lse = kernels.attention_with_logsumexp(q, k, v, True, 0.3)
    assert lse is not None
    assert kernels.kept_logsumexp(out) is None  # only a kernel paired with a fusion.sdpa_logsumexp keeps them
    torch.testing.assert_close(lse, want)
    kernels.keep_logsumexp(out, torch.zeros(2, 3, 6))
    out.mul_(1.0)  # written since: the kept statistics are stale
    assert kernels.kept_logsumexp(out) is None
    torch.testing.assert_close(kernels.logsumexp_of_scores(q, k, True, 0.3), want)

    qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
    ref = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=0.3)
    dy = torch.randn_like(ref)
    ref.backward(dy)
    grads = kernels.attention_gradients_from_statistics(dy, q, k, v, out, lse, True, 0.3)
    for got, x in zip(grads, (qs, ks, vs)):
        torch.testing.assert_close(got, x.grad)
    stacked = kernels.StackedGradients(grads)
    torch.testing.assert_close(stacked[1:2, :, 1:], grads[1][None, :, 1:])
    torch.testing.assert_close(stacked[0:3:2], torch.stack(grads)[0:3:2])


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "f16", "f32"])
def test_cuda_statistics_and_backward_match_autograd(dtype: torch.dtype) -> None:
    """Flash attention's (f16, bf16) and memory-efficient attention's (f32) statistics and backward, odd lengths too."""
    torch.manual_seed(3)
    tol = 2e-2 if dtype != torch.float32 else 1e-4
    for shape in [(2, 4, 37, 64), (3, 50, 40), (1, 2, 300, 128)]:
        for causal in (False, True):
            q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
            dy = torch.randn(shape, device="cuda", dtype=dtype)
            out, lse = kernels.attention_with_logsumexp(q.detach(), k.detach(), v.detach(), causal, 0.3)
            assert lse is not None
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.3)
            ref.backward(dy)
            want_lse = kernels.logsumexp_of_scores(q.detach(), k.detach(), causal, 0.3)
            grads = kernels.attention_gradients_from_statistics(
                dy, q.detach(), k.detach(), v.detach(), out, lse, causal, 0.3
            )
            for got, want in [(out, ref), (lse, want_lse), *zip(grads, (q.grad, k.grad, v.grad))]:
                error = ((got.float() - want.float()).norm() / want.float().norm()).item()
                assert error < tol, (shape, causal, error)


@cuda
def test_cuda_tp_layer_bf16_step_matches_eager() -> None:
    layer = _layer("cuda", torch.bfloat16)
    eager = copy.deepcopy(layer)
    x, dy = (
        torch.randn(32, 32, device="cuda", dtype=torch.bfloat16),
        torch.randn(32, 32, device="cuda", dtype=torch.bfloat16),
    )
    compiled = hir.compile(layer, (x,), training=True)
    got, want = _step(compiled, x, dy), _step(eager, x, dy)
    for a, b in zip(got, want):
        assert ((a.float() - b.float()).norm() / b.float().norm()).item() < 3e-2
    for (name, p), q in zip(layer.named_parameters(), eager.parameters()):
        assert ((p.grad.float() - q.grad.float()).norm() / q.grad.float().norm()).item() < 3e-2, name
