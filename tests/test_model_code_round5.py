"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU), in bf16 and
f16 to the bit: a linear of a permuted input (ConvNeXt's channels-last MLP, MLP-Mixer's token
mixing), depthwise and grouped convolutions with a bias (ConvNeXt, a Conformer's conv module),
`baddbmm` with scales and a bias (BLOOM's ALiBi, diffusers' attention scores); and the error of a
dataclass returned without its pytree registration.
"""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.frontend import FrontendError

_HALF = [torch.bfloat16, torch.float16]


def _seeded(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _bitwise_as_eager(model: torch.nn.Module, *calls: tuple[torch.Tensor, ...]) -> None:
    """Compiled for the first call's shapes, each call (a new shape too) gives eager's bits."""
    with torch.no_grad():
        compiled = hir.compile(model, calls[0])
        for args in calls:
            torch.testing.assert_close(compiled(*args), model(*args), rtol=0, atol=0)


class _ChannelsLastMlp(torch.nn.Module):
    """ConvNeXt's MLP on a permuted feature map, MLP-Mixer's token mixing on a transposed one."""

    def __init__(self) -> None:
        super().__init__()
        self.pw = torch.nn.Linear(8, 16)
        self.tokens = torch.nn.Linear(6, 6)

    def forward(self, fmap: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.pw(fmap.permute(0, 2, 3, 1)), x + self.tokens(x.transpose(1, 2)).transpose(1, 2)


@pytest.mark.parametrize("dtype", _HALF)
def test_a_linear_of_a_permuted_input_adds_its_bias_after_the_product_as_eager(dtype: torch.dtype) -> None:
    # torch's F.linear folds only a contiguous input into one addmm; a permuted one is a matmul and
    # an add, two roundings of a bf16 or f16 result, which the one fused rounding was an ulp off.
    torch.manual_seed(0)
    model = _ChannelsLastMlp().to(dtype).eval()
    first = (_seeded(2, 8, 4, 4, seed=1, dtype=dtype), _seeded(2, 6, 8, seed=2, dtype=dtype))
    second = (_seeded(3, 8, 2, 5, seed=3, dtype=dtype), _seeded(1, 6, 8, seed=4, dtype=dtype))
    _bitwise_as_eager(model, first, second)


class _GroupedConvs(torch.nn.Module):
    """ConvNeXt's 7x7 depthwise conv, a Conformer's depthwise conv1d, a grouped 3x3 conv."""

    def __init__(self) -> None:
        super().__init__()
        self.dw = torch.nn.Conv2d(8, 8, 7, padding=3, groups=8)
        self.dw1d = torch.nn.Conv1d(8, 8, 5, padding=2, groups=8)
        self.grouped = torch.nn.Conv2d(8, 8, 3, padding=1, groups=4)

    def forward(self, x: torch.Tensor, seq: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.dw(x), self.dw1d(seq), self.grouped(x)


@pytest.mark.parametrize("dtype", _HALF)
def test_a_grouped_convolution_adds_its_bias_before_its_one_rounding(dtype: torch.dtype) -> None:
    # The groups' batched matmul was rounded, then the bias added and rounded again: an ulp off
    # torch's kernel, which accumulates the bias with the products, on a third of the elements.
    torch.manual_seed(0)
    model = _GroupedConvs().to(dtype).eval()
    _bitwise_as_eager(model, (_seeded(2, 8, 6, 6, seed=1, dtype=dtype), _seeded(2, 8, 9, seed=2, dtype=dtype)))


class _ScaledScores(torch.nn.Module):
    """BLOOM's ALiBi scores and diffusers' attention scores (`beta=0` over `torch.empty`)."""

    def forward(self, alibi: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scale = 1 / math.sqrt(q.shape[-1])
        bloom = alibi.baddbmm(batch1=q, batch2=k.transpose(1, 2), beta=1.0, alpha=scale)
        empty = torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype)
        diffusers = torch.baddbmm(empty, q, k.transpose(-1, -2), beta=0, alpha=scale)
        return bloom, F.softmax(diffusers, dim=-1)


@pytest.mark.parametrize("dtype", _HALF)
def test_baddbmm_of_half_precision_scales_and_adds_before_one_rounding(dtype: torch.dtype) -> None:
    # torch's kernel computes `beta * bias + alpha * (q @ k)` in f32 and rounds once; the product
    # was rounded to the dtype, then scaled and added in it.
    alibi = _seeded(6, 1, 5, seed=1, dtype=dtype)
    first = (alibi, _seeded(6, 5, 4, seed=2, dtype=dtype), _seeded(6, 5, 4, seed=3, dtype=dtype))
    second = (
        _seeded(6, 1, 3, seed=4, dtype=dtype),
        _seeded(6, 3, 4, seed=5, dtype=dtype),
        _seeded(6, 3, 4, seed=6, dtype=dtype),
    )
    _bitwise_as_eager(_ScaledScores(), first, second)


@dataclasses.dataclass
class _EncoderOutput:
    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None = None


class _Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> _EncoderOutput:
        h = self.fc(x)
        return _EncoderOutput(h, h[:, 0].tanh())


def test_a_dataclass_returned_unregistered_comes_back_as_eager_returns_it() -> None:
    encoder = _Encoder().eval()
    compiled = hir.compile(encoder, (_seeded(2, 3, 8, seed=0),))
    x = _seeded(2, 3, 8, seed=1)
    got, want = compiled(x), encoder(x)
    assert type(got) is _EncoderOutput
    torch.testing.assert_close(got.last_hidden_state, want.last_hidden_state)
    torch.testing.assert_close(got.pooler_output, want.pooler_output)


def test_a_dataclass_torch_refuses_as_unhashable_gets_the_same_error_at_its_forward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # torch 2.11 refuses the unregistered dataclass with only `unhashable type: '_EncoderOutput'`.
    def export(*args: object, **kwargs: object) -> None:
        raise TypeError("unhashable type: '_EncoderOutput'")

    monkeypatch.setattr(torch.export, "export", export)
    # a trace registers a returned dataclass: here it never ran, so the class is no pytree node
    monkeypatch.delitem(torch.utils._pytree.SUPPORTED_NODES, _EncoderOutput, raising=False)
    with pytest.raises(FrontendError) as info:
        hir.compile(_Encoder().eval(), (_seeded(2, 3, 8, seed=0),))
    line = _Encoder.forward.__code__.co_firstlineno
    assert re.match(rf".*test_model_code_round5.py:{line}: error: the code returns a _EncoderOutput, ", str(info.value))
    assert "register_dataclass(_EncoderOutput)" in str(info.value)


class _Activations(torch.nn.Module):
    """Mamba's softplus of its step sizes, SELU, and the statistics of a feature map."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return F.softplus(x), F.softplus(x, beta=2), F.selu(x), x.var(-1), x.std(0), torch.var_mean(x, 1)[0]


@pytest.mark.parametrize("dtype", _HALF)
def test_softplus_selu_and_variances_of_half_precision_compute_in_f32(dtype: torch.dtype) -> None:
    # torch's kernels compute these in f32 and round once: f16's exp overflowed past 11, so that
    # softplus of (11, 20] was infinite, and each rounded step of selu and var was an ulp off.
    x = torch.cat([_seeded(4, 32, seed=1) * 3, torch.linspace(10, 19, 32)[None]]).to(dtype)
    _bitwise_as_eager(_Activations(), (x,))
