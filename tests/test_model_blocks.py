"""
Model code as people write it compiles and matches eager torch on CPU: a nanoGPT block, a Llama
decoder layer (RMSNorm, rotary embeddings with non-persistent buffers, attention, a SiLU-gated
MLP), top-k MoE routing, an embedding model, code with in-place updates, Meta's Llama block
(complex rotary embeddings), convolutions (a ViT patch embedding, Whisper's and Mamba's Conv1d,
a ResNet BasicBlock, a diffusion UNet ResBlock with group norm and resampling) and their
gradients. The modules follow their sources (nanoGPT's model.py, Hugging Face's
modeling_llama.py, Meta's llama/model.py, timm, Whisper, torchvision, guided diffusion) with
small sizes.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hir
from hir.frontend.errors import FrontendError

# -- nanoGPT (model.py) ---------------------------------------------------------------------------


class GPTConfig:
    block_size = 16
    n_embd = 32
    n_head = 4
    dropout = 0.0
    bias = True


class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.register_buffer(
            "bias",
            torch.tril(torch.ones(config.block_size, config.block_size)).view(
                1, 1, config.block_size, config.block_size
            ),
        )

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.resid_dropout(self.c_proj(y))
        return y


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        x = self.c_fc(x)
        x = self.gelu(x)
        x = self.c_proj(x)
        x = self.dropout(x)
        return x


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


# -- Llama (modeling_llama.py) --------------------------------------------------------------------


class LlamaConfig:
    hidden_size = 32
    intermediate_size = 64
    num_attention_heads = 4
    num_key_value_heads = 2
    max_position_embeddings = 16
    rope_theta = 10000.0
    rms_norm_eps = 1e-6


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings=2048, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_position_embeddings, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x, seq_len):
        return self.cos[:seq_len].to(dtype=x.dtype), self.sin[:seq_len].to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids):
    cos = cos[position_ids].unsqueeze(1)
    sin = sin[position_ids].unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaAttention(nn.Module):
    def __init__(self, config, sdpa):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.hidden_size // self.num_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.sdpa = sdpa
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, self.hidden_size, bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, config.max_position_embeddings, config.rope_theta)

    def forward(self, hidden_states, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = (
            self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        )
        value_states = (
            self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        )
        cos, sin = self.rotary_emb(value_states, seq_len=q_len)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin, position_ids)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        if self.sdpa:
            attn_output = F.scaled_dot_product_attention(query_states, key_states, value_states, is_causal=True)
        else:
            attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
            causal_mask = torch.triu(torch.full((q_len, q_len), float("-inf")), diagonal=1)
            attn_weights = attn_weights + causal_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
            attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, sdpa=False):
        super().__init__()
        self.self_attn = LlamaAttention(config, sdpa)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_ids)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


# -- top-k MoE routing ----------------------------------------------------------------------------


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)))


class MoE(nn.Module):
    def __init__(self, dim=16, hidden=32, num_experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])
        self.expert_scale = nn.Parameter(torch.rand(num_experts) + 0.5)

    def forward(self, x):
        B, T, C = x.shape
        x = x.view(-1, C)
        router_logits = self.gate(x)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        scale = self.expert_scale.index_select(0, selected_experts.flatten()).view(-1, self.top_k)
        routing_weights = routing_weights * scale
        expert_out = torch.stack([expert(x) for expert in self.experts], dim=1)  # [N, E, C]
        index = selected_experts.unsqueeze(-1).expand(-1, -1, C)
        chosen = torch.gather(expert_out, 1, index)  # [N, top_k, C]
        out = (chosen * routing_weights.unsqueeze(-1)).sum(dim=1)
        return out.view(B, T, C), router_logits.argmax(dim=-1)


# -- embedding + linear, in-place updates ---------------------------------------------------------


class TinyLM(nn.Module):
    def __init__(self, vocab=50, dim=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(8, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        _, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)  # as nanoGPT writes it
        x = self.wte(idx) + self.wpe(pos)
        logits = self.lm_head(F.gelu(x))
        return logits, logits.argmax(-1)


class InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.register_buffer("shift", torch.randn(16))

    def forward(self, x):
        h = self.fc(x)
        h.mul_(0.5)
        h += self.shift
        F.relu(h, inplace=True)
        h[:, 0] = 1.0
        h.clamp_(max=1.5)
        out = torch.zeros_like(h)
        out.copy_(h)
        out.sub_(x)
        return out


def _check(module: nn.Module, inputs: tuple[torch.Tensor, ...], fresh: tuple[torch.Tensor, ...], **options) -> hir.Any:
    module.eval()
    compiled = hir.compile(module, inputs, **options)
    for args in (inputs, fresh):
        with torch.no_grad():
            expected = module(*args)
        torch.testing.assert_close(compiled(*args), expected)
    return compiled


def test_nanogpt_block() -> None:
    torch.manual_seed(0)
    compiled = _check(Block(GPTConfig()), (torch.randn(2, 8, 32),), (torch.randn(2, 8, 32),))
    assert "fusion.where" in compiled.fusion_text  # masked_fill with the tril buffer


def test_nanogpt_block_streams_the_batch() -> None:
    torch.manual_seed(0)
    compiled = _check(
        Block(GPTConfig()), (torch.randn(2, 8, 32),), (torch.randn(2, 8, 32),), in_layouts=["[stream, serial, serial]"]
    )
    assert "hir.for" in str(compiled.module)


@pytest.mark.parametrize("sdpa", [False, True], ids=["manual-attention", "sdpa"])
def test_llama_decoder_layer(sdpa: bool) -> None:
    torch.manual_seed(0)
    layer = LlamaDecoderLayer(LlamaConfig(), sdpa=sdpa)
    assert "cos" not in layer.state_dict()  # the rotary tables are non-persistent buffers, as in HF
    positions = torch.arange(8).unsqueeze(0).expand(2, 8)
    compiled = _check(layer, (torch.randn(2, 8, 32), positions), (torch.randn(2, 8, 32), positions.flip(1)))
    assert ("fusion.sdpa" in compiled.fusion_text) == sdpa


def test_moe_top_k_routing() -> None:
    torch.manual_seed(0)
    compiled = _check(MoE(), (torch.randn(2, 4, 16),), (torch.randn(2, 4, 16),))
    for op in ("fusion.topk", "fusion.gather", "fusion.index_select", "fusion.argmax"):
        assert op in compiled.fusion_text


def test_embedding_and_linear() -> None:
    torch.manual_seed(0)
    ids = (torch.randint(0, 50, (2, 8)),)
    compiled = _check(TinyLM(), ids, (torch.randint(0, 50, (2, 8)),))
    assert re.search(r"fusion.index_select %p_wte_weight, %idx dim = 0", compiled.fusion_text)


def test_in_place_updates() -> None:
    torch.manual_seed(0)
    _check(InPlace(), (torch.randn(4, 16),), (torch.randn(4, 16),))


class MixtralSparseMoE(nn.Module):
    """Hugging Face's Mixtral block: each expert runs on the tokens `torch.where(expert_mask[i])` selects."""

    def __init__(self, dim=16, num_experts=4, top_k=2):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([LlamaMLP(_MoEConfig()) for _ in range(num_experts)])

    def forward(self, hidden_states):
        b, t, h = hidden_states.shape
        hidden_states = hidden_states.view(-1, h)
        routing_weights = F.softmax(self.gate(hidden_states), dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        final = torch.zeros((b * t, h), dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            current = self.experts[expert_idx](hidden_states[None, top_x].reshape(-1, h))
            final.index_add_(0, top_x, current * routing_weights[top_x, idx, None])
        return final.reshape(b, t, h)


def test_a_sparse_moe_dispatch_is_a_located_error_and_its_dense_form_compiles() -> None:
    with pytest.raises(FrontendError) as err:
        hir.compile(MixtralSparseMoE().eval(), (torch.randn(2, 4, 16),))
    assert re.match(
        r".*test_model_blocks.py:\d+: error: aten.nonzero.default returns as many values as its", str(err.value)
    )
    assert "(a data-dependent shape)" in str(err.value)
    assert str(err.value).endswith("idx, top_x = torch.where(expert_mask[expert_idx])")
    torch.manual_seed(0)
    _check(DenseMoE(), (torch.randn(2, 4, 16),), (torch.randn(3, 5, 16),))


@pytest.mark.parametrize(
    ("shape", "dim", "start", "end", "step"),
    [((10, 6), 0, 0, None, 2), ((10, 6), 0, 1, None, 2), ((11, 6), 0, 1, None, 3), ((11, 6), 0, 2, 9, 3),
     ((4, 9), 1, 0, None, 4), ((4, 9), -1, 1, 8, 3), ((4, 9), 1, 8, None, 2), ((2, 4, 9), 2, -5, None, 2)],
)  # fmt: skip
def test_strided_slice_assignments(shape: tuple[int, ...], dim: int, start: int, end: int | None, step: int) -> None:
    """`x[..., start:end:step] = v`: the backward of GPT-J's `x[..., ::2]`, and setitem with a step."""
    torch.manual_seed(0)
    x = torch.randn(shape)
    source = torch.randn_like(x.narrow(dim, 0, len(range(*slice(start, end, step).indices(shape[dim])))))

    def assign(x, source):
        return torch.slice_scatter(x, source, dim, start, end, step) * 2

    torch.testing.assert_close(hir.compile(assign, (x, source))(x, source), assign(x, source))


class StaticCacheAttention(nn.Module):
    """
    A decode step that writes its keys and values into caches passed in and returned (Hugging
    Face's StaticCache: `k_cache.index_copy_(2, cache_position, k)`; gpt-fast: `v[:, :, pos] = v`).
    """

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.wqkv, self.wo, self.heads = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim, bias=False), heads

    def forward(self, x, k_cache, v_cache, cache_position):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.wqkv(x).split(C, dim=-1))
        k_cache = k_cache.clone()
        k_cache.index_copy_(2, cache_position, k)
        v_cache = v_cache.clone()
        v_cache[:, :, cache_position] = v
        seen = torch.arange(k_cache.shape[2], device=x.device) <= cache_position[-1]
        y = F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=seen[None, :])
        return self.wo(y.transpose(1, 2).reshape(B, T, C)), k_cache, v_cache


