"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU): norms and
log-softmax in bf16 and f16, global pooling of channels-last tensors, int4 weights unpacked with
shifts, and torch's transformer layers given a mask without `is_causal`.
"""

from __future__ import annotations

import copy
import re

import pytest
import torch
import torch.nn.functional as F

import hir


def _seeded(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _compiled_agrees(model: torch.nn.Module, *args: torch.Tensor) -> None:
    with torch.no_grad():
        torch.testing.assert_close(hir.compile(model, args)(*args), model(*args))


class _RMSNormBlock(torch.nn.Module):
    """A pre-norm MLP whose norm keeps torch's default eps (`nn.RMSNorm(dim)`, `F.rms_norm(x, shape)`)."""

    def __init__(self, functional: bool) -> None:
        super().__init__()
        self.norm = torch.nn.RMSNorm(16)
        self.fc = torch.nn.Linear(16, 16)
        self.functional = functional

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, (16,)) if self.functional else self.norm(x)
        return x + self.fc(h)


@pytest.mark.parametrize("functional", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rms_norm_of_half_precision_keeps_torchs_default_eps(dtype: torch.dtype, functional: bool) -> None:
    # torch's default eps is the epsilon of f32, in which its kernel computes bf16 and f16: the
    # epsilon of bf16 (0.0078) was taken, which outweighs the mean square of small activations.
    torch.manual_seed(0)
    model = _RMSNormBlock(functional).to(dtype).eval()
    _compiled_agrees(model, _seeded(2, 8, 16, seed=1, dtype=dtype) * 0.05)


class _Classifier(torch.nn.Module):
    """Log-probabilities over the last axis (a language model's head) and over axis 1 (a segmenter's)."""

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            F.log_softmax(x, dim=-1),
            F.log_softmax(x, dim=1),
            torch.logsumexp(x, -1),
            F.cross_entropy(x[:, 0], target),
        )


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_log_softmax_and_logsumexp_of_half_precision_round_as_torchs_kernels(dtype: torch.dtype) -> None:
    # Every step was rounded to the dtype; torch's kernels compute in f32 (log_softmax; on CPU the
    # sum and its log along the last axis rounded) or in the dtype (logsumexp).
    x = _seeded(4, 64, 8, seed=0, dtype=dtype) * 3
    target = torch.randint(0, 8, (4,), generator=torch.Generator().manual_seed(1))
    _compiled_agrees(_Classifier(), x, target)


class _Embedder(torch.nn.Module):
    """A retrieval head: normalized embeddings, their cosine similarities, a batch-normed feature map."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(8)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1, generator=torch.Generator().manual_seed(2))
            self.bn.running_var.uniform_(0.5, 2, generator=torch.Generator().manual_seed(3))

    def forward(self, a: torch.Tensor, b: torch.Tensor, fmap: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return F.normalize(a, dim=-1), F.cosine_similarity(a, b, dim=-1), a.norm(dim=-1), self.bn(fmap)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_norms_and_batch_norm_of_half_precision_compute_in_f32(dtype: torch.dtype) -> None:
    model = _Embedder().to(dtype).eval()
    a, b = _seeded(4, 16, 8, seed=4, dtype=dtype), _seeded(4, 16, 8, seed=5, dtype=dtype)
    _compiled_agrees(model, a, b, _seeded(4, 8, 6, 6, seed=6, dtype=dtype) * 3)


class _ConvNeXtHead(torch.nn.Module):
    """timm's ConvNeXt head: blocks work channels-last, the head pools `x.permute(0, 3, 1, 2)`."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 3)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(x).permute(0, 3, 1, 2)
        return self.fc(self.pool(x).flatten(1))


def test_global_pooling_of_a_channels_last_tensor_compiles() -> None:
    # torch's decomposition of adaptive_avg_pool2d(1) keeps the channels-last layout with an
    # as_strided of the mean, which was refused.
    torch.manual_seed(0)
    model = _ConvNeXtHead().eval()
    _compiled_agrees(model, _seeded(2, 5, 6, 8, seed=7))
    compiled = hir.compile(model, (_seeded(2, 5, 6, 8, seed=7),))
    assert "index_select" not in compiled.fusion_text  # the restride is the mean itself
    with torch.no_grad():
        x = _seeded(3, 4, 4, 8, seed=8)
        torch.testing.assert_close(compiled(x), model(x))


