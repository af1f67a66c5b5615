"""
`hir.compile(..., training=True)`: the forward and the backward are lowered hir programs; the
gradients, and the loss curve of a short training loop, match eager torch on random data.
"""

from __future__ import annotations

import copy
import gc
import inspect
import math
import re
import sys
import weakref
from pathlib import Path
from typing import Any

import pytest
import torch
from test_frontend import _Embedded as Embedded

import hir
from hir.diagnostics import LocatedError
from hir.frontend.training import TrainingFunction


class Block(torch.nn.Module):
    """A pre-norm MLP block with a residual: LayerNorm, linear, GELU, linear without bias."""

    def __init__(self, hidden: int = 16, ffn: int = 32) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(hidden)
        self.fc1 = torch.nn.Linear(hidden, ffn)
        self.fc2 = torch.nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x)))) + x


class Mlp(torch.nn.Module):
    def __init__(self, hidden: int = 8, ffn: int = 32, out: int = 4) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, ffn)
        self.fc2 = torch.nn.Linear(ffn, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def assert_same_grads(ours: torch.nn.Module, eager: torch.nn.Module, **tolerance: float) -> None:
    for (name, p), (_, q) in zip(ours.named_parameters(), eager.named_parameters(), strict=True):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, **tolerance, msg=lambda m, name=name: f"{name}: {m}")


def test_gradients_match_eager() -> None:
    torch.manual_seed(0)
    block = Block()
    eager = copy.deepcopy(block)
    compiled = hir.compile(block, (randn(8, 16),), training=True)
    assert isinstance(compiled, TrainingFunction)
    x, y = randn(8, 16, seed=1).requires_grad_(), randn(8, 16, seed=1).requires_grad_()
    out, want = compiled(x), eager(y)
    torch.testing.assert_close(out, want)
    grad = randn(8, 16, seed=2)
    out.backward(grad)
    want.backward(grad)
    torch.testing.assert_close(x.grad, y.grad)
    assert_same_grads(block, eager)
    (programs,) = compiled.graphs.values()
    assert set(programs) == {"forward", "backward"}
    assert "hir.launch" in str(programs["backward"].module)  # a lowered program, not the reference


def test_the_weight_gradients_read_their_operands_as_views() -> None:
    """
    The backward's weight gradients (dW = dY^T X) read a transposed operand: a transpose that only
    the GEMM reads joins the GEMM's launch (fusion-segment), where a launch of its own would copy
    an activation into a buffer. The gradients still match eager.
    """
    from hir.dialects import fusion

    torch.manual_seed(0)
    block = Block()
    eager = copy.deepcopy(block)
    compiled = hir.compile(block, (randn(2, 8, 16),), training=True)
    x = randn(2, 8, 16, seed=1).requires_grad_()
    grad = randn(2, 8, 16, seed=2)
    compiled(x).backward(grad)
    eager(x.detach().clone()).backward(grad)
    assert_same_grads(block, eager)
    (programs,) = compiled.graphs.values()
    launches = [op for op in programs["backward"].module.walk() if op.name == "hir.launch"]
    bodies = [[o for o in launch.walk() if isinstance(o, fusion.FusionOp)] for launch in launches]
    transposed_gemms = [
        body
        for body in bodies
        if any(isinstance(o, fusion.MatmulOp) for o in body) and any(isinstance(o, fusion.PermuteOp) for o in body)
    ]
    assert len(transposed_gemms) >= 2  # dW1 and dW2 read dY^T / dH^T inside their GEMM's launch


def test_the_forward_saves_views_of_the_weights_not_copies() -> None:
    """
    What the forward saves that is a view of one of its inputs (the weights' transposes, which
    the backward's input gradients read) is that view, as eager autograd keeps it: no program
    output and no copy of a weight per step. The gradients still match eager.
    """
    torch.manual_seed(0)
    block = Block()
    eager = copy.deepcopy(block)
    compiled = hir.compile(block, (randn(8, 16),), training=True)
    x = randn(8, 16, seed=1).requires_grad_()
    grad = randn(8, 16, seed=2)
    compiled(x).backward(grad)  # the first call compiles both programs
    block.zero_grad()
    copies: list[tuple[int, ...]] = []
    original = torch.Tensor.copy_

    def counted(self: torch.Tensor, source: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        copies.append(tuple(self.shape))
        return original(self, source, non_blocking)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.Tensor, "copy_", counted)
        out = compiled(x)
    assert not copies
    out.backward(grad)
    eager(x.detach().clone()).backward(grad)
    assert_same_grads(block, eager)
    (programs,) = compiled.graphs.values()
    weights = {(32, 16), (16, 32)}
    outputs = {tuple(t.get_shape()) for t in programs["forward"].program.output_types}  # type: ignore[attr-defined]
    assert not outputs & weights