def test_a_static_kv_cache_written_with_index_copy_and_indexed_assignment() -> None:
    torch.manual_seed(0)
    caches = (torch.randn(2, 4, 10, 8), torch.randn(2, 4, 10, 8))
    prefill = (torch.randn(2, 3, 32), *caches, torch.tensor([0, 1, 2]))
    _check(StaticCacheAttention(), prefill, (torch.randn(2, 3, 32), *caches, torch.tensor([4, 5, 6])))
    decode = (torch.randn(2, 1, 32), *caches, torch.tensor([3]))
    _check(StaticCacheAttention(), decode, (torch.randn(2, 1, 32), *caches, torch.tensor([7])))


class SortedExperts(nn.Module):
    """Tokens sorted by their expert and put back with the inverse permutation, `inv[order] = arange(n)`."""

    def __init__(self, dim=16, experts=4):
        super().__init__()
        self.gate, self.w = nn.Linear(dim, experts), nn.Parameter(torch.randn(experts, dim, dim) * 0.1)

    def forward(self, x):
        expert = self.gate(x).argmax(-1)
        order = expert.argsort(stable=True)
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.numel(), device=x.device)
        y = torch.bmm(x[order].unsqueeze(1), self.w[expert[order]]).squeeze(1)
        return y[inverse] * torch.sigmoid(self.gate(x)).sum(-1, keepdim=True)


