"""
The frontend's coverage table: torch functions as model code calls them, and whether
`hir.import_torch` takes each. It is the generated section of docs/frontend.md between the
`coverage` markers:

    python -m hir.tools.frontend_coverage --write docs/frontend.md
    python -m hir.tools.frontend_coverage --check docs/frontend.md    # exit 1 when the section is stale

Each case is a small function with random inputs; tests/test_frontend_coverage.py compiles every
case that imports and compares it with eager torch.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

COMMAND = "python -m hir.tools.frontend_coverage --write docs/frontend.md"
BEGIN = "<!-- coverage:begin -->"
END = "<!-- coverage:end -->"


@dataclass(frozen=True)
class Case:
    name: str
    """What the user writes (the torch function or method)."""
    fn: Callable[..., object]
    inputs: Callable[[torch.Generator], tuple[torch.Tensor, ...]]


def _x(*shape: int) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    return lambda g: (torch.randn(shape, generator=g),)


def _xs(*shapes: tuple[int, ...]) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    return lambda g: tuple(torch.randn(s, generator=g) for s in shapes)


def _with_index(shape: tuple[int, ...], index: tuple[int, ...], high: int) -> Callable[..., tuple[torch.Tensor, ...]]:
    return lambda g: (torch.randn(shape, generator=g), torch.randint(0, high, index, generator=g))


def _ints(*shape: int) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    return lambda g: (torch.randint(-9, 9, shape, generator=g),)


def _pixels(*shape: int) -> Callable[[torch.Generator], tuple[torch.Tensor, ...]]:
    return lambda g: (torch.randint(0, 256, shape, generator=g, dtype=torch.uint8),)


def _mask_setitem(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[y < 0] = 0.5
    y[:, x[0] > 0] = -1.0
    return y


def _scatter_setitem(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[index] = 1.0
    return y


def _values_setitem(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[index] = x[: len(index)] * 2
    return y


def _max_unpool(x: torch.Tensor) -> torch.Tensor:
    y, indices = F.max_pool2d(x, 2, return_indices=True)
    return F.max_unpool2d(y, indices, 2) + indices.sum() * 0.5


def _accumulate_(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y.index_put_((index,), x[: len(index)], accumulate=True)
    return y


def _silu_(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    F.silu(y, inplace=True)
    return y


def _add_(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y.add_(1.5)
    y.mul_(x)
    return y


def _setitem(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[:, :4] = 0.0
    return y


def _strided_setitem(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[:, 1::2] = x[:, ::2] * 2
    return y


CASES: tuple[Case, ...] = (
    Case("torch.stack", lambda x, y: torch.stack([x, y], dim=1), _xs((4, 8), (4, 8))),
    Case("torch.cat", lambda x, y: torch.cat([x, y], dim=-1), _xs((4, 8), (4, 3))),
    Case("Tensor.split", lambda x: x.split(3, dim=-1)[1] * x.split(3, dim=-1)[0], _x(4, 9)),
    Case("Tensor.chunk", lambda x: sum(x.chunk(3, dim=0)), _x(6, 8)),
    Case("Tensor.unbind", lambda x: x.unbind(1)[2], _x(4, 8)),
    Case("torch.gather", lambda x, i: torch.gather(x, 1, i), _with_index((4, 8), (4, 3), 8)),
    Case("torch.index_select", lambda x, i: torch.index_select(x, 0, i), _with_index((6, 8), (5,), 6)),
    Case("x[idx] (aten.index)", lambda x, i: x[i] + x[:, i].sum(), _with_index((6, 6), (2, 3), 6)),
    Case("F.embedding", lambda w, i: F.embedding(i, w), _with_index((10, 8), (2, 5), 10)),
    Case(
        "F.embedding_bag (offsets, mean)",
        lambda w, i: F.embedding_bag(i, w, torch.tensor([0, 2, 2, 5]), mode="mean"),
        _with_index((10, 8), (7,), 10),
    ),
    Case("Tensor.masked_fill", lambda x: x.masked_fill(x > 0.5, float("-inf")), _x(4, 8)),
    Case("torch.where (scalars)", lambda x: torch.where(x > 0, x, 0.0), _x(4, 8)),
    Case("torch.tril", lambda x: torch.tril(x), _x(6, 6)),
    Case("torch.triu", lambda x: torch.triu(x, diagonal=1), _x(6, 6)),
    Case("torch.arange", lambda x: x + torch.arange(8) * 0.5, _x(4, 8)),
    Case("torch.clamp", lambda x: torch.clamp(x, -0.5, 0.5) + x.clamp(min=0.1), _x(4, 8)),
    Case("F.softplus", lambda x: F.softplus(x * 10), _x(4, 8)),
    Case("torch.einsum", lambda x, y: torch.einsum("bij,bjk->bik", x, y), _xs((2, 4, 8), (2, 8, 3))),
    Case("torch.addmm", lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0), _xs((3,), (4, 8), (8, 3))),
    Case("torch.baddbmm", lambda b, x, y: torch.baddbmm(b, x, y), _xs((2, 4, 3), (2, 4, 8), (2, 8, 3))),
    Case("Tensor.max(dim)", lambda x: x.max(dim=-1)[0] + x.max(dim=-1).indices, _x(4, 8)),
    Case("torch.argmax", lambda x: torch.argmax(x, dim=-1) + torch.argmin(x), _x(4, 8)),
    Case("torch.topk", lambda x: torch.topk(x, 3, dim=-1).values, _x(4, 8)),
    Case("torch.sort", lambda x: torch.sort(x, dim=0, descending=True)[0], _x(4, 8)),
    Case("torch.cumsum", lambda x: torch.cumsum(x, dim=1), _x(4, 8)),
    Case("Tensor.repeat", lambda x: x.repeat(2, 3), _x(2, 4)),
    Case("Tensor.expand_as", lambda x, y: x.expand_as(y) + y, _xs((1, 8), (4, 8))),
    Case("torch.flip", lambda x: torch.flip(x, dims=[0, 1]), _x(4, 8)),
    Case("Tensor.var", lambda x: x.var(dim=-1) + x.std(dim=0, unbiased=False).sum(), _x(4, 8)),
    Case("torch.linalg.vector_norm", lambda x: torch.linalg.vector_norm(x, dim=-1), _x(4, 8)),
    Case("torch.norm", lambda x: x.norm(p=1, dim=0), _x(4, 8)),
    Case("torch.floor_divide", lambda x: torch.floor_divide(x * 10, 3.0), _x(4, 8)),
    Case("// and % on integers", lambda i: i // 3 + i % 3, lambda g: (torch.randint(-20, 20, (4, 8), generator=g),)),
    Case("torch.minimum", lambda x, y: torch.minimum(x, y), _xs((4, 8), (4, 8))),
    Case("F.silu(inplace=True)", _silu_, _x(4, 8)),
    Case("Tensor.add_, Tensor.mul_", _add_, _x(4, 8)),
    Case("x[:, :4] = 0 (setitem)", _setitem, _x(4, 8)),
    Case("x[x < 0] = v (setitem)", _mask_setitem, _x(4, 8)),
    Case("F.log_softmax", lambda x: F.log_softmax(x, dim=-1), _x(4, 8)),
    Case("torch.log1p", lambda x: torch.log1p(x.abs()), _x(4, 8)),
    Case("torch.pow(scalar, x)", lambda x: torch.pow(2.0, x) + 0.5**x, _x(4, 8)),
    Case(
        "nn.MultiheadAttention",
        nn.MultiheadAttention(8, 2, batch_first=True).eval(),
        _xs((2, 4, 8), (2, 4, 8), (2, 4, 8)),
    ),
    Case(
        "nn.TransformerEncoderLayer",
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval(),
        _xs((2, 4, 8)),
    ),
    Case("logical and/or/not", lambda x: ((x > 0) & (x < 1) | ~(x > -1)).float(), _x(4, 8)),
    Case(
        "F.scaled_dot_product_attention",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        _xs((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)),
    ),
    Case(
        "F.scaled_dot_product_attention(enable_gqa=True)",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        _xs((1, 4, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)),
    ),
    Case("torch.tensor constant", lambda x: x * torch.tensor([1.0, -2.0, 3.0, 0.5, 1.0, 2.0, 4.0, 8.0]), _x(4, 8)),
    Case("torch.zeros(dtype=torch.long)", lambda i: i + torch.zeros(4, 8, dtype=torch.long), _ints(4, 8)),
    Case("Tensor.to(torch.uint8), uint8 arithmetic", lambda x: (x * 100).abs().to(torch.uint8) * 3 + 250, _x(4, 8)),
    Case("uint8 images: img / 255, img > 128", lambda img: img / 255 - (img > 128).float(), _pixels(2, 4, 4)),
    Case(
        "Tensor.type(torch.uint8) == 0 (a byte mask)",
        lambda x: x.masked_fill(torch.triu(torch.ones(8, 8), diagonal=1).type(torch.uint8) == 0, 0.0),
        _x(8, 8),
    ),
    Case("F.pad", lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), _x(4, 8)),
    Case("torch.roll", lambda x: torch.roll(x, 3, dims=1), _x(4, 8)),
    Case("F.relu6, F.hardtanh", lambda x: F.relu6(x * 4) + F.hardtanh(x), _x(4, 8)),
    Case("F.leaky_relu, F.elu", lambda x: F.leaky_relu(x, 0.1) + F.elu(x), _x(4, 8)),
    Case(
        "floor, ceil, round, trunc, sign",
        lambda x: (x * 3).floor() + x.ceil() + (x * 3).round() + x.trunc() + x.sign(),
        _x(4, 8),
    ),
    Case("torch.log2, torch.exp2", lambda x: torch.log2(x.abs() + 0.1) + torch.exp2(x), _x(4, 8)),
    Case("torch.isnan, torch.isinf", lambda x: torch.nan_to_num(x / (x > 0)) + torch.isinf(x / 0).float(), _x(4, 8)),
    Case("Tensor.any, Tensor.all", lambda x: (x > 1).any(-1).float() + (x > -1).all(0).sum(), _x(4, 8)),
    Case("F.one_hot", lambda i: F.one_hot(i, 8).float().sum(1), lambda g: (torch.randint(0, 8, (4, 3), generator=g),)),
    Case("torch.var_mean", lambda x: torch.var_mean(x, dim=-1)[0] * torch.var_mean(x, dim=-1)[1], _x(4, 8)),
    Case("Tensor.max()", lambda x: x.max() - x.min(), _x(4, 8)),
    Case("F.batch_norm (eval)", lambda x, m, v: F.batch_norm(x, m, v.abs(), eps=1e-3), _xs((4, 8, 3), (8,), (8,))),
    Case("F.cross_entropy", lambda x, t: F.cross_entropy(x, t), _with_index((4, 8), (4,), 8)),
    Case("F.normalize", lambda x: F.normalize(x, dim=-1), _x(4, 8)),
    Case("torch.logsumexp", lambda x: torch.logsumexp(x, dim=-1), _x(4, 8)),
    Case("Tensor.repeat_interleave", lambda x: x.repeat_interleave(2, dim=0), _x(4, 8)),
    Case("F.glu, F.mish, F.hardswish", lambda x: F.glu(x).sum() + F.mish(x) + F.hardswish(x), _x(4, 8)),
    Case("torch.expm1, F.selu, F.celu", lambda x: torch.expm1(x * 1e-3) * 1e3 + F.selu(x) + F.celu(x, 2.0), _x(4, 8)),
    Case("torch.logical_xor", lambda x: torch.logical_xor(x > 0, x < 0.5).float(), _x(4, 8)),
    Case("torch.where (two scalars)", lambda x: torch.where(x > 0, 1.0, -1.0), _x(4, 8)),
    Case("torch.special.i0", lambda x: torch.special.i0(x), _x(4, 8)),
    Case("torch.eye", lambda x: x @ torch.eye(8) + x.masked_fill(torch.eye(4, 8, dtype=torch.bool), 0.0), _x(4, 8)),
    Case("x & 1 (integers)", lambda i: (i & 1) + (i & 7), _ints(4, 8)),
    Case(
        "torch.bitwise_and, bitwise_or, bitwise_xor (integers)",
        lambda i: (i & (i >> 1)) + ((i * 40503) ^ 0x5BD1) + (i | 12),
        _ints(4, 8),
    ),
    Case("x >> k, x << k (integers)", lambda i: (i >> 2) + (i << 3) + (i >> (i & 3)), _ints(4, 8)),
    Case(
        "F.adaptive_avg_pool2d of x.permute(0, 3, 1, 2) (as_strided)",
        lambda x: F.adaptive_avg_pool2d(x.permute(0, 3, 1, 2), 1),
        _x(2, 3, 4, 8),
    ),
    Case(
        "F.grid_sample",
        lambda x, g: F.grid_sample(x, g.tanh() * 1.2, padding_mode="reflection", align_corners=False),
        _xs((2, 3, 5, 6), (2, 4, 7, 2)),
    ),
    Case("torch.linalg.cholesky", lambda x: torch.linalg.cholesky(x @ x.mT + torch.eye(4)), _x(2, 4, 4)),
    Case("torch.fft.rfft", lambda x: torch.fft.rfft(x).abs(), _x(4, 8)),
    Case("Tensor.scatter_add", lambda x, i: x.scatter_add(1, i, x), _with_index((4, 8), (4, 8), 8)),
    Case(
        "Tensor.scatter (MoE gates)",
        lambda x, i: torch.zeros_like(x).scatter(1, i, x[:, :2]),
        _with_index((4, 8), (4, 2), 8),
    ),
    Case("Tensor.scatter (a value)", lambda x, i: x.scatter(1, i, 0.5), _with_index((4, 8), (4, 3), 8)),
    Case("torch.prod", lambda x: torch.prod(x, dim=-1) + x.prod(), _x(4, 8)),
    Case("torch.cumprod", lambda x: torch.cumprod(x, dim=-1), _x(4, 8)),
    Case("torch.diagonal", lambda x: torch.diagonal(x, 1) + torch.diag(x[:, :4]).sum(), _x(4, 8)),
    Case(
        "torch.view_as_complex, torch.polar",
        lambda x, a: torch.view_as_real(torch.view_as_complex(x.view(4, 4, 2)) * torch.polar(a.abs(), a)).flatten(1),
        _xs((4, 8), (4, 4)),
    ),
    Case("torch.exp (complex)", lambda x: torch.view_as_real(torch.exp(torch.view_as_complex(x))), _x(4, 2)),
    Case("nn.Conv2d (patches)", nn.Conv2d(3, 8, 4, stride=4), _x(2, 3, 8, 12)),
    Case(
        "F.conv1d (padding, stride, groups)",
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2),
        _xs((2, 4, 9), (6, 2, 3), (6,)),
    ),
    Case("F.conv2d (dilation)", lambda x, w: F.conv2d(x, w, padding=2, dilation=2), _xs((1, 2, 7, 6), (3, 2, 3, 3))),
    Case("F.conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2), _xs((1, 3, 4, 4), (3, 4, 2, 2))),
    Case(
        "F.conv_transpose2d (padding, output_padding, groups)",
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=3),
        _xs((2, 3, 5, 5), (3, 2, 3, 3)),
    ),
    Case("nn.GroupNorm", nn.GroupNorm(2, 6), _x(2, 6, 3, 4)),
    Case(
        "F.avg_pool2d, F.adaptive_avg_pool2d",
        lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False) + F.adaptive_avg_pool2d(x, (3, 3)),
        _x(2, 3, 6, 6),
    ),
    Case("F.max_pool2d", lambda x: F.max_pool2d(x, 3, stride=2, padding=1), _x(2, 3, 6, 6)),
    Case("F.max_pool2d(return_indices=True), F.max_unpool2d", _max_unpool, _x(2, 3, 6, 6)),
    Case(
        "F.adaptive_max_pool2d",
        lambda x: F.adaptive_max_pool2d(x, 1) + F.adaptive_max_pool2d(x, 3).sum(),
        _x(2, 3, 6, 6),
    ),
    Case(
        "F.interpolate (nearest, bilinear)",
        lambda x: F.interpolate(x, scale_factor=2.0) + F.interpolate(x, size=(8, 12), mode="bilinear"),
        _x(1, 2, 4, 6),
    ),
    Case(
        "F.interpolate (bilinear, bicubic; antialias=True)",
        lambda x: (
            F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True)
            + F.interpolate(x, size=(3, 4), mode="bicubic", antialias=True)
        ),
        _x(1, 2, 7, 9),
    ),
    Case(
        "F.adaptive_max_pool1d, F.adaptive_max_pool2d (uneven windows)",
        lambda x: F.adaptive_max_pool2d(x, (3, 4)).sum(-1) + F.adaptive_max_pool1d(x.flatten(2), 3),
        _x(2, 3, 7, 5),
    ),
    Case(
        "F.avg_pool2d(ceil_mode=True)",
        lambda x: (
            F.avg_pool2d(x, 2, ceil_mode=True) + F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)
        ),
        _x(1, 2, 5, 5),
    ),
    Case(
        "F.max_pool2d(ceil_mode=True), nn.MaxPool1d",
        lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True).sum() + nn.MaxPool1d(5, ceil_mode=True)(x.flatten(2)),
        _x(1, 2, 6, 6),
    ),
    Case("Tensor.unfold", lambda x: x.unfold(1, 3, 2).sum(-1) + x.unfold(1, 3, 3).mean(-1)[:, :1], _x(2, 9)),
    Case(
        "torch.tan, sinh, cosh, hypot, log10",
        lambda x: torch.tan(x) + torch.sinh(x) * torch.cosh(x) + torch.hypot(x, 1 - x) + torch.log10(x.abs()),
        _x(4, 8),
    ),
    Case("torch.atan2, torch.atan", lambda x, y: torch.atan2(x, y) + torch.atan(x * 3), _xs((4, 8), (4, 8))),
    Case(
        "torch.asinh, acosh, atanh",
        lambda x: torch.asinh(x * 50) + torch.acosh(x.abs() + 1) + torch.atanh(torch.tanh(x)),
        _x(4, 8),
    ),
    Case("torch.erfc, torch.erfinv", lambda x: torch.special.erfc(x * 2) + torch.erfinv(x.tanh()), _x(4, 8)),
    Case(
        "torch.lgamma, torch.digamma, torch.polygamma",
        lambda x: torch.lgamma(x * 3) + torch.digamma(x * 3) + torch.polygamma(1, x * 3) + torch.polygamma(3, x.abs()),
        _x(4, 8),
    ),
    Case(
        "torch.copysign, torch.ldexp",
        lambda x, y: torch.copysign(x, y) + torch.ldexp(x, torch.tensor([1, -2, 3, 0, 4, -1, 2, 5])),
        _xs((4, 8), (4, 8)),
    ),
    Case(
        "torch.signbit",
        lambda x: torch.signbit(x) ^ torch.signbit(torch.where(x > 1, -0.0, 0.0)),
        _x(4, 8),
    ),
    Case(
        "torch.fmax, torch.fmin",
        lambda x, y: torch.fmax(x, torch.where(y > 1, torch.nan, y)) + torch.fmin(x, y),
        _xs((4, 8), (4, 8)),
    ),
    Case("torch.logcumsumexp", lambda x: torch.logcumsumexp(x * 10, dim=1), _x(4, 8)),
    Case("torch.cummax, torch.cummin", lambda x: torch.cummax(x, 1).values + torch.cummin(x, 0).indices, _x(4, 8)),
    Case(
        "torch.tril_indices, torch.triu_indices",
        lambda x: x[tuple(torch.tril_indices(4, 8, 1))].sum() + x[tuple(torch.triu_indices(4, 8, 2))],
        _x(4, 8),
    ),
    Case("Tensor.masked_scatter", lambda x, y: x.masked_scatter(x > 0, y), _xs((4, 8), (40,))),
    Case("nn.Bilinear", nn.Bilinear(8, 5, 3), _xs((4, 8), (4, 5))),
    Case("torch.cdist", lambda a, b: torch.cdist(a, b) + torch.cdist(a, b, p=1), _xs((2, 4, 3), (2, 5, 3))),
    Case("Tensor.median, Tensor.kthvalue", lambda x: x.median(-1).values + x.kthvalue(3, -1).values, _x(4, 7)),
    Case(
        "torch.fake_quantize_per_tensor_affine",
        lambda x: torch.fake_quantize_per_tensor_affine(x * 4, 0.1, 3, -128, 127),
        _x(4, 8),
    ),
    Case(
        "F.multilabel_margin_loss",
        lambda x: F.multilabel_margin_loss(x, torch.tensor([[3, 0, -1, 1, 1], [4, 4, 2, -1, 0]])),
        _x(2, 5),
    ),
    Case("F.instance_norm", lambda x: F.instance_norm(x) + F.batch_norm(x, None, None, training=True), _x(2, 3, 5)),
    Case("torch.diagonal_scatter", lambda x: torch.diagonal_scatter(x, x[0, :3] * 2, 1), _x(4, 4)),
    Case("torch.round(decimals)", lambda x: torch.round(x * 7, decimals=2) + torch.round(x, decimals=-1), _x(4, 8)),
    Case("torch.addmv", lambda x: torch.addmv(x[:, 0], x, x[0], beta=0.5), _x(8, 8)),
    Case("torch.histc", lambda x: torch.histc(x, bins=6, min=-1, max=1) + torch.histc(x, bins=4).sum(), _x(4, 8)),
    Case("torch.bincount", lambda i: torch.bincount(i, minlength=8), _ints(12)),
    Case(
        "torch.bucketize, torch.searchsorted",
        lambda x, b: torch.bucketize(x, b.sort()[0]) + torch.searchsorted(b.sort()[0], x, right=True),
        _xs((4, 8), (5,)),
    ),
    Case("x[mask]", lambda x: x[x > 0], _x(4, 8)),
    Case("torch.where(mask) (one argument)", lambda x: torch.where(x > 0)[0], _x(4, 8)),
    # Draws whose results do not depend on the numbers drawn, which eager's check compares.
    Case("torch.rand_like", lambda x: x + (torch.rand_like(x) < 1.0).float(), _x(4, 8)),
    Case("F.dropout (training, p=1)", lambda x: x + F.dropout(x, p=1.0, training=True), _x(4, 8)),
    Case("x[:, 1::2] = v (strided setitem)", _strided_setitem, _x(4, 8)),
    Case("x[idx] = v (scatter)", _scatter_setitem, _with_index((4, 8), (2,), 4)),
    Case("x[idx] = values (scatter)", _values_setitem, _with_index((4, 8), (2,), 4)),
    Case(
        "x[idx] = values (repeated indices)",
        _values_setitem,
        lambda g: (torch.randn(4, 8, generator=g), torch.tensor([1, 3, 1])),
    ),
    Case("Tensor.index_copy", lambda x, i: x.index_copy(1, i, x[:, :3] * 2), _with_index((4, 8), (3,), 8)),
    Case("Tensor.index_put_(accumulate=True)", _accumulate_, _with_index((4, 8), (3,), 4)),
    Case(
        "Tensor.scatter_reduce (GNN aggregation)",
        lambda x, i: x.scatter_reduce(1, i, x, "amax", include_self=False) + x.scatter_reduce(1, i, x * 2, "mean"),
        _with_index((4, 8), (4, 8), 8),
    ),
    Case("x ** 2 (integers), a ^ b (booleans)", lambda i: (i**2) * ((i > 0) ^ (i < 3)), _ints(4, 8)),
    Case("Tensor.index_add", lambda x, i: x.index_add(1, i, x[:, :5], alpha=0.5), _with_index((4, 8), (5,), 8)),
)


def inputs_of(case: Case, seed: int = 0) -> tuple[torch.Tensor, ...]:
    return case.inputs(torch.Generator().manual_seed(seed))


def status(case: Case) -> str:
    """`yes`, or `no: ` and the first line of the frontend's error (without the location)."""
    from hir.frontend import import_torch
    from hir.frontend.errors import FrontendError

    try:
        import_torch(case.fn, inputs_of(case))
    except FrontendError as err:
        return refusal(err)
    return "yes"


