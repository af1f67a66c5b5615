"""
The torch kernels of `fusion.sdpa`: torch's `scaled_dot_product_attention`, which picks its fused
kernel (flash or memory-efficient attention on a GPU, a fused CPU kernel) by itself; and of
`fusion.sdpa_backward`: that kernel's own backward, through autograd (the forward runs again for
the softmax statistics the backward reads, as activation checkpointing of attention does; autograd
picks the backward of the kernel it ran). Neither has an `out=` form: a launch into a
preallocated buffer copies the result in.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from hir.dialects import fusion


def _four_d(t: torch.Tensor, batch: tuple[int, ...]) -> torch.Tensor:
    """`t` [*batch, X, Y] as [N, heads, X, Y]: torch's fused kernels take 4-D inputs only (else the math path)."""
    heads = batch[-1] if batch else 1
    return t.reshape(-1, heads, t.shape[-2], t.shape[-1])


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    """`F.scaled_dot_product_attention` on operands of any rank >= 2, on its fused kernels."""
    if q.dim() == 4:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)
    # Other ranks (a stream loop's leading axes, or none): the batch axes flattened into one,
    # views where the strides allow, so that the fused kernel runs.
    batch = tuple(q.shape[:-2])
    if mask is not None:
        mask = _four_d(mask.expand(*batch, q.shape[-2], k.shape[-2]), batch)
    out = F.scaled_dot_product_attention(
        _four_d(q, batch),
        _four_d(k, tuple(k.shape[:-2])),
        _four_d(v, tuple(v.shape[:-2])),
        attn_mask=mask,
        is_causal=causal,
        scale=scale,
    )
    return out.reshape(*batch, q.shape[-2], v.shape[-1])


def attention_gradients(
    grad: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dq, dk, dv of `attention` given its result's gradient: the forward again, then its backward."""
    with torch.enable_grad():
        inputs = [x.detach().requires_grad_() for x in (q, k, v)]
        out = attention(*inputs, mask, causal, scale)
    node = out.grad_fn
    if node is not None and _reads_leaves(node, inputs):
        # The fused kernel's backward node called on this thread, as `torch.autograd.grad` would
        # call it from the engine's device thread: the same kernel, without the hand-off to that
        # thread and back (host time the GPU may wait for, in a backward of short kernels). Under
        # no_grad as the engine runs it without create_graph: the gradients record no graph.
        with torch.no_grad():
            dq, dk, dv = node(grad)[:3]
        return dq, dk, dv
    dq, dk, dv = torch.autograd.grad(out, inputs, grad)
    return dq, dk, dv


def _reads_leaves(node: object, leaves: list[torch.Tensor]) -> bool:
    """Whether the autograd node's first three inputs are `leaves` themselves (no view between them and the kernel)."""
    edges = getattr(node, "next_functions", ())
    if len(edges) < 3:
        return False
    for (edge, _), leaf in zip(edges, leaves):
        if getattr(edge, "variable", None) is not leaf:
            return False
    return True


def sdpa_kernel(op: fusion.ScaledDotProductAttentionOp) -> Callable[..., torch.Tensor]:
    """`f(q, k, v[, mask]) -> result`."""
    causal, scale = op.is_causal, op.scale.value.data
    return lambda q, k, v, mask=None: attention(q, k, v, mask, causal, scale)


def sdpa_into(op: fusion.ScaledDotProductAttentionOp) -> Callable[..., object]:
    """`f(out, q, k, v[, mask])`: the result copied into `out` (a buffer or a strided view of one)."""
    attention = sdpa_kernel(op)
    return lambda out, *operands: out.copy_(attention(*operands))


def sdpa_backward_gradients(
    op: fusion.ScaledDotProductAttentionBackwardOp,
) -> Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """`f(grad, q, k, v[, mask]) -> (dq, dk, dv)`."""
    causal, scale = op.is_causal, op.scale.value.data
    return lambda grad, q, k, v, mask=None: attention_gradients(grad, q, k, v, mask, causal, scale)


def sdpa_backward_kernel(op: fusion.ScaledDotProductAttentionBackwardOp) -> Callable[..., torch.Tensor]:
    """`f(grad, q, k, v[, mask]) -> [3, ...]`, the three gradients stacked."""
    gradients = sdpa_backward_gradients(op)
    return lambda *operands: torch.stack(gradients(*operands))


def sdpa_backward_into(op: fusion.ScaledDotProductAttentionBackwardOp) -> Callable[..., object]:
    """`f(out, grad, q, k, v[, mask])`: each gradient copied into its slice of `out`."""
    gradients = sdpa_backward_gradients(op)

    def into(out: torch.Tensor, *operands: torch.Tensor) -> None:
        for slot, gradient in zip(out, gradients(*operands)):
            slot.copy_(gradient)

    return into