@pytest.mark.parametrize("indices", [[3, 1, 7, 0], [3, 1, 3, 0, 1, 3]], ids=["unique", "repeated"])
def test_indexed_assignments_of_several_values_keep_the_last_writer(indices: list[int]) -> None:
    """`x[idx] = values`: where indices repeat, the last entry's value, as torch's CPU kernel leaves it."""

    def assign(x, index, values):
        y = x.clone()
        y[index] = values
        z = torch.zeros(3, dtype=torch.bool)
        z[index % 3] = values[:, 0] > 0  # an axis shorter than the index, and booleans: positions against entries
        return y, z

    index = torch.tensor(indices)
    args = (torch.randn(10, 4), index, torch.randn(len(indices), 4))
    torch.testing.assert_close(hir.compile(assign, args)(*args), assign(*args), rtol=0, atol=0)


def trains_like_eager(model: nn.Module, x: torch.Tensor) -> None:
    """`model`'s step compiled with training=True: the gradients of x and of every parameter are eager's."""
    step = hir.compile(model, (x,), training=True)
    step(x).square().sum().backward()
    grads = [t.grad for t in (x, *model.parameters())]
    for t in (x, *model.parameters()):
        t.grad = None
    model(x).square().sum().backward()
    for got, expected in zip(grads, [t.grad for t in (x, *model.parameters())]):
        torch.testing.assert_close(got, expected)


def test_a_sorted_expert_dispatch_trains() -> None:
    torch.manual_seed(0)
    model = SortedExperts()
    x = torch.randn(10, 16, requires_grad=True)
    _check(model, (x.detach(),), (torch.randn(10, 16),))
    trains_like_eager(model, x)


class FastText(nn.Module):
    """The PyTorch text classification tutorial's model: an EmbeddingBag of a batch's ids, by offsets."""

    def __init__(self, vocab=30, dim=8, classes=4, **bag_options):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab, dim, **bag_options)
        self.fc = nn.Linear(dim, classes)

    def forward(self, text, offsets, per_sample_weights=None):
        return self.fc(self.embedding(text, offsets, per_sample_weights=per_sample_weights))


@pytest.mark.parametrize(
    "options",
    [{"mode": "mean"}, {"mode": "sum", "padding_idx": 0}, {"mode": "sum", "include_last_offset": True}],
    ids=["mean", "padding", "last-offset"],
)
def test_embedding_bags_by_offsets_compile_and_train(options: dict) -> None:
    """Each id's bag is the count of offsets at or before it: one index_add sums the rows; an empty bag is zeros."""
    torch.manual_seed(0)
    text = torch.tensor([0, 5, 7, 0, 3, 3, 9, 12, 0, 4])
    offsets = torch.tensor([0, 3, 3, 7, 10] if options.get("include_last_offset") else [0, 3, 3, 7])
    weights = torch.rand(10) if options["mode"] == "sum" else None
    model = FastText(**options)
    _check(model, (text, offsets, weights), (text.flip(0), offsets, weights))
    eager = copy.deepcopy(model)
    step = hir.compile(model, (text, offsets, weights), training=True)
    step(text, offsets, weights).square().sum().backward()
    eager(text, offsets, weights).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    with pytest.raises(FrontendError, match=r"mode='max' is not supported"):
        hir.compile(FastText(mode="max"), (text, offsets))


def test_code_without_source_a_tensor_for_example_args_and_a_number_returned_are_errors() -> None:
    """Code typed at a prompt has no line of code in its frames: the error names the frame's line alone."""
    code = "def forward(x):\n    return x[torch.randperm(x.shape[0])]\n"
    namespace: dict = {"torch": torch}
    exec(compile(code, "<stdin>", "exec"), namespace)
    with pytest.raises(FrontendError) as err:
        hir.compile(namespace["forward"], (torch.randn(4, 16),))
    assert str(err.value) == (
        "<stdin>:2: error: aten.randperm.default draws random numbers in a way compiled programs do not "
        "(a permutation, a sample)"
    )
    with pytest.raises(FrontendError, match=r"<inputs>: error: example_args is a tensor, not a tuple"):
        hir.compile(InPlace(), torch.randn(4, 16))
    assert hir.compile(lambda x: (x * 2, x.shape[0]), (torch.randn(4, 16),))(torch.randn(4, 16))[1] == 4


# -- Hugging Face GPT-2 attention (Conv1D as addmm, a boolean mask buffer) and T5 position buckets --


class GPT2Attention(nn.Module):
    def __init__(self, n=8):
        super().__init__()
        self.register_buffer(
            "bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n), persistent=False
        )
        self.c_attn_weight = torch.nn.Parameter(torch.randn(16, 48) * 0.1)
        self.c_attn_bias = torch.nn.Parameter(torch.zeros(48))

    def forward(self, x):
        size_out = x.size()[:-1] + (48,)  # noqa: RUF005 (as HF writes it)
        qkv = torch.addmm(self.c_attn_bias, x.view(-1, x.size(-1)), self.c_attn_weight).view(size_out)
        q, k, v = qkv.split(16, dim=2)
        q, k, v = (t.view(2, 8, 2, 8).permute(0, 2, 1, 3) for t in (q, k, v))
        attn_weights = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5, dtype=q.dtype)
        causal_mask = self.bias[:, :, :8, :8]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, v)


