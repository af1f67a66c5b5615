"""
`hir.compile(..., training=True)` on attention as training code writes it, each against an eager
deep copy on seeded random data (f32, CPU): unmasked attention keeps its forward's softmax
statistics (`fusion.sdpa_logsumexp`, `fusion.sdpa_backward_stats`) through grouped-query heads
(`enable_gqa=True`), q, k, v cut from one fused projection by an unbind, a result used twice and
returned, an output gradient that is not contiguous; 3-D attention whose result is updated in
place (eager's math saves no result), and the 4-D one's clear error; an empty batch's step (a split's backward was
`aten.cat` of no operand); and, through tests/training_round8_driver.py on 2 gloo ranks, the TP
layer on one-token sequences.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from ranks import run_ranks
from test_distributed import _output
from test_training import assert_same_grads, randn

import hir
from hir.frontend import FrontendError

DRIVER = Path(__file__).resolve().parent / "training_round8_driver.py"
sdpa = F.scaled_dot_product_attention


def _heads(t: torch.Tensor, heads: int = 4) -> torch.Tensor:
    B, T, E = t.shape
    return t.view(B, T, heads, E // heads).transpose(1, 2)


def gqa(x: torch.Tensor, qkv: torch.Tensor) -> torch.Tensor:
    q, k, v = qkv[..., :32].split([16, 8, 8], -1)  # 4 query heads, 2 key and value heads
    return sdpa(_heads(q), _heads(k, 2), _heads(v, 2), is_causal=True, enable_gqa=True)


def unbound_twice(x: torch.Tensor, qkv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, _ = x.shape
    q, k, v = (t.transpose(1, 2) for t in qkv[..., :48].reshape(B, T, 3, 4, 4).unbind(2))
    y = sdpa(q, k, v, is_causal=True)
    return sdpa(y, k, v) + y, y  # the first result read again, and returned


class Attention(torch.nn.Module):
    def __init__(self, attend: Callable[..., object]) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.attend = attend

    def forward(self, x: torch.Tensor) -> object:
        return self.attend(x, self.qkv(x))


@pytest.mark.parametrize(
    ("attend", "statistics"),
    [(gqa, True), (unbound_twice, True)],
    ids=["gqa", "unbound-twice"],
)
def test_attention_as_written_trains_as_eager(attend: Callable[..., object], statistics: bool) -> None:
    torch.manual_seed(0)
    model = Attention(attend)
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(2, 5, 16),), training=True)
    for k in range(2):  # AOT autograd's runtime at the first call, the frontend's own after
        x = randn(2, 5, 16, seed=k)
        ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
        got, want = step(ours), eager(theirs)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b)
            # a gradient that is not contiguous: [B, T, heads, hd] transposed to the heads' layout
            grad = randn(b.shape[0], b.shape[2], b.shape[1], b.shape[3], seed=10 + k).transpose(1, 2)
            a.backward(grad, retain_graph=True)
            b.backward(grad, retain_graph=True)
        torch.testing.assert_close(ours.grad, theirs.grad)
        assert_same_grads(model, eager)
        model.zero_grad()
        eager.zero_grad()
    backward = next(iter(step.graphs.values()))["backward"].fusion_text
    assert ("fusion.sdpa_backward_stats " in backward) == statistics


def test_attention_of_three_d_heads_updated_in_place_trains_as_eager() -> None:
    """
    Eager runs 3-D attention (`[B*heads, T, hd]`) as its math, which does not save the result, so
    `y += q` after it trains; the statistics path saved the result and the step was refused ('one
    of the variables needed for gradient computation has been modified by an inplace operation
    ... output 0 of _AttentionWithStatistics'). Such calls keep `hir::attention` (q, k, v saved).
    """

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = sdpa(q, k, v, is_causal=True)
        y += q
        return y

    step = hir.compile(attend, (randn(4, 5, 8),) * 3, training=True)
    for k in range(2):
        inputs = [randn(4, 5, 8, seed=3 * k + j) for j in range(3)]
        ours, theirs = [x.clone().requires_grad_() for x in inputs], [x.clone().requires_grad_() for x in inputs]
        grad = randn(4, 5, 8, seed=9 + k)
        step(*ours).backward(grad)
        attend(*theirs).backward(grad)
        for a, b in zip(ours, theirs, strict=True):
            torch.testing.assert_close(a.grad, b.grad)
    assert "fusion.sdpa_backward " in next(iter(step.graphs.values()))["backward"].fusion_text


def test_four_d_attention_updated_in_place_is_a_clear_error() -> None:
    """
    Eager's fused kernel saves the result, so `y += q` after it is autograd's error at backward();
    the step's error said 'output 0 of _AttentionWithStatistics' and pointed at a backtrace the
    user does not see ('Hint: ... Good luck!'); it now names the user's call and the fix.
    """

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = sdpa(q, k, v, is_causal=True)
        y += q
        return y

    step = hir.compile(attend, (randn(2, 2, 5, 8),) * 3, training=True)
    with pytest.raises(FrontendError) as caught:
        step(*[randn(2, 2, 5, 8, seed=j).requires_grad_() for j in range(3)])
    message = str(caught.value)
    assert "which is the result of F.scaled_dot_product_attention, is at version 1" in message
    assert "update a copy instead (`y = y + x`)" in message
    assert "_AttentionWithStatistics" not in message
    assert "Good luck" not in message


def test_the_statistics_path_takes_what_eagers_fused_kernels_take() -> None:
    """4-D, last axis contiguous, not f64 on a GPU (fake CUDA tensors: no GPU needed)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from hir.frontend.training_ops import _fused_layout

    with FakeTensorMode(allow_non_fake_inputs=True):
        cuda = {dtype: torch.empty(2, 4, 5, 8, device="cuda", dtype=dtype) for dtype in (torch.float32, torch.float64)}
    cpu = torch.empty(2, 4, 5, 8, dtype=torch.float64)
    assert _fused_layout(cpu, cpu, cpu)
    assert _fused_layout(*[cuda[torch.float32]] * 3)
    assert not _fused_layout(*[cuda[torch.float64]] * 3)  # eager's math on a GPU
    assert not _fused_layout(cpu[0], cpu[0], cpu[0])  # 3-D
    strided = cpu.transpose(-1, -2).contiguous().transpose(-1, -2)
    assert not _fused_layout(strided, cpu, cpu)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.o = torch.nn.Linear(16, 48), torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, E = x.shape
        q, k, v = (_heads(t) for t in self.qkv(x).split(E, dim=-1))
        return self.o(sdpa(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, E))


def test_an_empty_batch_trains_as_eager() -> None:
    """
    The backward of a fused projection's split on an empty batch is `aten.cat` of empty pieces,
    which the importer drops: it was '<backward>: ... aten.cat.default cannot be imported:
    concat needs at least one operand'; now the empty gradient, and zero weight gradients.
    """
    torch.manual_seed(0)
    model = Block()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (randn(0, 5, 16),), training=True)
    for _ in range(2):
        ours, theirs = torch.randn(0, 5, 16, requires_grad=True), torch.randn(0, 5, 16, requires_grad=True)
        got, want = step(ours), eager(theirs)
        assert got.shape == want.shape == (0, 5, 16)
        got.sum().backward()
        want.sum().backward()
        assert ours.grad is not None
        assert ours.grad.shape == (0, 5, 16)
        assert_same_grads(model, eager)
        model.zero_grad()
        eager.zero_grad()


@pytest.mark.distributed
def test_training_round8_cases_on_two_gloo_ranks() -> None:
    result = run_ranks([str(DRIVER)], timeout=240)
    assert result.returncode == 0, _output(result)
    assert "training round 8: 1 cases match eager or raise the same clear error" in result.stdout, _output(result)
