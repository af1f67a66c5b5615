"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU): tensor
constants a trace makes from the input's shape, called at a second shape; signbit; antialiased
resizing (a ViT's position embedding resampled as timm does, torchvision's tensor Resize).
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.frontend.specialize import CallError


def _seeded(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


class _Falcon(torch.nn.Module):
    """Falcon's multi-query split (`fused[..., [-2], :]`: index lists torch lifts as constants) and a
    constant made from the sequence length, next to a non-persistent buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.query_key_value = torch.nn.Linear(16, 24, bias=False)
        self.register_buffer("inv_freq", torch.rand(4), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        fused = self.query_key_value(x).view(B, T, 6, 4)
        q, k, v = fused[..., :-2, :], fused[..., [-2], :], fused[..., [-1], :]
        q, k, v = (q * self.inv_freq).transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / torch.tensor([float(T)])
        return scores.softmax(-1) @ v


def test_constants_of_each_shapes_trace_are_its_own() -> None:
    # Every specialization held its inputs by position in one table: the second shape's constants
    # were the first trace's tensors at those positions (the length 5 for a call of length 3, a
    # silent wrong answer; or the buffer where an index list was, a call error).
    torch.manual_seed(0)
    model = _Falcon().eval()
    compiled = hir.compile(model, (_seeded(2, 5, 16, seed=1),))
    with torch.no_grad():
        for k, shape in enumerate([(2, 5, 16), (1, 3, 16), (2, 5, 16)]):
            x = _seeded(*shape, seed=k)
            torch.testing.assert_close(compiled(x), model(x))


def test_a_functions_shape_constant_at_a_second_shape() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return x + torch.tensor([float(x.shape[0]), 1.0])

    compiled = hir.compile(f, (torch.zeros(2, 2),))
    for rows in (2, 3, 4, 2):
        x = _seeded(rows, 2, seed=rows)
        torch.testing.assert_close(compiled(x), f(x))


def test_signbit_of_signed_zeros_infinities_integers_and_bf16() -> None:
    # aten.signbit had no entry in the ATen table.
    def f(x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.signbit(x), torch.signbit(x.to(torch.bfloat16)), torch.signbit(i)

    x = torch.tensor([[-1.5, 0.0, -0.0, 2.0, math.inf, -math.inf, 1e-30, -1e-30]])
    i = torch.tensor([[-3, 0, 5]])
    for got, want in zip(hir.compile(f, (x, i))(x, i), f(x, i)):
        assert torch.equal(got, want)


def test_negative_zero_python_constants_keep_their_sign() -> None:
    # The importer shared one constant per value, and -0.0 == 0.0: torch.where(m, -0.0, 0.0) was
    # all +0.0 (1 / it all +inf), and `+ (-0.0)` after a `* 0.0` lost the sign of the zeros.
    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return 1 / torch.where(x > 0, -0.0, 0.0), x * 0.0 + (-0.0)

    x = _seeded(3, 4, seed=0)
    for got, want in zip(hir.compile(f, (x,))(x), f(x)):
        assert torch.equal(got, want)
        assert torch.equal(torch.signbit(got), torch.signbit(want))


def test_fmax_and_fmin_ignore_a_nan_operand() -> None:
    # aten.fmax / aten.fmin had no entry in the ATen table.
    def f(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.fmax(a, b), torch.fmin(a, b), torch.fmax(a.bfloat16(), b.bfloat16())

    a = torch.tensor([[1.0, math.nan, math.nan, 2.0, -math.inf]])
    b = torch.tensor([[math.nan, 3.0, math.nan, 1.0, 5.0]])
    for got, want in zip(hir.compile(f, (a, b))(a, b), f(a, b)):
        torch.testing.assert_close(got, want, equal_nan=True)


def test_the_same_tensor_passed_for_two_arguments_is_traced_as_two() -> None:
    # torch.export traced f(a, a) as one input read twice: a later f(a, b) computed f(a, a).
    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y + x

    a, b = _seeded(3, 4, seed=0), _seeded(3, 4, seed=1)
    compiled = hir.compile(f, (a, a))
    for x, y in [(a, a), (a, b), (b, a), (a, a.view(3, 4))]:
        torch.testing.assert_close(compiled(x, y), f(x, y))


def test_a_parameter_passed_as_an_argument_is_traced_as_its_own_input() -> None:
    # torch.export traced the argument as the parameter it aliased: a later call with another
    # tensor read the parameter.
    linear = torch.nn.Linear(4, 4)

    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return linear(x) + w.sum(0)

    x = _seeded(2, 4, seed=0)
    with torch.no_grad():
        compiled = hir.compile(f, (x, linear.weight))
        for w in (linear.weight, _seeded(4, 4, seed=1)):
            torch.testing.assert_close(compiled(x, w), f(x, w))


def test_a_negative_zero_argument_is_its_own_specialization() -> None:
    # The signature compared -0.0 == 0.0: a call with -0.0 ran the program traced with 0.0.
    def f(x: torch.Tensor, s: float) -> torch.Tensor:
        return x * s

    x = torch.tensor([3.0, -2.0])
    compiled = hir.compile(f, (x, 0.0))
    for s in (0.0, -0.0, 0.0):
        assert torch.equal(torch.signbit(compiled(x, s)), torch.signbit(f(x, s)))


def test_untying_weights_after_compiling_is_a_call_error() -> None:
    # torch.export reads a tied tensor under its first name: after `head.weight` was given a
    # tensor of its own, the program still read `emb.weight` for it (a silent wrong answer).
    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)
            self.head = torch.nn.Linear(4, 10, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.head(self.emb(ids))

    model = Tied().eval()
    ids = torch.tensor([[1, 4, 7]])
    compiled = hir.compile(model, (ids,))
    with torch.no_grad():
        model.emb.weight.mul_(0.5)  # still tied: read
        torch.testing.assert_close(compiled(ids), model(ids))
        model.head.weight = torch.nn.Parameter(_seeded(10, 4, seed=2))
        with pytest.raises(CallError, match=r"'head\.weight' was 'emb\.weight'"):
            compiled(ids)


def resample_abs_pos_embed(posemb: torch.Tensor, new_size: tuple[int, int], num_prefix_tokens: int = 1) -> torch.Tensor:
    """timm's position embedding resampling (its default: bicubic, antialias=True)."""
    hw = int(math.sqrt(posemb.shape[1] - num_prefix_tokens))
    if new_size == (hw, hw):
        return posemb
    prefix, posemb = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    posemb = posemb.reshape(1, hw, hw, -1).permute(0, 3, 1, 2)
    posemb = F.interpolate(posemb, size=new_size, mode="bicubic", antialias=True)
    posemb = posemb.permute(0, 2, 3, 1).reshape(1, new_size[0] * new_size[1], -1)
    return torch.cat([prefix, posemb], dim=1)


class _ViTEmbed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Conv2d(3, 8, 4, 4)
        self.cls_token = torch.nn.Parameter(torch.randn(1, 1, 8))
        self.pos_embed = torch.nn.Parameter(torch.randn(1, 4 * 4 + 1, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, _, H, W = x.shape
        x = self.proj(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
        return x + resample_abs_pos_embed(self.pos_embed, (H // 4, W // 4))


def test_a_vit_trains_its_position_embedding_resampled_antialiased_to_the_image() -> None:
    # aten._upsample_bicubic2d_aa (and its backward) had no entry in the ATen table.
    torch.manual_seed(0)
    model = _ViTEmbed()
    reference = copy.deepcopy(model)
    x = _seeded(2, 3, 24, 12, seed=1)
    got, want = hir.compile(model, (x,), training=True)(x), reference(x)
    torch.testing.assert_close(got, want)
    got.square().sum().backward()
    want.square().sum().backward()
    torch.testing.assert_close(model.pos_embed.grad, reference.pos_embed.grad)


def test_antialiased_bilinear_and_bicubic_resizes_match_torchs_weights() -> None:
    def resize(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            F.interpolate(x, size=(5, 11), mode="bilinear", antialias=True),  # down, then up
            F.interpolate(x, scale_factor=0.37, mode="bicubic", antialias=True, align_corners=True),
        )

    x = _seeded(2, 3, 14, 9, seed=0)
    for got, want in zip(hir.compile(resize, (x,))(x), resize(x)):
        torch.testing.assert_close(got, want)


class _TextCNN(torch.nn.Module):
    """A text CNN pooling each filter's map to 3 regions (windows of uneven size)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(4, 6, 3)
        self.pool = torch.nn.AdaptiveMaxPool1d(3)
        self.fc = torch.nn.Linear(18, 2)

    def forward(self, x: torch.Tensor, image: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values, indices = F.adaptive_max_pool2d(image, (3, 4), return_indices=True)
        return self.fc(self.pool(self.conv(x)).flatten(1)), values, indices


def test_adaptive_max_pooling_with_uneven_windows() -> None:
    # adaptive_max_pool2d whose windows do not tile the input stayed whole: no entry in the table.
    torch.manual_seed(0)
    model = _TextCNN()
    reference = copy.deepcopy(model)
    image = _seeded(2, 3, 7, 10, seed=5)
    image[0, 0, :3, :4] = 1.0  # ties: the first maximum's position, as torch's kernel
    compiled = hir.compile(model, (_seeded(2, 4, 12, seed=1), image), training=True)
    for k, length in enumerate([12, 9]):
        x = _seeded(2, 4, length, seed=k)
        got, want = compiled(x, image), reference(x, image)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)
        got[0].square().sum().backward()
        want[0].square().sum().backward()
        torch.testing.assert_close(model.conv.weight.grad, reference.conv.weight.grad)


def test_a_submodule_added_after_compiling_runs_a_new_trace() -> None:
    # A submodule replaced or removed since the trace picked programs of its own, one added
    # (`nn.Sequential.append`, a ModuleList extended) did not: the old program ran without it.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    x = _seeded(3, 4, seed=0)
    compiled = hir.compile(model, (x,))
    with torch.no_grad():
        for step in range(3):
            if step == 1:
                model.append(torch.nn.ReLU())
            if step == 2:
                model.extend([torch.nn.Linear(4, 4), torch.nn.Tanh()])
            torch.testing.assert_close(compiled(x), model(x))


class _Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def encode(self, x: torch.Tensor, normalize: bool = True) -> torch.Tensor:
        out = self.proj(x).tanh()
        return F.normalize(out, dim=-1) if normalize else out


def test_a_bound_method_reads_its_modules_parameters_at_every_call_and_trains_them() -> None:
    # `hir.compile(model.encode, ...)` had the module's parameters lifted as constants of the
    # trace: a replaced weight was not read (a silent wrong answer), and training gave it no grad.
    torch.manual_seed(0)
    model = _Encoder()
    reference = copy.deepcopy(model)
    x = _seeded(3, 4, seed=0)
    compiled = hir.compile(model.encode, (x,))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, normalize=False), model.encode(x, normalize=False))
        model.proj.weight = torch.nn.Parameter(_seeded(4, 4, seed=1))
        torch.testing.assert_close(compiled(x), model.encode(x))
    trained = hir.compile(reference.encode, (x,), training=True)
    loss, want = trained(x).sum(), copy.deepcopy(reference).encode(x).sum()
    torch.testing.assert_close(loss, want)
    loss.backward()
    assert reference.proj.weight.grad is not None


class _Gated(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ws = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(4, 4))])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for w in self.ws:
            x = x @ w
        extra = getattr(self, "extra", None)
        return x + extra if extra is not None else x


def test_a_parameter_or_buffer_registered_after_compiling_runs_a_new_trace() -> None:
    # The trace's structure counted submodules, not the parameters and buffers registered since:
    # a ParameterList appended to, or a buffer forward reads with getattr, ran the old program.
    torch.manual_seed(0)
    model = _Gated()
    x = _seeded(3, 4, seed=0)
    compiled = hir.compile(model, (x,))
    with torch.no_grad():
        for step in range(3):
            if step == 1:
                model.ws.append(torch.nn.Parameter(_seeded(4, 4, seed=1)))
            if step == 2:
                model.register_buffer("extra", _seeded(4, seed=2))
            torch.testing.assert_close(compiled(x), model(x))