def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


class T5RelativeBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.relative_attention_bias = nn.Embedding(32, 4)

    def forward(self, scores):
        q, k = scores.shape[-2:]
        context_position = torch.arange(q, dtype=torch.long)[:, None]
        memory_position = torch.arange(k, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        buckets = t5_bucket(relative_position)
        values = self.relative_attention_bias(buckets).permute([2, 0, 1]).unsqueeze(0)
        return scores + values


def test_gpt2_attention_with_addmm_and_a_boolean_mask() -> None:
    torch.manual_seed(0)
    compiled = _check(GPT2Attention(), (torch.randn(2, 8, 16),), (torch.randn(2, 8, 16),))
    assert "fusion.where" in compiled.fusion_text


def test_t5_relative_position_buckets() -> None:
    """Integer arithmetic, a log of positions cast back to integers, and an embedding of the buckets."""
    torch.manual_seed(0)
    _check(T5RelativeBias(), (torch.randn(2, 4, 16, 16),), (torch.randn(2, 4, 16, 16),))


# -- Meta's Llama (llama/model.py): rotary embeddings as complex products ---------------------------


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class MetaRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class MetaTransformerBlock(nn.Module):
    def __init__(self, dim=32, n_heads=4, n_kv_heads=2, max_seq_len=16):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)
        self.w1, self.w3 = nn.Linear(dim, 64, bias=False), nn.Linear(dim, 64, bias=False)
        self.w2 = nn.Linear(64, dim, bias=False)
        self.attention_norm, self.ffn_norm = MetaRMSNorm(dim), MetaRMSNorm(dim)
        self.register_buffer("freqs_cis", precompute_freqs_cis(self.head_dim, max_seq_len * 2), persistent=False)

    def attention(self, x, start_pos, freqs_cis, mask):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        n_rep = self.n_heads // self.n_kv_heads
        keys = torch.repeat_interleave(xk, dim=2, repeats=n_rep)
        values = torch.repeat_interleave(xv, dim=2, repeats=n_rep)
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = F.softmax((scores + mask).float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)

    def forward(self, x, start_pos: int = 0):
        seqlen = x.shape[1]
        freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]
        mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device)
        mask = torch.triu(mask, diagonal=1)
        mask = torch.hstack([torch.zeros((seqlen, start_pos), device=x.device), mask]).type_as(x)
        h = x + self.attention(self.attention_norm(x), start_pos, freqs_cis, mask)
        return h + self.w2(F.silu(self.w1(self.ffn_norm(h))) * self.w3(self.ffn_norm(h)))


class ComplexArgument(nn.Module):
    def forward(self, x, freqs_cis):
        return torch.view_as_real(torch.view_as_complex(x) * freqs_cis)


class ComplexResult(nn.Module):
    def forward(self, x):
        return torch.view_as_complex(x) * 2


def test_meta_llama_block_with_complex_rotary_embeddings() -> None:
    """The complex64 `freqs_cis` buffer is passed as its view_as_real pairs; the products are of the parts."""
    torch.manual_seed(0)
    block = MetaTransformerBlock()
    assert block.freqs_cis.dtype == torch.complex64
    _check(block, (torch.randn(2, 8, 32),), (torch.randn(2, 8, 32),))


def test_meta_llama_block_trains_with_its_complex_buffer() -> None:
    """training=True: the complex buffer and the complex values saved for the backward travel as
    their real pairs, and the backward's conjugates are of the pairs; gradients against eager."""
    torch.manual_seed(0)
    block = MetaTransformerBlock()
    x = torch.randn(2, 8, 32, requires_grad=True)
    compiled = hir.compile(block, (x,), training=True)
    out = compiled(x)
    out.square().sum().backward()
    got = {"x": x.grad, **{n: p.grad for n, p in block.named_parameters()}}
    x.grad = None
    block.zero_grad(set_to_none=True)
    reference = block(x)
    reference.square().sum().backward()
    torch.testing.assert_close(out, reference, rtol=1e-4, atol=1e-5)
    expected = {"x": x.grad, **{n: p.grad for n, p in block.named_parameters()}}
    for name, gradient in expected.items():
        torch.testing.assert_close(got[name], gradient, rtol=1e-4, atol=1e-5, msg=name)


def test_complex_arguments_and_results_are_errors() -> None:
    z = torch.randn(4, 2)
    with pytest.raises(FrontendError, match=r"<inputs>: error: argument 'freqs_cis' is a torch.complex64 tensor"):
        hir.compile(ComplexArgument(), (z, torch.randn(4, dtype=torch.complex64)))
    with pytest.raises(FrontendError, match=r"test_model_blocks.py:\d+: error: output #0 is a torch.complex64 tensor"):
        hir.compile(ComplexResult(), (z,))


# -- more families: Mistral's sliding window, Gemma's norm, GPT-NeoX's partial rotary, Mixtral's and
# DeepSeek's MoE routed densely, BERT's padding mask, Whisper's cross-attention ------------------


