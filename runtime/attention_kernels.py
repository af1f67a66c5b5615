"""
The torch kernel of `fusion.sdpa`: torch's `scaled_dot_product_attention`, which picks its fused
kernel (flash or memory-efficient attention on a GPU, a fused CPU kernel) by itself. It has no
`out=` form: a launch into a preallocated buffer copies the result in.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from hir.dialects import fusion


def sdpa_kernel(op: fusion.ScaledDotProductAttentionOp) -> Callable[..., torch.Tensor]:
    """`f(q, k, v[, mask]) -> result`."""
    causal, scale = op.is_causal, op.scale.value.data

    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)

    return attention


def sdpa_into(op: fusion.ScaledDotProductAttentionOp) -> Callable[..., object]:
    """`f(out, q, k, v[, mask])`: the result copied into `out` (a buffer or a strided view of one)."""
    attention = sdpa_kernel(op)
    return lambda out, *operands: out.copy_(attention(*operands))