def refusal(err: Exception) -> str:
    """A `no` row's text: the error's first line without its location."""
    return "no: " + str(err).splitlines()[0].split(" error: ", 1)[-1]


def render(cases: Sequence[Case] | None = None, statuses: Sequence[str] | None = None) -> str:
    """The coverage section; `statuses` (one per case) when the caller has them, else `status(case)`."""
    cases = CASES if cases is None else cases
    rows = [
        BEGIN,
        f"<!-- Generated by `{COMMAND}` from tools/frontend_coverage.py: edit the cases there. -->",
        "",
        "| torch code | imports |",
        "|---|---|",
    ]
    for k, case in enumerate(cases):
        cell = (status(case) if statuses is None else statuses[k]).replace("|", "\\|")
        rows.append(f"| `{case.name}` | {cell} |")
    rows.append(END)
    return "\n".join(rows)


def updated(text: str, section: str) -> str:
    if BEGIN not in text or END not in text:
        raise ValueError(f"the file has no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    return head + section + rest.split(END, 1)[1]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hir.tools.frontend_coverage", description=__doc__.split("\n\n")[0])
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE", help="rewrite the coverage section of FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 when the coverage section of FILE is stale")
    args = p.parse_args(argv)
    path = Path(args.write or args.check)
    text = path.read_text()
    new = updated(text, render())
    if args.write:
        path.write_text(new)
        return 0
    if new != text:
        print(f"{path}: the coverage section is stale: regenerate it with `{COMMAND}`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