class SlidingWindowAttention(nn.Module):
    """Mistral's mask: causal, and at most `window` positions back (torch.full(-inf), triu, tril)."""

    def __init__(self, dim=16, window=3):
        super().__init__()
        self.window, self.qkv = window, nn.Linear(dim, 3 * dim)

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        mask = mask + torch.tril(torch.full((t, t), float("-inf")), diagonal=-self.window - 1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class GemmaRMSNorm(nn.Module):
    def __init__(self, dim=16, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        output = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (output * (1.0 + self.weight.float())).type_as(x)


class NeoXPartialRotary(nn.Module):
    def __init__(self, hidden=32, heads=4, rotary_pct=0.25):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.rotary_ndims = int(self.head_size * rotary_pct)
        self.query_key_value = nn.Linear(hidden, 3 * hidden)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.rotary_ndims, 2).float() / self.rotary_ndims))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, hidden_states, position_ids):
        b, t, _ = hidden_states.shape
        qkv = self.query_key_value(hidden_states).view(b, t, self.heads, 3 * self.head_size)
        query = qkv[..., : self.head_size].permute(0, 2, 1, 3)
        key = qkv[..., self.head_size : 2 * self.head_size].permute(0, 2, 1, 3)
        value = qkv[..., 2 * self.head_size :].permute(0, 2, 1, 3)
        freqs = (self.inv_freq[None, :, None].expand(b, -1, 1) @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)
        q_rot, q_pass = query[..., : self.rotary_ndims], query[..., self.rotary_ndims :]
        k_rot, k_pass = key[..., : self.rotary_ndims], key[..., self.rotary_ndims :]
        query = torch.cat(((q_rot * cos) + (rotate_half(q_rot) * sin), q_pass), dim=-1)
        key = torch.cat(((k_rot * cos) + (rotate_half(k_rot) * sin), k_pass), dim=-1)
        return F.scaled_dot_product_attention(query, key, value, is_causal=True)


class DenseMoE(nn.Module):
    """Mixtral's router (softmax, top-k, renormalized) as one_hot weights, or DeepSeek's (sigmoid scores, a
    shared expert); every expert runs on every token."""

    def __init__(self, deepseek=False, dim=16, num_experts=4, top_k=2):
        super().__init__()
        self.deepseek, self.num_experts, self.top_k = deepseek, num_experts, top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([LlamaMLP(_MoEConfig()) for _ in range(num_experts)])
        self.shared_experts = LlamaMLP(_MoEConfig())

    def forward(self, x):
        b, t, h = x.shape
        x = x.view(-1, h)
        logits = self.gate(x)
        if self.deepseek:
            scores = logits.sigmoid()
            indices = torch.topk(scores, self.top_k, dim=-1)[1]
            weights = scores.gather(1, indices)
            weights /= weights.sum(dim=-1, keepdim=True)
            y = torch.zeros_like(x)
            for i, expert in enumerate(self.experts):
                y = y + expert(x) * (weights * (indices == i)).sum(dim=-1, keepdim=True)
            return (y + self.shared_experts(x)).view(b, t, h)
        weights, selected = torch.topk(F.softmax(logits, dim=1, dtype=torch.float), self.top_k, dim=-1)
        weights /= weights.sum(dim=-1, keepdim=True)
        dense = (weights.unsqueeze(-1) * F.one_hot(selected, num_classes=self.num_experts)).sum(dim=1)
        y = torch.zeros((b * t, h), dtype=x.dtype, device=x.device)
        for i, expert in enumerate(self.experts):
            y = y + expert(x) * dense[:, i : i + 1]
        return y.reshape(b, t, h), logits


class _MoEConfig:
    hidden_size = 16
    intermediate_size = 32