def test_later_calls_run_the_programs_without_aot_autograds_wrappers() -> None:
    """
    After the first call and backward (AOT autograd traces and compiles both programs), a call
    runs them through the frontend's own autograd.Function; a function whose results alias its
    inputs keeps AOT autograd's wrappers, which regenerate such aliases. Both match eager.
    """
    from hir.frontend.training_step import LeanStep

    torch.manual_seed(0)
    block = Block()
    eager = copy.deepcopy(block)
    compiled = hir.compile(block, (randn(8, 16),), training=True)
    for step in range(3):
        block.zero_grad()
        eager.zero_grad()
        x = randn(8, 16, seed=step).requires_grad_()
        y = x.detach().clone().requires_grad_()
        out = compiled(x)
        assert (type(out.grad_fn).__name__ == f"{LeanStep.__name__}Backward") == (step > 0)
        grad = randn(8, 16, seed=10 + step)
        out.backward(grad)
        eager(y).backward(grad)
        torch.testing.assert_close(x.grad, y.grad)
        assert_same_grads(block, eager)

    def tanh_and_transpose(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.tanh(x) * 2.0, x.t()

    aliasing = hir.compile(tanh_and_transpose, (randn(4, 8),), training=True)
    for step in range(2):
        x = randn(4, 8, seed=step).requires_grad_()
        y = x.detach().clone().requires_grad_()
        a, b = aliasing(x)
        assert type(a.grad_fn).__name__ != f"{LeanStep.__name__}Backward"
        (a.sum() + (b * b).sum()).backward()
        ea, eb = tanh_and_transpose(y)
        (ea.sum() + (eb * eb).sum()).backward()
        torch.testing.assert_close(x.grad, y.grad)


def test_a_replaced_parameter_is_read_and_a_removed_one_is_an_error() -> None:
    """The module's state is read at every call: a parameter replaced between steps gets its gradient."""
    from hir.frontend.errors import FrontendError

    torch.manual_seed(0)
    block = Block()
    compiled = hir.compile(block, (randn(8, 16),), training=True)
    x = randn(8, 16, seed=1)
    compiled(x).sum().backward()
    block.fc1.weight = torch.nn.Parameter(randn(32, 16, seed=5))
    eager = copy.deepcopy(block)
    block.zero_grad()
    out = compiled(x)
    out.sum().backward()
    want = eager(x)
    want.sum().backward()
    torch.testing.assert_close(out, want)
    assert_same_grads(block, eager)
    block.norm.weight = None
    with pytest.raises(FrontendError) as err:
        compiled(x)
    assert str(err.value) == (
        "<call>: error: <Block>: the module no longer has 'norm.weight', which <Block> was compiled with: compile "
        "the module again"
    )


def test_a_double_backward_is_an_error_not_a_gradient_without_graph() -> None:
    """
    create_graph=True through a compiled step is refused, at the first call (AOT autograd's) and
    after (the frontend's own function), instead of gradients that silently carry no graph (a
    gradient penalty's own gradient would be lost).
    """
    torch.manual_seed(0)
    compiled = hir.compile(Block(), (randn(8, 16),), training=True)
    x = randn(8, 16, seed=1).requires_grad_()

    def penalized_step() -> None:
        out = compiled(x)
        (grad,) = torch.autograd.grad(out.sum(), x, create_graph=True)
        (grad.pow(2).sum() + out.sum()).backward()

    for _ in range(2):
        with pytest.raises(RuntimeError, match="double backward"):
            penalized_step()


def test_a_function_of_several_inputs() -> None:
    def attention_scores(q: torch.Tensor, k: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(0, 1) * scale, dim=-1).sum(dim=0)

    args = [randn(6, 8, seed=1), randn(5, 8, seed=2), randn(6, 5, seed=3)]
    compiled = hir.compile(attention_scores, args, training=True)
    ours = [a.clone().requires_grad_() for a in args]
    eager = [a.clone().requires_grad_() for a in args]
    grad = randn(5, seed=4)
    compiled(*ours).backward(grad)
    attention_scores(*eager).backward(grad)
    for a, b in zip(ours, eager):
        torch.testing.assert_close(a.grad, b.grad)


def test_only_what_requires_grad_is_differentiated() -> None:
    """x without grad: the backward computes the parameters' gradients only; a new signature for each pattern."""
    torch.manual_seed(0)
    mlp = Mlp()
    eager = copy.deepcopy(mlp)
    compiled = hir.compile(mlp, (randn(4, 8),), training=True)
    x = randn(4, 8, seed=1)
    compiled(x).square().sum().backward()
    eager(x).square().sum().backward()
    assert_same_grads(mlp, eager)
    with torch.no_grad():  # the inference graph: no saved activations
        torch.testing.assert_close(compiled(x), eager(x))
    assert sorted(sorted(p) for p in compiled.graphs.values()) == [["backward", "forward"], ["inference"]]


def test_a_new_batch_size_is_a_new_specialization() -> None:
    torch.manual_seed(0)
    mlp = Mlp()
    eager = copy.deepcopy(mlp)
    compiled = hir.compile(mlp, (randn(4, 8),), training=True)
    for rows in (4, 7):
        x = randn(rows, 8, seed=rows)
        compiled(x).sum().backward()
        eager(x).sum().backward()
    assert_same_grads(mlp, eager)
    assert len(compiled.graphs) == 2


def test_stream_layouts_in_the_forward() -> None:
    torch.manual_seed(0)
    mlp = Mlp()
    eager = copy.deepcopy(mlp)
    compiled = hir.compile(mlp, (randn(8, 8),), ["[stream(2), serial]"], training=True)
    x = randn(8, 8, seed=1)
    torch.testing.assert_close(compiled(x), eager(x))
    compiled(x).sum().backward()
    eager(x).sum().backward()
    assert_same_grads(mlp, eager)
    forward = next(iter(compiled.graphs.values()))["forward"]
    assert "stream(2)" in forward.fusion_text


class CausalAttention(torch.nn.Module):
    """nanoGPT's attention: a split of one QKV projection, heads, a causal mask or SDPA."""

    def __init__(self, fused: bool, hidden: int = 16, heads: int = 2, length: int = 8) -> None:
        super().__init__()
        self.fused, self.heads = fused, heads
        self.norm = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.out = torch.nn.Linear(hidden, hidden)
        self.register_buffer("mask", torch.tril(torch.ones(length, length)).view(1, 1, length, length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (
            t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in self.qkv(self.norm(x)).split(C, 2)
        )
        if self.fused:
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
            y = torch.softmax(scores.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")), dim=-1) @ v
        return x + self.out(y.transpose(1, 2).reshape(B, T, C))


@pytest.mark.parametrize("fused", [False, True], ids=["masked", "sdpa"])
def test_causal_attention(fused: bool) -> None:
    """
    SDPA is one `fusion.sdpa` (with `fusion.sdpa_logsumexp`, its softmax statistics) and its
    backward one `fusion.sdpa_backward_stats` (torch's fused kernels); attention written out is
    differentiated as its math (matmuls, softmax).
    """
    torch.manual_seed(0)
    attention = CausalAttention(fused)
    eager = copy.deepcopy(attention)
    compiled = hir.compile(attention, (randn(2, 8, 16),), training=True)
    x, y = randn(2, 8, 16, seed=1).requires_grad_(), randn(2, 8, 16, seed=1).requires_grad_()
    grad = randn(2, 8, 16, seed=2)
    compiled(x).backward(grad)
    eager(y).backward(grad)
    torch.testing.assert_close(x.grad, y.grad)
    assert_same_grads(attention, eager)
    programs = next(iter(compiled.graphs.values()))
    forward, backward = programs["forward"].fusion_text, programs["backward"].fusion_text
    assert ("fusion.sdpa " in forward) == fused
    assert ("fusion.sdpa_backward_stats " in backward) == fused
    assert ("fusion.softmax" in forward) != fused


@pytest.mark.parametrize(
    ("shapes", "fused"),
    [
        (((2, 4, 8, 8), (2, 4, 6, 8), (2, 4, 6, 8)), False),  # cross-attention: keys of another length
        (((2, 4, 8, 8), (2, 2, 8, 8), (2, 2, 8, 8)), True),  # grouped-query heads, repeated for their groups
    ],
    ids=["cross-attention", "grouped-query"],
)
def test_attention_outside_self_attention_shapes(shapes: tuple, fused: bool) -> None:
    """
    Grouped-query key and value heads are repeated for their groups, then the fused op (autograd
    sums the repeats' gradients); keys of another length than the queries, which
    `fusion.sdpa_backward` does not take, differentiate the math. Both match eager.
    """

    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=q.shape[1] != k.shape[1])

    args = [randn(*s, seed=i).requires_grad_() for i, s in enumerate(shapes)]
    eager = [a.detach().clone().requires_grad_() for a in args]
    compiled = hir.compile(attention, [a.detach() for a in args], training=True)
    grad = randn(*shapes[0], seed=7)
    compiled(*args).backward(grad)
    attention(*eager).backward(grad)
    for got, want in zip(args, eager):
        torch.testing.assert_close(got.grad, want.grad)
    programs = next(iter(compiled.graphs.values()))
    assert ("fusion.sdpa_backward" in programs["backward"].fusion_text) == fused


def test_a_backward_without_a_mapping_names_the_call() -> None:
    """A complex magnitude's backward divides a complex tensor by its magnitude, which the table lacks."""

    class Magnitude(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.view_as_complex(self.proj(x).view(4, 4, 2)).abs()

    x = randn(4, 8, seed=1)
    compiled = hir.compile(Magnitude(), (x,), training=True)
    out = compiled(x)
    with pytest.raises(hir.FrontendError) as err:
        out.sum().backward()
    assert str(err.value).startswith(
        "<backward>: error: <Magnitude>: the backward of the call with (x: float32[4, 8]) cannot be compiled: "
    )
    # The backward's node carries the user's line of the forward call it differentiates.
    assert re.search(
        r"test_training.py:\d+: error: aten.div.Tensor on complex tensors is not supported", str(err.value)
    )
    assert str(err.value).endswith("\n    return torch.view_as_complex(self.proj(x).view(4, 4, 2)).abs()")


def chamfer(points: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """A point cloud's Chamfer distance: the nearest target of each point and the nearest point of each target."""
    distances = torch.cdist(points, targets)
    return distances.min(-1).values.mean() + distances.min(-2).values.mean()


def test_cdist_trains_as_the_norms_of_the_differences() -> None:
    """torch.cdist's backward (`_cdist_backward`) has no decomposition: the step traces the norms of the differences."""
    points = randn(2, 6, 3).requires_grad_()
    targets = randn(2, 5, 3, seed=1)
    targets[:, 0] = points.detach()[:, 0]  # a zero distance: its gradient is 0, as eager's
    compiled = hir.compile(chamfer, (points, targets), training=True)
    compiled(points, targets).backward()
    got, points.grad = points.grad, None
    chamfer(points, targets).backward()
    torch.testing.assert_close(got, points.grad)


class NanoGPT(torch.nn.Module):
    """
    nanoGPT's model: token and position embeddings, causal attention and MLP blocks, a final
    LayerNorm, and an lm_head whose weight is the token embedding's (tied). With targets it also
    returns F.cross_entropy of the logits.
    """

    def __init__(self, vocab: int = 50, length: int = 8, hidden: int = 16, layers: int = 2) -> None:
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, hidden)
        self.wpe = torch.nn.Embedding(length, hidden)
        self.attention = torch.nn.ModuleList(CausalAttention(True, hidden, 2, length) for _ in range(layers))
        self.mlp = torch.nn.ModuleList(Block(hidden, 4 * hidden) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(hidden)
        self.lm_head = torch.nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(
        self, tokens: torch.Tensor, targets: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(positions)
        for attention, mlp in zip(self.attention, self.mlp):
            x = mlp(attention(x))
        logits = self.lm_head(self.norm(x))
        if targets is None:
            return logits
        return logits, torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())


def tokens(*shape: int, seed: int, vocab: int = 50) -> torch.Tensor:
    """Token ids with repeats (a scatter-add backward must sum them), never all alike."""
    ids = torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))
    ids.view(-1)[: shape[-1] // 2] = 7
    return ids


def test_an_embedding_trains_its_backward_is_an_index_add() -> None:
    """
    An embedding's backward is a scatter-add of the output's gradient rows at the token ids
    (`index_put(accumulate=True)`), one `fusion.index_add`: the token and position embeddings and
    the tied lm_head get eager's gradients, the loss outside the compiled model.
    """
    torch.manual_seed(0)
    model = NanoGPT(layers=1)  # one block: a second only repeats the same ops
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, (tokens(2, 8, seed=1),), training=True)
    ids, targets = tokens(2, 8, seed=2), tokens(2, 8, seed=3)
    for module in (compiled, eager):
        logits = module(ids)
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters(), strict=True):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4, msg=lambda m, name=name: f"{name}: {m}")
    (programs,) = compiled.graphs.values()
    backward = programs["backward"].fusion_text
    assert backward.count("fusion.index_add") == 2  # the token and the position embeddings
    sizes = [math.prod(int(n) for n in shape.split("x")) for shape in re.findall(r"tensor<((?:\d+x)*\d+)x", backward)]
    assert max(sizes) < 16 * 50 * 16  # linear memory: no one-hot mask of tokens x vocabulary x hidden


def test_a_language_model_with_its_loss_inside_tracks_eager_under_adamw() -> None:
    """F.cross_entropy inside the compiled step, three AdamW steps: the losses follow eager's."""
    torch.manual_seed(0)
    model = NanoGPT(layers=1)  # one block: a second only repeats the same ops
    eager = copy.deepcopy(model)
    ids, targets = tokens(4, 8, seed=1), tokens(4, 8, seed=2)
    compiled = hir.compile(model, (ids, targets), training=True)
    ours = torch.optim.AdamW(model.parameters(), lr=1e-2)
    theirs = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    losses: list[tuple[float, float]] = []
    for _ in range(3):  # the first step on AOT autograd's runtime, then the frontend's own
        step: list[float] = []
        for module, optimizer in ((compiled, ours), (eager, theirs)):
            optimizer.zero_grad()
            _, loss = module(ids, targets)
            loss.backward()
            optimizer.step()
            step.append(loss.item())
        losses.append((step[0], step[1]))
    ours_curve, eager_curve = (torch.tensor(curve) for curve in zip(*losses))
    torch.testing.assert_close(ours_curve, eager_curve, rtol=1e-4, atol=1e-4)
    assert eager_curve[-1] < eager_curve[0]  # it trains
    # The embeddings themselves; not every parameter: Adam scales each gradient to about lr, so one
    # that is zero but for rounding (the keys' bias: softmax ignores a shift of a query's scores)
    # moves by the sign of its rounding error.
    for name in ("wte.weight", "wpe.weight"):
        torch.testing.assert_close(model.get_parameter(name), eager.get_parameter(name), rtol=1e-4, atol=1e-4)


def test_a_loss_computed_inside_the_function_has_its_gradients() -> None:
    """F.cross_entropy (ignore_index entries included) inside the compiled step: its backward scatters the targets."""

    class Classifier(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 5)

        def forward(self, x: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.fc(x)
            return torch.nn.functional.cross_entropy(logits, targets, ignore_index=-100), logits

    torch.manual_seed(0)
    module = Classifier()
    eager = copy.deepcopy(module)
    x, targets = torch.randn(6, 8), torch.randint(0, 5, (6,))
    targets[2] = -100
    compiled = hir.compile(module, (x, targets), training=True)
    loss, logits = compiled(x, targets)
    expected_loss, expected_logits = eager(x, targets)
    torch.testing.assert_close(loss, expected_loss)
    (loss + logits.square().mean()).backward()
    (expected_loss + expected_logits.square().mean()).backward()
    for got, want in zip(module.parameters(), eager.parameters()):
        assert got.grad is not None
        torch.testing.assert_close(got.grad, want.grad)


class SequenceClassifier(torch.nn.Module):
    """Hugging Face's forward: `attention_mask=None`, `labels=None` (the loss inside), a dict out."""

    def __init__(self, hidden: int = 16, classes: int = 3) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(20, hidden)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, labels: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor | None]:
        h = self.embed(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones(input_ids.shape, device=input_ids.device)
        mask = attention_mask[..., None].to(h.dtype)
        logits = self.head((h * mask).sum(1) / mask.sum(1).clamp(min=1.0))
        loss = None if labels is None else torch.nn.functional.cross_entropy(logits, labels)
        return {"loss": loss, "logits": logits}


def test_optional_arguments_left_as_none_train() -> None:
    """Compiled with `attention_mask=None`: a call with a mask, or without labels, is a specialization of its own."""
    torch.manual_seed(0)
    module = SequenceClassifier()
    eager = copy.deepcopy(module)
    ids, labels = tokens(2, 6, seed=1) % 20, torch.tensor([0, 2])
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    compiled = hir.compile(module, (ids, None, labels), training=True)
    for args, kwargs in (((ids, None, labels), {}), ((ids,), {"attention_mask": mask, "labels": labels})):
        module.zero_grad()
        eager.zero_grad()
        out, want = compiled(*args, **kwargs), eager(*args, **kwargs)
        torch.testing.assert_close(out["loss"], want["loss"])
        out["loss"].backward()
        want["loss"].backward()
        assert_same_grads(module, eager)
    out, want = compiled(ids, mask), eager(ids, mask)  # labels left out: no loss
    assert out["loss"] is None
    torch.testing.assert_close(out["logits"], want["logits"])
    assert len(compiled.specializations.keys) == 3


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_training_loop_tracks_eager(optimizer: str) -> None:
    """A few optimizer steps: the parameters are read at each call, so every step is seen."""
    torch.manual_seed(0)
    mlp = Mlp()
    eager = copy.deepcopy(mlp)

    def make(module: torch.nn.Module) -> torch.optim.Optimizer:
        if optimizer == "sgd":
            return torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9)
        return torch.optim.Adam(module.parameters(), lr=0.01)

    compiled = hir.compile(mlp, (randn(16, 8),), training=True)
    ours, theirs = make(mlp), make(eager)
    x, target = randn(16, 8, seed=1), randn(16, 4, seed=2)
    losses: list[tuple[float, float]] = []
    for _ in range(6):
        for model, opt in ((compiled, ours), (eager, theirs)):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    ours_curve, eager_curve = losses[0::2], losses[1::2]
    torch.testing.assert_close(torch.tensor(ours_curve), torch.tensor(eager_curve), rtol=1e-4, atol=1e-5)
    assert eager_curve[-1] < eager_curve[0]  # it trains
    for p, q in zip(mlp.parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_training_refuses_what_it_does_not_do_yet() -> None:
    mlp = Mlp()  # on a mesh: tests/test_training_mesh.py
    with pytest.raises(hir.FrontendError, match=r"<compile>: error: <Mlp>: param_layouts shard parameters over a mesh"):
        hir.compile(mlp, (randn(4, 8),), param_layouts={"fc1.weight": "[didx, serial]"}, training=True)


def test_an_op_without_a_mapping_is_an_error_naming_the_call() -> None:
    def cumulative(x: torch.Tensor) -> torch.Tensor:
        return torch.special.i0(x)

    compiled = hir.compile(cumulative, (randn(4, 8),), training=True)
    with pytest.raises(hir.FrontendError) as err:
        compiled(randn(4, 8).requires_grad_())
    message = str(err.value)
    assert message.startswith("<call>: error: <cumulative> cannot be specialized for (x: float32[4, 8]): ")
    assert "i0" in message


# -- model code as written: constants made in forward, in-place adds, strided slices, batch norm --


def _train_like_eager(
    module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], fresh: tuple[torch.Tensor, ...]
) -> Any:
    """The compiled module's outputs and gradients match eager's, at the example shapes and at others."""
    eager = copy.deepcopy(module)
    compiled = hir.compile(module, inputs, training=True)
    for args in (inputs, fresh):
        module.zero_grad()
        eager.zero_grad()
        out, want = compiled(*args), eager(*args)
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
        outs, wants = (out, want) if isinstance(want, tuple) else ((out,), (want,))
        weights = [randn(*w.shape, seed=3 + k) for k, w in enumerate(wants)]
        sum((o * w).sum() for o, w in zip(outs, weights, strict=True)).backward()
        sum((o * w).sum() for o, w in zip(wants, weights, strict=True)).backward()
        assert_same_grads(module, eager)
    return compiled


class NeoXAttention(torch.nn.Module):
    """GPT-NeoX's attention: `torch.baddbmm` scores, its mask value as `torch.tensor(finfo.min)` made in forward."""

    def __init__(self, hidden: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.query_key_value = torch.nn.Linear(hidden, 3 * hidden)
        self.register_buffer(
            "bias", torch.tril(torch.ones(16, 16, dtype=torch.bool)).view(1, 1, 16, 16), persistent=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        qkv = self.query_key_value(x).view(b, t, self.heads, 3 * self.head_size).permute(0, 2, 1, 3)
        q, k, v = qkv.split(self.head_size, dim=-1)
        scores = torch.zeros(b * self.heads, t, t, dtype=q.dtype, device=q.device)
        scores = torch.baddbmm(
            scores, q.reshape(-1, t, self.head_size), k.reshape(-1, t, self.head_size).transpose(1, 2),
            beta=1.0, alpha=1.0 / math.sqrt(self.head_size),
        ).view(b, self.heads, t, t)  # fmt: skip
        mask_value = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype).to(scores.device)
        scores = torch.where(self.bias[:, :, :t, :t], scores, mask_value)
        weights = torch.tensor([1.0, 0.5, 2.0, 1.5] * 2)  # a constant of several values, made in forward
        out = torch.softmax(scores, dim=-1) @ v
        return out.transpose(1, 2).reshape(b, t, -1) * weights.repeat(2)


def test_tensor_constants_made_in_forward_train() -> None:
    torch.manual_seed(0)
    compiled = _train_like_eager(NeoXAttention(), (randn(2, 8, 16),), (randn(3, 5, 16, seed=1),))
    forward = compiled.graphs[(True, next(iter(compiled.specializations.keys)))]["forward"]
    assert "_tensor_constant" in forward.fusion_text  # the 8 weights: an input of the program
    assert "-3.40282" in forward.fusion_text  # finfo.min: a fusion.full


class T5Attention(torch.nn.Module):
    """T5's attention: `scores += position_bias` in place on a matmul's result (its backward copies into
    `new_empty_strided`), the bias an embedding of relative positions."""

    def __init__(self, hidden: int = 16, heads: int = 2, buckets: int = 8) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (torch.nn.Linear(hidden, hidden, bias=False) for _ in range(3))
        self.relative_attention_bias = torch.nn.Embedding(buckets, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (f(x).view(b, t, self.heads, -1).transpose(1, 2) for f in (self.q, self.k, self.v))
        scores = torch.matmul(q, k.transpose(3, 2))
        relative = torch.arange(t)[None, :] - torch.arange(t)[:, None]
        position_bias = self.relative_attention_bias(relative.abs().clamp(max=7)).permute([2, 0, 1]).unsqueeze(0)
        scores += position_bias
        weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
        return torch.matmul(weights, v).transpose(1, 2).reshape(b, t, -1)


def test_an_in_place_add_to_attention_scores_trains() -> None:
    torch.manual_seed(0)
    _train_like_eager(T5Attention(), (randn(2, 8, 16),), (randn(3, 6, 16, seed=1),))


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class GPTJRotary(torch.nn.Module):
    """GPT-J's rotary embedding on the first `rotary` dims of each head, even and odd dims interleaved: the
    backward of `x[..., ::2]` is a strided slice assignment."""

    def __init__(self, hidden: int = 16, heads: int = 2, rotary: int = 4) -> None:
        super().__init__()
        self.heads, self.rotary = heads, rotary
        self.proj = torch.nn.Linear(hidden, hidden)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, rotary, 2) / rotary))
        angles = torch.einsum("i , j -> i j", torch.arange(16).float(), inv_freq)
        self.register_buffer("sincos", torch.cat((angles.sin(), angles.cos()), dim=1), persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        k = self.proj(x).view(b, t, self.heads, -1)
        sin, cos = self.sincos[position_ids].split(self.rotary // 2, dim=-1)
        sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
        cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
        k_rot, k_pass = k[:, :, :, : self.rotary], k[:, :, :, self.rotary :]
        return torch.cat([k_rot * cos + rotate_every_two(k_rot) * sin, k_pass], dim=-1)


def test_interleaved_rotary_embeddings_train() -> None:
    torch.manual_seed(0)
    positions = torch.arange(8).expand(2, 8)
    fresh = (randn(3, 5, 16, seed=1), torch.arange(5).flip(0).expand(3, 5))
    _train_like_eager(GPTJRotary(), (randn(2, 8, 16), positions), fresh)


class PlainAttributeRotary(torch.nn.Module):
    """
    Meta's Llama keeps its rotary table as a plain attribute, `self.freqs_cis = precompute_freqs_cis(...)`
    (no buffer), and moves it in forward (`self.freqs_cis = self.freqs_cis.to(h.device)`): a
    training call reads it as it reads the buffers, at every call.
    """

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(hidden, hidden)
        angles = torch.outer(torch.arange(32).float(), 1.0 / (10000 ** (torch.arange(0, hidden, 2) / hidden)))
        self.freqs_cis = torch.polar(torch.ones_like(angles), angles)
        self.scale = torch.linspace(0.5, 1.5, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.freqs_cis = self.freqs_cis.to(x.device)
        freqs_cis = self.freqs_cis[: x.shape[1]]
        h = torch.view_as_complex(self.proj(x).float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(h * freqs_cis).flatten(2) * self.scale


def test_tensors_held_as_plain_attributes_train() -> None:
    torch.manual_seed(0)
    module = PlainAttributeRotary()
    compiled = _train_like_eager(module, (randn(2, 8, 16),), (randn(3, 5, 16, seed=1),))
    module.scale = module.scale * 2  # replaced: read at the next call, as eager reads it
    x = randn(2, 8, 16, seed=2)
    torch.testing.assert_close(compiled(x), module(x))


class WeightNormed(torch.nn.Module):
    """HiFi-GAN's and wav2vec 2.0's weight-normed convolutions (`parametrizations.weight_norm`, dim 0 and last)."""

    def __init__(self) -> None:
        super().__init__()
        weight_norm = torch.nn.utils.parametrizations.weight_norm
        self.conv = weight_norm(torch.nn.Conv1d(4, 8, 3, padding=1))
        self.pos_conv = weight_norm(torch.nn.Conv1d(8, 8, 3, padding=1, groups=2), dim=2)
        self.proj = weight_norm(torch.nn.Linear(8, 4), dim=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.leaky_relu(self.conv(x), 0.1)
        h = h + torch.nn.functional.gelu(self.pos_conv(h))
        return self.proj(h.transpose(1, 2))


def test_weight_normed_layers_train() -> None:
    """The weight norm's fused backward (`_weight_norm_interface_backward`) in ops of the table."""
    torch.manual_seed(0)
    _train_like_eager(WeightNormed(), (randn(2, 4, 10),), (randn(3, 4, 7, seed=1),))


class SpatialTransformerPolicy(torch.nn.Module):
    """
    A spatial transformer (`F.affine_grid`, `F.grid_sample`), area resampling (adaptive average
    pooling's backward) and PPO's Gaussian policy (`torch.distributions.Normal`, whose argument
    checks read values: off while the step is traced).
    """

    def __init__(self) -> None:
        super().__init__()
        self.localization = torch.nn.Linear(36, 6)
        self.localization.weight.data.mul_(0.1)
        self.localization.bias.data.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
        self.mu = torch.nn.Linear(36, 2)
        self.log_std = torch.nn.Parameter(torch.zeros(2))

    def forward(self, image: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        theta = self.localization(image.flatten(1)).view(-1, 2, 3)
        grid = torch.nn.functional.affine_grid(theta, list(image.shape), align_corners=False)
        warped = torch.nn.functional.grid_sample(image, grid, padding_mode="reflection", align_corners=False)
        pooled = torch.nn.functional.interpolate(warped, size=(3, 4), mode="area")
        features = torch.cat([warped.flatten(1)[:, :24], pooled.flatten(1)], dim=1)
        policy = torch.distributions.Normal(self.mu(features), self.log_std.exp())
        return -policy.log_prob(action).sum(-1).mean() - 0.01 * policy.entropy().mean()


def test_grid_sampling_area_resampling_and_a_gaussian_policy_train() -> None:
    torch.manual_seed(0)
    module = SpatialTransformerPolicy()
    eager = copy.deepcopy(module)
    image, action = randn(3, 1, 6, 6), randn(3, 2, seed=1)
    compiled = hir.compile(module, (image, action), training=True)
    for _ in range(2):
        module.zero_grad()
        eager.zero_grad()
        loss, want = compiled(image, action), eager(image, action)
        torch.testing.assert_close(loss, want)
        loss.backward()
        want.backward()
        for (name, p), q in zip(module.named_parameters(), eager.parameters()):  # the decomposed sampler's sums
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4, msg=lambda m, name=name: f"{name}: {m}")
        with torch.no_grad():
            for p in (*module.parameters(), *eager.parameters()):
                p -= 0.1 * p.grad


# Ops whose backward was missing (or whose torch decomposition is wrong: multilabel_margin_loss's).
_MORE_OPS: dict[str, Any] = {
    "cumprod": lambda h: (h.tanh() + 1.5).cumprod(-1),  # its backward reduces booleans (the first zero's position)
    "median_kthvalue": lambda h: h.median(-1).values + h.kthvalue(2, 0).values.sum(),
    "fake_quantize": lambda h: torch.fake_quantize_per_tensor_affine(h * 4, 0.1, 0, -128, 127),  # QAT's estimator
    "fake_quantize_per_channel": lambda h: torch.fake_quantize_per_channel_affine(
        h, torch.full((8,), 0.05), torch.zeros(8, dtype=torch.int32), 1, -8, 7
    ),
    "multilabel_margin": lambda h: torch.nn.functional.multilabel_margin_loss(
        h, torch.tensor([3, 0, -1, 1, 1, 0, 0, 0]).expand_as(h), reduction="none"
    ),
    "instance_norm": lambda h: torch.nn.functional.instance_norm(h.view(-1, 2, 4)),  # CycleGAN's, no running stats
    "replicate_pad": lambda h: torch.nn.functional.pad(h.view(-1, 2, 4), (2, 1), mode="replicate"),
    "diagonal_sign": lambda h: torch.einsum("ii->i", h[:, :5] @ h[:, 3:].T) + torch.sign(h).sum(),  # diagonal_scatter
    "addmv": lambda h: torch.addmv(h[0], h.T, h[:, 1]),
    "scatter_amax": lambda h: h[:3].scatter_reduce(
        0, torch.tensor([[0, 2, 1, 0, 2, 1, 0, 1]]).expand(h.shape[0], 8), h, "amax"
    ),
    "scatter_mean": lambda h: h[:3].scatter_reduce(
        0, torch.tensor([[0, 2, 1, 0, 2, 1, 0, 1]]).expand(h.shape[0], 8), h, "mean"
    ),
}


def test_more_ops_train() -> None:
    """
    Every op of `_MORE_OPS` on a linear layer of its own, in one model (one trace at each shape
    instead of one per op): each op's output and its layer's gradients are compared on their own,
    and a failure names the op (its layer `fc.<op>`).
    """

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.ModuleDict({name: torch.nn.Linear(8, 8) for name in _MORE_OPS})

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return tuple(op(self.fc[name](x)) for name, op in _MORE_OPS.items())

    torch.manual_seed(0)
    _train_like_eager(Model(), (randn(5, 8),), (randn(3, 8, seed=1),))


_GLOBAL_MODEL = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
_GLOBAL_MASK = torch.tensor([True, False, True, True])
_GLOBAL_SCALE = torch.nn.Parameter(torch.ones(4))
_CLASS_WEIGHTS = torch.tensor([1.0, 2.0, 1.0, 0.5])


def _train_step(x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor = _CLASS_WEIGHTS) -> Any:
    """A training script's step function: a global model, a global mask and parameter, a default tensor."""
    logits = _GLOBAL_MODEL(x).masked_fill(~_GLOBAL_MASK, -5.0) * _GLOBAL_SCALE
    return torch.nn.functional.cross_entropy(logits, y, weight=weights)


def test_a_step_function_of_a_global_model_trains_it() -> None:
    """
    The function reads a model, tensors and a parameter it does not take: compiled as a module
    holding them, whose parameters get their gradients and are read at every call (an optimizer's
    steps, a replaced weight), for training and for inference.
    """
    torch.manual_seed(0)
    eager_model, eager_scale = copy.deepcopy(_GLOBAL_MODEL), _GLOBAL_SCALE.detach().clone().requires_grad_()
    step = hir.compile(_train_step, (randn(6, 8), torch.tensor([0, 1, 2, 3, 0, 1])), training=True)
    params = [*_GLOBAL_MODEL.parameters(), _GLOBAL_SCALE]
    eager_params = [*eager_model.parameters(), eager_scale]
    ours, theirs = torch.optim.SGD(params, lr=0.1), torch.optim.SGD(eager_params, lr=0.1)
    for seed in range(3):
        x, y = randn(6, 8, seed=seed), torch.randint(0, 4, (6,), generator=torch.Generator().manual_seed(seed))
        ours.zero_grad()
        theirs.zero_grad()
        loss = step(x, y)
        logits = eager_model(x).masked_fill(~_GLOBAL_MASK, -5.0) * eager_scale
        want = torch.nn.functional.cross_entropy(logits, y, weight=torch.tensor([1.0, 2.0, 1.0, 0.5]))
        torch.testing.assert_close(loss, want)
        loss.backward()
        want.backward()
        for p, q in zip(params, eager_params):
            torch.testing.assert_close(p.grad, q.grad)
        ours.step()
        theirs.step()
    evaluate = hir.compile(_train_step, (x, y))
    with torch.no_grad():
        _GLOBAL_MODEL[0].weight = torch.nn.Parameter(randn(16, 8, seed=7))  # replaced: read at the next call
        torch.testing.assert_close(evaluate(x, y), _train_step(x, y))


class ConvBatchNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.bn1 = torch.nn.BatchNorm1d(8, momentum=0.3)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(self.bn1(y.mean((2, 3))))


def test_batch_norm_in_training_mode_updates_its_statistics_as_eager() -> None:
    torch.manual_seed(0)
    module = ConvBatchNorm()
    eager = copy.deepcopy(module)
    compiled = hir.compile(module, (randn(4, 3, 8, 8),), training=True)
    weights = randn(4, seed=9)
    for step, shape in enumerate([(4, 3, 8, 8), (4, 3, 8, 8), (5, 3, 6, 6)]):
        module.zero_grad()
        eager.zero_grad()
        x = randn(*shape, seed=step)
        out, want = compiled(x), eager(x)
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
        (out.tanh() * weights).sum().backward()
        (want.tanh() * weights).sum().backward()
        # The outputs' tolerance: on a CPU of many threads the backward's reductions round in another
        # order than eager's (2e-5 relative, seen with 16).
        assert_same_grads(module, eager, rtol=1e-4, atol=1e-5)
        for (name, ours), theirs in zip(module.named_buffers(), eager.buffers(), strict=True):
            torch.testing.assert_close(ours, theirs, msg=lambda m, name=name: f"{name}: {m}")
    assert int(module.bn.num_batches_tracked) == 3
    # An evaluation pass after training: the running statistics, as eager's eval mode.
    module.eval()
    eager.eval()
    x = randn(4, 3, 8, 8, seed=7)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), eager(x), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(compiled(x), eager(x), rtol=1e-4, atol=1e-5)
    module.train()
    eager.train()
    torch.testing.assert_close(compiled(x), eager(x), rtol=1e-4, atol=1e-5)
    assert int(module.bn.num_batches_tracked) == int(eager.bn.num_batches_tracked) == 4


class DropPathBlock(torch.nn.Module):
    """timm's drop path: `x.new_empty(shape).bernoulli_(keep)` in training mode."""

    def __init__(self, drop: float) -> None:
        super().__init__()
        self.drop, self.fc = drop, torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if self.drop and self.training:
            y = y * x.new_empty(x.shape[0], 1).bernoulli_(1 - self.drop) / (1 - self.drop)
        return x + y


class ScaledByItsMax(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) / self.fc(x).abs().max().item()  # a value read


class ExpertLoad(torch.nn.Module):
    """A router's load-balancing loss counting tokens per expert: torch.bincount's length is the largest id + 1."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        load = torch.bincount(self.gate(x).argmax(-1), minlength=4)
        return self.gate(x).softmax(-1).mean(0) * load


def test_what_training_cannot_trace_is_an_error_at_the_users_line() -> None:
    x = randn(4, 8)
    cases = [
        (
            ScaledByItsMax(),
            r"reads a tensor's value as a Python number \(`.item\(\)`",
            "return self.fc(x) / self.fc(x).abs().max().item()  # a value read",
        ),
        (
            ExpertLoad(),
            r"aten.bincount.default returns a result whose shape depends on its input's values .*F.one_hot",
            "load = torch.bincount(self.gate(x).argmax(-1), minlength=4)",
        ),
    ]
    for module, message, line in cases:
        compiled = hir.compile(module, (x,), training=True)
        with pytest.raises(hir.FrontendError, match=message) as err:
            compiled(x)
        if line is not None:
            assert re.search(r"test_training.py:\d+: error: ", str(err.value)), str(err.value)
            assert str(err.value).endswith(line), str(err.value)
    _train_like_eager(DropPathBlock(0.0), (x,), (randn(3, 8, seed=1),))  # no drop: no random numbers


def test_drop_path_trains_through_the_samples_it_keeps() -> None:
    """timm's drop path draws one keep per sample (`bernoulli_`): a dropped sample is its residual alone."""
    torch.manual_seed(0)
    block = DropPathBlock(0.5)
    x = randn(64, 8)
    compiled = hir.compile(block, (x,), training=True)
    out = compiled(x)
    out.pow(2).sum().backward()
    grads = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()
    with torch.no_grad():
        y = block.fc(x)
    dropped = torch.isclose(out, x).all(1)
    kept = torch.isclose(out, x + y * 2, rtol=1e-5, atol=1e-6).all(1)
    assert bool((dropped ^ kept).all())  # each sample one or the other, whole
    assert 16 < int(kept.sum()) < 48
    (x + block.fc(x) * kept[:, None].float() * 2).pow(2).sum().backward()
    for got, want in zip(grads, (p.grad for p in block.parameters())):
        torch.testing.assert_close(got, want)


class Checkpointed(torch.nn.Module):
    """Activation checkpointing as training scripts enable it: `torch.utils.checkpoint.checkpoint` per block."""

    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.reentrant = reentrant
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=self.reentrant)
        return x


def test_activation_checkpointing() -> None:
    """Non-reentrant checkpoints trace through (the partitioner picks what to recompute); a reentrant one,
    whose backward AOT autograd cannot trace, is an error that says so, not a torch traceback."""
    torch.manual_seed(0)
    _train_like_eager(Checkpointed(reentrant=False), (randn(2, 4, 16),), (randn(3, 5, 16, seed=1),))
    compiled = hir.compile(Checkpointed(reentrant=True), (randn(2, 4, 16),), training=True)
    with pytest.raises(hir.FrontendError, match=r"could not be traced: When use_reentrant=True"):
        compiled(randn(2, 4, 16).requires_grad_())


def test_an_nn_sequential_trains_its_numbered_parameters() -> None:
    """`0.weight`, `2.bias`: names that start with a digit, as SSA names of the program's arguments."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))
    compiled = _train_like_eager(model, (randn(4, 8),), (randn(6, 8, seed=1),))
    forward = compiled.graphs[(True, next(iter(compiled.specializations.keys)))]["forward"]
    assert "%p_0_weight" in forward.fusion_text


def test_the_training_benchmark_runs_on_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/tp_mlp_train.py checks every variant's output and gradients against eager's."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    try:
        import tp_mlp_train
    finally:
        sys.path.pop(0)
    tp_mlp_train.main(["--device", "cpu", "--hidden", "16", "--sizes", "32", "--no-torch-compile", "--reps", "1"])
    out = capsys.readouterr().out
    assert "hir" in out
    assert "WRONG" not in out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("cuda_graph", [False, True], ids=["eager", "replayed"])
def test_bf16_gradients_on_a_gpu(cuda_graph: bool) -> None:
    """bf16 on a GPU, each program run or replayed as a CUDA graph; two steps (the second replays)."""
    torch.manual_seed(0)
    block = Block().to("cuda", torch.bfloat16)
    eager = copy.deepcopy(block)
    compiled = hir.compile(block, (randn(64, 16).to("cuda", torch.bfloat16),), training=True, cuda_graph=cuda_graph)
    for seed in (1, 2):
        x = randn(64, 16, seed=seed).to("cuda", torch.bfloat16)
        ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
        grad = randn(64, 16, seed=seed + 10).to("cuda", torch.bfloat16)
        for model in (block, eager):
            model.zero_grad()
        out, want = compiled(ours), eager(theirs)
        torch.testing.assert_close(out, want, rtol=2e-2, atol=2e-2)
        out.backward(grad)
        want.backward(grad)
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=2e-2, atol=2e-2)
        for p, q in zip(block.parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=2e-2, atol=5e-2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_bf16_embedding_gradients_on_a_gpu() -> None:
    """The embeddings' scatter-add in bf16 on a GPU (atomic adds, in bf16 as torch's own)."""
    torch.manual_seed(0)
    model = NanoGPT().to("cuda", torch.bfloat16)
    eager = copy.deepcopy(model)
    ids, targets = tokens(4, 8, seed=1).cuda(), tokens(4, 8, seed=2).cuda()
    compiled = hir.compile(model, (ids, targets), training=True)
    for module in (compiled, eager):
        _, loss = module(ids, targets)
        loss.backward()
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters(), strict=True):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, rtol=5e-2, atol=5e-2, msg=lambda m, name=name: f"{name}: {m}")


def test_a_training_step_failing_at_run_time_names_the_users_line() -> None:
    ids = torch.randint(0, 10, (3, 5))
    step = hir.compile(Embedded(), (ids,), training=True)
    step(ids).sum().backward()
    ids[0, 0] = 12
    with pytest.raises(LocatedError) as err:
        step(ids).sum().backward()
    assert str(err.value).startswith(f"{inspect.getsourcefile(Embedded)}:"), str(err.value)
    assert "h = self.emb(ids)" in str(err.value)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_replayed_steps_read_parameters_and_activations_in_place_on_a_gpu() -> None:
    """
    One device, both programs replayed: the forward's graph reads the parameters where they are
    (an optimizer updates them in place) and lends its saved activations to the backward's graph.
    SGD steps and a step of two micro-batches (the first's activations held over the second's
    forward) track eager's parameters.
    """
    torch.manual_seed(0)
    block = Block().cuda()
    eager = copy.deepcopy(block)
    compiled = hir.compile(block, (randn(64, 16).cuda(),), training=True, cuda_graph=True)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (block, eager)]
    for seed in range(4):
        xs = [randn(64, 16, seed=seed * 10 + j).cuda() for j in range(1 + seed % 2)]  # 1 or 2 micro-batches
        for opt in optimizers:
            opt.zero_grad()
        outs = [compiled(x) for x in xs]  # the forwards first: the first's activations are still held
        for out in outs:
            out.square().mean().backward()
        for x in xs:
            eager(x).square().mean().backward()
        for opt in optimizers:
            opt.step()
        for (name, p), q in zip(block.named_parameters(), eager.parameters()):
            torch.testing.assert_close(
                p, q, rtol=1e-4, atol=1e-4, msg=lambda m, name=name, seed=seed: f"step {seed}, {name}: {m}"
            )
    programs = compiled.specializations.lookup(None, (xs[0],)).programs  # type: ignore[union-attr]
    forward, backward = programs["forward"], programs["backward"]
    assert forward.borrowed_inputs
    assert forward.lent_outputs
    assert backward.borrowed_inputs
    (captured,) = forward.program.graphs.values()
    params = {p.data_ptr() for p in block.parameters()}
    assert params <= {t.data_ptr() for t in captured.static_inputs if isinstance(t, torch.Tensor)}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gradients_accumulated_over_steps_keep_the_backward_replayed_on_a_gpu() -> None:
    """
    Without `zero_grad()` a parameter's `.grad` is the first backward's handed-out gradient, which
    later backwards accumulate into, in place: the caller holds the graph's buffer for good. The
    backward ran eagerly at every later step (slower than eager torch); it now captures a graph of
    its own once and replays, copying the gradients out, and the sums match eager's.
    """
    torch.manual_seed(0)
    block = Block().cuda()
    eager = copy.deepcopy(block)
    compiled = hir.compile(block, (randn(64, 16).cuda().requires_grad_(),), training=True)
    for seed in range(6):
        x = randn(64, 16, seed=seed).cuda()
        ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
        compiled(ours).square().mean().backward()
        eager(theirs).square().mean().backward()
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-5)
        for (name, p), q in zip(block.named_parameters(), eager.parameters()):
            torch.testing.assert_close(
                p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=lambda m, name=name, seed=seed: f"step {seed}, {name}: {m}"
            )
    programs = compiled.specializations.lookup(None, (ours,)).programs  # type: ignore[union-attr]
    backward = programs["backward"]
    assert backward.program.graphs, backward.graph_decision
    assert backward._replay is not None  # the last step replayed
    assert not backward.hands_out_results


def test_a_calls_inputs_are_freed_when_the_caller_drops_them() -> None:
    """
    The first call (the one AOT autograd traces) gated its inputs through an autograd.Function
    whose ctx kept the gated tensors: a cycle through autograd's C++ nodes, which no garbage
    collection frees, so that call's input and its gradient lived as long as the process (on a
    GPU, a gradient buffer the backward's graph could never write again).
    """
    torch.manual_seed(0)
    block = Block()
    compiled = hir.compile(block, (randn(4, 16).requires_grad_(),), training=True)
    collecting = gc.isenabled()
    gc.disable()
    try:
        freed = []
        for seed in range(3):
            x = randn(4, 16, seed=seed).requires_grad_()
            compiled(x).sum().backward()
            assert x.grad is not None
            freed.append(weakref.ref(x))
            del x
        assert [ref() is None for ref in freed] == [True, True, True]  # as eager frees them: no collection needed
    finally:
        if collecting:
            gc.enable()
