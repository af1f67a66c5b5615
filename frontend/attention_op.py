"""
Attention in traced training steps: `F.scaled_dot_product_attention` as one op, `hir::attention`,
whose backward is one op too, `hir::attention_backward` (torch custom ops). Autograd would
otherwise record the device's fused kernel and its device-specific backward (flash attention's
on a GPU), or, with the math backend, the matmuls and softmax that write the `[L, S]` scores out
and save them for the backward. The frontend imports the two as `fusion.sdpa` and
`fusion.sdpa_backward`, which the runtime runs on torch's fused kernels.

`FusedAttention` (a torch function mode, active while a training step is traced) routes the
calls it can to `hir::attention`: self-attention shapes (queries, keys and values of one shape),
no dropout, no grouped-query heads, a mask that needs no gradient. Other calls run as before
(under the math backend, their decomposition).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


@torch.library.custom_op("hir::attention", mutates_args=())
def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None,
    dropout_p: float,
    is_causal: bool,
    scale: float | None,
) -> torch.Tensor:
    """`F.scaled_dot_product_attention` with aten's arguments (`dropout_p` is always 0 here)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)


@attention.register_fake
def _(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any) -> torch.Tensor:
    return q.new_empty((*q.shape[:-1], v.shape[-1]))


@torch.library.custom_op("hir::attention_backward", mutates_args=())
def attention_backward(
    grad: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None,
    is_causal: bool,
    scale: float | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients of `hir::attention` with respect to q, k and v (the forward run again)."""
    with torch.enable_grad():
        inputs = [x.detach().requires_grad_() for x in (q, k, v)]
        out = F.scaled_dot_product_attention(*inputs, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
        dq, dk, dv = torch.autograd.grad(out, inputs, grad)
    return dq, dk, dv


@attention_backward.register_fake
def _(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any) -> tuple[torch.Tensor, ...]:
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


class _Attention(torch.autograd.Function):
    """`hir::attention` with `hir::attention_backward` as its backward (for autograd and torch.func alike)."""

    @staticmethod
    def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any) -> torch.Tensor:  # type: ignore[override]
        return torch.ops.hir.attention(q, k, v, *args)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        q, k, v, attn_mask, _, is_causal, scale = inputs
        ctx.save_for_backward(q, k, v, attn_mask)
        ctx.is_causal, ctx.scale = is_causal, scale

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        q, k, v, attn_mask = ctx.saved_tensors
        dq, dk, dv = torch.ops.hir.attention_backward(grad, q, k, v, attn_mask, ctx.is_causal, ctx.scale)
        return dq, dk, dv, None, None, None, None


class FusedAttention(TorchFunctionMode):
    """Routes `F.scaled_dot_product_attention` calls to `hir::attention` where its backward op applies."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            call = _arguments(*args, **kwargs)
            if call is not None:
                return _Attention.apply(*call)
        return func(*args, **kwargs)


def _arguments(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> tuple[Any, ...] | None:
    """`hir::attention`'s arguments, or None where the call stays as it is."""
    if dropout_p or enable_gqa or not (query.shape == key.shape == value.shape) or query.dim() < 2:
        return None
    if attn_mask is not None and (attn_mask.requires_grad or is_causal):
        return None
    return query, key, value, attn_mask, 0.0, is_causal, scale