class BertSelfAttention(nn.Module):
    """BERT's attention with the padding mask an argument: `(1 - mask) * finfo.min`, added to the scores."""

    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def transpose_for_scores(self, x):
        return x.view((*x.size()[:-1], self.heads, self.head_size)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        extended = attention_mask[:, None, None, :].to(dtype=hidden_states.dtype)
        extended = (1.0 - extended) * torch.finfo(hidden_states.dtype).min
        q, k, v = (self.transpose_for_scores(f(hidden_states)) for f in (self.query, self.key, self.value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + extended
        context = torch.matmul(self.dropout(nn.functional.softmax(scores, dim=-1)), v).permute(0, 2, 1, 3)
        return self.LayerNorm(context.reshape(hidden_states.shape) + hidden_states)


class CrossAttention(nn.Module):
    """Whisper's decoder attention over the encoder's output (two inputs of different lengths)."""

    def __init__(self, n_state=32, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.query, self.key, self.value = (
            nn.Linear(n_state, n_state),
            nn.Linear(n_state, n_state, bias=False),
            nn.Linear(n_state, n_state),
        )
        self.out = nn.Linear(n_state, n_state)

    def forward(self, x, xa):
        q, k, v = self.query(x), self.key(xa), self.value(xa)
        n_state = q.shape[-1]
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        w = F.softmax((q @ k).float(), dim=-1).to(q.dtype)
        return self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))


def _padding_mask() -> torch.Tensor:
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    return mask


FAMILIES = {
    "mistral-sliding-window": lambda: (SlidingWindowAttention(), (torch.randn(2, 8, 16),)),
    "gemma-rmsnorm-bf16": lambda: (GemmaRMSNorm(), (torch.randn(2, 4, 16, dtype=torch.bfloat16),)),
    "neox-partial-rotary": lambda: (NeoXPartialRotary(), (torch.randn(2, 8, 32), torch.arange(8).expand(2, 8))),
    # Mixtral's dense MoE: in test_a_sparse_moe_dispatch_is_a_located_error_and_its_dense_form_compiles,
    # at these inputs and at another batch and length.
    "deepseek-shared-moe": lambda: (DenseMoE(deepseek=True), (torch.randn(2, 4, 16),)),
    "bert-padding-mask": lambda: (BertSelfAttention(), (torch.randn(2, 8, 32), _padding_mask())),
    "whisper-cross-attention": lambda: (CrossAttention(), (torch.randn(2, 5, 32), torch.randn(2, 7, 32))),
}


@pytest.mark.parametrize("name", FAMILIES)
def test_model_families(name: str) -> None:
    torch.manual_seed(0)
    module, inputs = FAMILIES[name]()
    fresh = tuple(torch.randn_like(x) if x.is_floating_point() else x for x in inputs)
    _check(module, inputs, fresh)


# -- convolutions: a ViT's patch embedding (timm), Whisper's conv stem, Mamba's causal depthwise conv --


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.randn(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, (img_size // patch_size) ** 2 + 1, embed_dim) * 0.02)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)  # BCHW -> BNC
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        return self.norm(x + self.pos_embed)


class ConvStem(nn.Module):
    def __init__(self, n_mels=8, n_state=16, n_ctx=5, d_conv=4):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", torch.randn(n_ctx, n_state))
        self.conv1d = nn.Conv1d(n_state, n_state, kernel_size=d_conv, groups=n_state, padding=d_conv - 1)

    def forward(self, x):
        x = F.gelu(self.conv1(x))
        x = F.gelu(self.conv2(x))
        x = x.permute(0, 2, 1) + self.positional_embedding  # Whisper's AudioEncoder
        length = x.shape[1]
        return F.silu(self.conv1d(x.transpose(1, 2))[..., :length]).transpose(1, 2)  # Mamba's causal conv


def test_vit_patch_embedding() -> None:
    """A Conv2d whose stride is its kernel: the patches are a reshape of the image, one matmul."""
    torch.manual_seed(0)
    compiled = _check(PatchEmbed(), (torch.randn(2, 3, 16, 16),), (torch.randn(2, 3, 16, 16),))
    assert "fusion.slice" not in compiled.fusion_text


def test_conv1d_stems() -> None:
    """Padded, strided and depthwise Conv1d: a strided slice of the padded input per kernel position."""
    torch.manual_seed(0)
    _check(ConvStem(), (torch.randn(2, 8, 10),), (torch.randn(2, 8, 10),))


def test_bf16_linear_and_convolution_round_once_as_torch_does() -> None:
    """A bias is added before the one rounding to bf16 (torch's addmm over all rows), so the results are torch's bits."""
    torch.manual_seed(0)
    for module, x in (
        (nn.Linear(16, 8), torch.randn(2, 4, 16)),
        (nn.Conv2d(3, 8, 4, stride=4), torch.randn(2, 3, 16, 16)),
        (nn.Conv1d(8, 16, 3, padding=1), torch.randn(2, 8, 10)),
    ):
        module, x = module.bfloat16().eval(), x.bfloat16()
        with torch.no_grad():
            torch.testing.assert_close(hir.compile(module, (x,))(x), module(x), atol=0, rtol=0)


def _scalar_arithmetic(x, y):
    return (
        x * (1.0 / math.sqrt(8)),  # torch multiplies in f32 by the unrounded number, then rounds once
        x / math.sqrt(8),
        torch.div(x, 0.3, rounding_mode="floor"),
        x + 1e-3,  # add and sub round the number to the tensor's dtype first
        torch.add(x, y, alpha=0.3),  # in f32 with a rounded alpha, rounded once
        1.0 - x,
    )


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_arithmetic_with_python_numbers_is_torch_bits(dtype: torch.dtype) -> None:
    """A bf16 or f16 tensor with a Python number is computed as torch's kernels do (in f32 where they do)."""
    torch.manual_seed(0)
    x, y = torch.randn(64, 64, dtype=dtype) * 3, torch.randn(64, 64, dtype=dtype)
    torch.testing.assert_close(hir.compile(_scalar_arithmetic, (x, y))(x, y), _scalar_arithmetic(x, y), atol=0, rtol=0)
    block, h = Block(GPTConfig()).to(dtype).eval(), torch.randn(2, 8, 32, dtype=dtype)
    with torch.no_grad():
        torch.testing.assert_close(hir.compile(block, (h,))(h), block(h), atol=0, rtol=0)


class ConvPool(nn.Module):
    """The convolutions above and an average pool, for their backward ops (`training=True`)."""

    def __init__(self):
        super().__init__()
        self.stem, self.patches = ConvStem(), PatchEmbed(img_size=8, in_chans=2)

    def forward(self, audio, image):
        pooled = F.avg_pool2d(image, 3, stride=2, padding=1, count_include_pad=False)
        return self.stem(audio).square().mean() + self.patches(image).square().mean() + pooled.square().mean()


def test_convolution_and_pooling_gradients() -> None:
    """convolution_backward: the weight's transpose times the gradient, folded back onto the input; avg_pool2d's."""
    torch.manual_seed(0)
    model = ConvPool()
    audio, image = torch.randn(2, 8, 10, requires_grad=True), torch.randn(2, 2, 8, 8, requires_grad=True)
    step = hir.compile(model, (audio, image), training=True)
    step(audio, image).backward()
    grads = [t.grad for t in (audio, image, *model.parameters())]
    for t in (audio, image, *model.parameters()):
        t.grad = None
    model(audio, image).backward()
    for got, expected in zip(grads, [t.grad for t in (audio, image, *model.parameters())]):
        torch.testing.assert_close(got, expected)


# -- torchvision's ResNet BasicBlock and a diffusion UNet's ResBlock (group norm, upsampling) ------


class BasicBlock(nn.Module):
    def __init__(self, inplanes=4, planes=8):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=2, bias=False), nn.BatchNorm2d(planes))
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.fc = nn.Linear(planes, 10)

    def forward(self, x):
        x = self.maxpool(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)) + self.downsample(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(out, (1, 1)), 1))