class _Windows(torch.nn.Module):
    """Overlapping frames of a signal read with `as_strided` (frame length 4, hop 2)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x * 2
        frames = y.as_strided((y.shape[0], (y.shape[1] - 4) // 2 + 1, 4), (y.shape[1], 2, 1))
        columns = y.t().contiguous().as_strided((3, y.shape[0]), (1, 3))  # a transposed read of memory
        return frames, columns


def test_as_strided_reads_memory_as_torch_lays_it_out() -> None:
    _compiled_agrees(_Windows(), _seeded(3, 10, seed=9))


def _strided_of_a_slice(x: torch.Tensor) -> torch.Tensor:
    return x[:, ::2].as_strided((2, 2), (1, 2))


def test_as_strided_of_a_view_with_gaps_is_a_located_error() -> None:
    with pytest.raises(hir.FrontendError) as error:
        hir.compile(_strided_of_a_slice, (torch.randn(4, 6),))
    line = _strided_of_a_slice.__code__.co_firstlineno + 1
    assert re.match(rf".*test_model_code_round4\.py:{line}: error: aten\.as_strided\.default: .*gaps", str(error.value))


class _Int4Linear(torch.nn.Module):
    """GPTQ's dequantization: eight 4-bit weights per int32 word, unpacked with shifts and a mask."""

    def __init__(self) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(10)
        self.register_buffer(
            "qweight", torch.randint(-(2**31), 2**31 - 1, (4, 16), dtype=torch.int32, generator=generator)
        )
        self.register_buffer("scales", torch.rand(2, 16, generator=generator) * 0.1)
        self.register_buffer("g_idx", torch.arange(32, dtype=torch.int32) // 16)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = torch.bitwise_right_shift(self.qweight.unsqueeze(1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        weight = torch.bitwise_and(weight.to(torch.int16), 15).reshape(32, 16)
        return x @ (self.scales[self.g_idx.long()] * (weight.float() - 8))


def test_int4_weights_unpacked_with_shifts_compile() -> None:
    _compiled_agrees(_Int4Linear().eval(), _seeded(3, 32, seed=11))


def _shifts(a: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return a >> s, a << s, a >> 3, a << 31, (a.long() >> 63), 1 << s


def test_shifts_of_integers_are_torchs_including_overflow() -> None:
    # The left shift wraps in the width; a right shift is arithmetic (negative numbers round down).
    a = torch.tensor([[-(2**31), -5, -1, 0, 1, 7, 2**31 - 1, 123456789]], dtype=torch.int32).repeat(2, 1)
    s = torch.tensor([[0, 1, 3, 8, 15, 30, 31, 5]], dtype=torch.int32).repeat(2, 1)
    torch.testing.assert_close(hir.compile(_shifts, (a, s))(a, s), _shifts(a, s))


class _CausalEncoder(torch.nn.Module):
    """An encoder given a causal mask built as tutorials build it, without `is_causal`."""

    def __init__(self, padded: bool) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.padded = padded

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1]), diagonal=1).bool()
        return self.encoder(x, mask=mask, src_key_padding_mask=padding if self.padded else None)


@pytest.mark.parametrize("padded", [False, True])
def test_a_transformer_encoder_given_a_mask_without_is_causal_compiles(padded: bool) -> None:
    # nn.TransformerEncoder compared the mask with a causal one (`bool((mask == causal).all())`),
    # a branch on data that torch.export refused.
    torch.manual_seed(0)
    model = _CausalEncoder(padded).eval()
    eager = copy.deepcopy(model)
    x, padding = _seeded(2, 6, 16, seed=12), torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    _compiled_agrees(model, x, padding)
    trained = hir.compile(model.train(), (x, padding), training=True)
    got, want = trained(x, padding), eager.train()(x, padding)
    torch.testing.assert_close(got, want)
    got.square().mean().backward()
    want.square().mean().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)


class _Decoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = torch.nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.decoder = torch.nn.TransformerDecoder(layer, num_layers=1)

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        mask = torch.nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.decoder(tgt, memory, tgt_mask=mask)


def test_a_transformer_decoder_given_a_tgt_mask_without_is_causal_compiles() -> None:
    torch.manual_seed(0)
    _compiled_agrees(_Decoder().eval(), _seeded(2, 5, 16, seed=13), _seeded(2, 7, 16, seed=14))


class _MetricHead(torch.nn.Module):
    """Metric learning's pairwise terms: `F.pdist` of the embeddings, `xlogy` against a number."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return F.pdist(x), torch.special.xlogy(x.abs(), 2.0)


def test_pdist_and_a_decomposition_with_a_scalar_tensor_compile() -> None:
    # `_pdist_forward` has no torch decomposition, and `xlogy(x, 2.0)`'s makes a prims.scalar_tensor.
    _compiled_agrees(_MetricHead(), _seeded(6, 4, seed=15))


def _scaled_by_its_max(x: torch.Tensor) -> torch.Tensor:
    return x / x.abs().max().item()


def test_item_is_a_located_error_that_says_what_to_write() -> None:
    with pytest.raises(hir.FrontendError) as error:
        hir.compile(_scaled_by_its_max, (torch.randn(4, 6),))
    line = _scaled_by_its_max.__code__.co_firstlineno + 1
    assert re.match(rf".*test_model_code_round4\.py:{line}: error: .*\.item\(\).*keep it a tensor", str(error.value))


def _flags_first(i: torch.Tensor) -> torch.Tensor:
    return (i > 3).sort(dim=-1, stable=True).indices


def test_an_op_imported_as_an_invalid_fusion_op_is_an_error_at_its_line() -> None:
    # A sort of booleans builds a fusion.topk of i1, which does not verify: the error named the
    # module (`<import>:`), not the user's line and the ATen op.
    with pytest.raises(hir.FrontendError) as error:
        hir.compile(_flags_first, (torch.randint(0, 7, (2, 8)),))
    line = _flags_first.__code__.co_firstlineno + 1
    assert re.match(
        rf".*test_model_code_round4\.py:{line}: error: aten\.sort\.stable cannot be imported: ", str(error.value)
    )