class GroupNorm32(nn.GroupNorm):
    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class UNetResBlock(nn.Module):
    def __init__(self, channels=8, out_channels=16, emb_channels=12):
        super().__init__()
        self.in_layers = nn.Sequential(
            GroupNorm32(4, channels), nn.SiLU(), nn.Conv2d(channels, out_channels, 3, padding=1)
        )
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, out_channels))
        self.out_layers = nn.Sequential(
            GroupNorm32(4, out_channels),
            nn.SiLU(),
            nn.Dropout(p=0.1),
            nn.Conv2d(out_channels, out_channels, 3, padding=1),
        )
        self.skip_connection = nn.Conv2d(channels, out_channels, 1)

    def forward(self, x, emb):
        x = F.interpolate(x, scale_factor=2, mode="nearest")  # the Upsample before it
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb).type(h.dtype)
        h = self.out_layers(h + emb_out[..., None, None])
        return F.avg_pool2d(self.skip_connection(x) + h, kernel_size=2, stride=2)  # the Downsample after it


def _randomize_norms(module: nn.Module) -> nn.Module:
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d | nn.GroupNorm):
            nn.init.normal_(m.weight)
            nn.init.normal_(m.bias)
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_()
            m.running_var.uniform_(0.5, 2.0)
    return module


def test_resnet_basic_block() -> None:
    torch.manual_seed(0)
    _check(_randomize_norms(BasicBlock()), (torch.randn(2, 4, 8, 8),), (torch.randn(2, 4, 8, 8),))


class _Pool(nn.Module):
    def __init__(self, pool: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.pool = pool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


@pytest.mark.parametrize(
    ("pool", "shape"),
    [
        (lambda x: F.max_pool2d(x, 2), (2, 3, 8, 8)),
        (lambda x: F.max_pool2d(x, 3, stride=2, padding=1), (2, 3, 9, 9)),
        (lambda x: F.max_pool2d(x, (2, 3), stride=(1, 2)), (1, 2, 7, 9)),
        (lambda x: F.max_pool2d(x, 2), (3, 8, 8)),
        (lambda x: F.max_pool1d(x, 3, stride=2, padding=1), (2, 4, 11)),
        (lambda x: F.max_pool3d(x, 2), (1, 2, 4, 4, 4)),
        (lambda x: -F.max_pool2d(-x, 3, stride=1, padding=1), (2, 3, 6, 6)),
    ],
    ids=["tiles", "padded", "rectangular", "unbatched", "1-d", "3-d", "negative"],
)
def test_max_pooling_is_the_windows_maximum(
    pool: Callable[[torch.Tensor], torch.Tensor], shape: tuple[int, ...]
) -> None:
    """Max pooling mapped by the table, whatever torch's decompositions: eager's values exactly."""
    x = torch.randn(*shape)
    torch.testing.assert_close(hir.compile(_Pool(pool), (x,))(x), pool(x), rtol=0, atol=0)


def test_max_pooling_indices_are_eagers() -> None:
    """`return_indices=True`: each window's first maximum, as a flat position in the input's plane (ties from a ReLU)."""
    x = torch.relu(torch.randn(2, 2, 7, 7))
    pools = (
        nn.MaxPool2d(2, return_indices=True),
        nn.MaxPool2d(3, stride=2, padding=1, return_indices=True),
        nn.MaxPool2d(2, padding=1, dilation=(2, 3), ceil_mode=True, return_indices=True),
    )
    for pool in pools:
        values, indices = hir.compile(pool, (x,))(x)
        expected_values, expected_indices = pool(x)
        torch.testing.assert_close(values, expected_values, rtol=0, atol=0)
        torch.testing.assert_close(indices, expected_indices, rtol=0, atol=0)


class LeNet(nn.Module):
    """The PyTorch tutorial's LeNet, whose max pools train: their backward adds each gradient at its maximum."""

    def __init__(self, pool: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 4, 3), nn.Conv2d(4, 8, 3)
        self.fc = nn.LazyLinear(10)
        self.pool = pool

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # ReLU's zeros tie in a window: the first one gets the gradient
        x = self.pool(F.relu(self.conv2(x)))
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


# No case of its own for 2 x 2 tiles (F.max_pool2d(x, 2)): LeNet's first pool is one, after a ReLU,
# trained in every case below.
@pytest.mark.parametrize(
    "pool",
    [
        lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
        lambda x: F.max_pool1d(x.flatten(2), 3, stride=2),
        lambda x: F.max_pool3d(x.unsqueeze(1), 2),
        lambda x: F.adaptive_max_pool2d(x, 2),
    ],
    ids=["padded", "1-d", "3-d", "adaptive"],
)
def test_max_pooling_trains(pool: Callable[[torch.Tensor], torch.Tensor]) -> None:
    torch.manual_seed(0)
    model = LeNet(pool)
    x = torch.randn(2, 1, 14, 14, requires_grad=True)
    model(x)  # the lazy linear takes its shape
    trains_like_eager(model, x)


class DCGANGenerator(nn.Module):
    """The PyTorch DCGAN tutorial's generator (ConvTranspose2d, BatchNorm2d, ReLU, Tanh), small."""

    def __init__(self, nz=8, ngf=4, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class UNetUp(nn.Module):
    """A UNet decoder step (milesial's Up with bilinear=False): ConvTranspose2d, pad to the skip, cat, convs."""

    def __init__(self, in_channels=8, out_channels=4):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv = nn.Sequential(nn.Conv2d(in_channels, out_channels, 3, padding=1), nn.ReLU(inplace=True))
        self.vocoder = nn.ConvTranspose1d(out_channels, 2, 8, stride=4, padding=2, groups=2)  # HiFi-GAN's upsampling

    def forward(self, x1, x2):
        x1 = self.up(x1)
        dy, dx = x2.size()[2] - x1.size()[2], x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        h = self.conv(torch.cat([x2, x1], dim=1))
        return self.vocoder(h.flatten(2))


def test_transposed_convolutions_upsample_and_train() -> None:
    """A transposed convolution is its convolution's input gradient (a fold); its gradients swap input and output."""
    torch.manual_seed(0)
    generator = _randomize_norms(DCGANGenerator())
    _check(generator, (torch.randn(2, 8, 1, 1),), (torch.randn(3, 8, 1, 1),))
    up = UNetUp()
    inputs = (torch.randn(2, 8, 4, 4), torch.randn(2, 4, 9, 9))
    _check(up, inputs, (torch.randn(1, 8, 4, 4), torch.randn(1, 4, 8, 8)))
    for model, args in ((generator.train(), (torch.randn(2, 8, 1, 1),)), (up, inputs)):
        args = tuple(a.clone().requires_grad_() for a in args)
        step = hir.compile(model, args, training=True)
        eager = copy.deepcopy(model)
        weights = torch.randn(step(*args).shape)
        (step(*args) * weights).sum().backward()
        eager_args = tuple(a.detach().clone().requires_grad_() for a in args)
        (eager(*eager_args) * weights).sum().backward()
        for got, expected in zip(args, eager_args):
            torch.testing.assert_close(got.grad, expected.grad)
        for (name, p), q in zip(model.named_parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=name)


class Preprocessed(nn.Module):
    """A classifier that takes uint8 pixels and normalizes them itself (torchvision's transforms in the model)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.register_buffer("keep", torch.tensor([1, 0, 1], dtype=torch.uint8))  # an old-style byte mask
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4, 2)

    def forward(self, img):
        x = (img.float() / 255.0 - self.mean) / self.std
        x = x * (self.keep == 1).view(1, 3, 1, 1) + (img > 128).float() * 0.1
        return self.fc(self.conv(x).mean((2, 3)))


def test_uint8_pixels_compile_and_train() -> None:
    torch.manual_seed(0)
    model = Preprocessed()
    pixels = torch.randint(0, 256, (2, 3, 6, 6), dtype=torch.uint8)
    _check(model, (pixels,), (torch.randint(0, 256, (3, 3, 6, 6), dtype=torch.uint8),))
    step = hir.compile(model, (pixels,), training=True)
    eager = copy.deepcopy(model)
    step(pixels).square().sum().backward()
    eager(pixels).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    _check(_Pool(lambda img: img // 2), (pixels,), (pixels.flip(0),))  # a uint8 result (tests/test_uint8.py)


def test_unet_res_block_with_group_norm_and_resampling() -> None:
    torch.manual_seed(0)
    args = (torch.randn(2, 8, 4, 4), torch.randn(2, 12))
    _check(_randomize_norms(UNetResBlock()), args, (torch.randn(2, 8, 4, 4), torch.randn(2, 12)))


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

BLOCKS = {
    "nanogpt": lambda: (Block(GPTConfig()), (torch.randn(2, 8, 32),)),
    "llama-sdpa": lambda: (
        LlamaDecoderLayer(LlamaConfig(), sdpa=True),
        (torch.randn(2, 8, 32), torch.arange(8).unsqueeze(0).expand(2, 8)),
    ),
    "moe": lambda: (MoE(), (torch.randn(2, 4, 16),)),
    "embedding": lambda: (TinyLM(), (torch.randint(0, 50, (2, 8)),)),
    "in-place": lambda: (InPlace(), (torch.randn(4, 16),)),
    "meta-llama": lambda: (MetaTransformerBlock(), (torch.randn(2, 8, 32),)),
    "patch-embed": lambda: (PatchEmbed(), (torch.randn(2, 3, 16, 16),)),
    "conv-stem": lambda: (ConvStem(), (torch.randn(2, 8, 10),)),
    "resnet": lambda: (_randomize_norms(BasicBlock()), (torch.randn(2, 4, 8, 8),)),
    "unet": lambda: (_randomize_norms(UNetResBlock()), (torch.randn(2, 8, 4, 4), torch.randn(2, 12))),
}


@needs_cuda
@pytest.mark.parametrize("name", BLOCKS)
def test_blocks_on_the_gpu_replayed_as_cuda_graphs(name: str) -> None:
    """The same blocks on a GPU, where calls replay a CUDA graph by default: the indexing kernels capture."""
    torch.manual_seed(0)
    module, inputs = BLOCKS[name]()
    module = module.eval().cuda()
    inputs = tuple(x.cuda() for x in inputs)
    compiled = hir.compile(module, inputs, cuda_graph=True)
    for _ in range(2):  # the capture, then a replay
        with torch.no_grad():
            torch.testing.assert_close(compiled(*inputs), module(*inputs), atol=1e-4, rtol=1e-4)
