"""
The torch kernels of `fusion.sdpa`: torch's `scaled_dot_product_attention`, which picks its fused
kernel (flash or memory-efficient attention on a GPU, a fused CPU kernel) by itself; and of
`fusion.sdpa_backward`: that kernel's own backward, through autograd (the forward runs again for
the softmax statistics the backward reads, as activation checkpointing of attention does; autograd
picks the backward of the kernel it ran). Neither has an `out=` form: a launch into a
preallocated buffer copies the result in.

A training step keeps the statistics instead (`fusion.sdpa_logsumexp`, `fusion.sdpa_backward_stats`):
the forward's fused kernel (`_scaled_dot_product_flash_attention_for_cpu`, on a GPU
`_scaled_dot_product_flash_attention` or `_scaled_dot_product_efficient_attention`) returns
them with the result, and the backward calls the matching `..._backward` aten op on them.
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


# -- the forward's softmax statistics kept for the backward ---------------------------------------


def statistics_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of attention's softmax statistics for tensors of `dtype`, as torch's fused kernels keep them."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def attention_with_logsumexp(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """
    `attention(q, k, v)` without a mask and the softmax statistics (`[..., L]` logsumexp) that
    torch's fused kernel computes with it: the CPU flash kernel; on a GPU flash attention (f16,
    bf16), else memory-efficient attention. None for the statistics where no fused kernel takes
    the tensors (then `attention` as usual).
    """
    batch = tuple(q.shape[:-2])
    q4, k4, v4 = _four_d(q, batch), _four_d(k, batch), _four_d(v, batch)
    out = lse = None
    try:
        if q.device.type == "cpu":
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q4, k4, v4, 0.0, causal, scale=scale)
        elif q.device.type == "cuda":
            if q.dtype in (torch.float16, torch.bfloat16):
                out, lse = torch.ops.aten._scaled_dot_product_flash_attention(q4, k4, v4, 0.0, causal, scale=scale)[:2]
            else:
                out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(
                    q4, k4, v4, None, True, 0.0, causal, scale=scale
                )[:2]
                lse = lse[..., : q.shape[-2]]  # padded to a multiple of 32 queries
    except RuntimeError:  # a shape or dtype the fused kernel refuses
        out = lse = None
    if out is None or lse is None or lse.dtype != statistics_dtype(q.dtype):
        return attention(q, k, v, None, causal, scale), None
    return out.reshape(*batch, q.shape[-2], v.shape[-1]), lse.reshape(*batch, q.shape[-2])


def logsumexp_of_scores(q: torch.Tensor, k: torch.Tensor, causal: bool, scale: float) -> torch.Tensor:
    """The softmax statistics from the scores themselves (where no fused kernel kept them): [..., L]."""
    dtype = statistics_dtype(q.dtype)
    scores = torch.matmul(q.to(dtype), k.to(dtype).transpose(-2, -1)) * scale
    if causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.logsumexp(scores, dim=-1)


_KEPT = "_hir_attention_logsumexp"
"""The attribute of an attention result that holds its kernel's statistics: (lse, the result's version)."""


def keep_logsumexp(out: torch.Tensor, lse: torch.Tensor) -> None:
    setattr(out, _KEPT, (lse, out._version))


def kept_logsumexp(out: torch.Tensor) -> torch.Tensor | None:
    """The statistics the kernel kept with `out`, unless `out` was written since (an in-place op bumps its version)."""
    kept = getattr(out, _KEPT, None)
    if kept is None or kept[1] != out._version:
        return None
    return kept[0]


def sdpa_with_statistics_kernel(op: fusion.ScaledDotProductAttentionOp) -> Callable[..., torch.Tensor]:
    """`f(q, k, v) -> result`, the kernel's statistics kept with the result for a `fusion.sdpa_logsumexp` of it."""
    causal, scale = op.is_causal, op.scale.value.data

    def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out, lse = attention_with_logsumexp(q, k, v, causal, scale)
        if lse is not None:
            keep_logsumexp(out, lse)
        return out

    return kernel


def sdpa_logsumexp_kernel(op: fusion.ScaledDotProductAttentionLogsumexpOp) -> Callable[..., torch.Tensor]:
    """`f(q, k, v, out) -> lse`: the statistics kept with `out` by its kernel, else computed from the scores."""
    causal, scale = op.is_causal, op.scale.value.data

    def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        lse = kept_logsumexp(out)
        if lse is not None and lse.shape == out.shape[:-1]:
            return lse
        # Not from this launch's kernel: the fused kernel again, else the scores written out.
        lse = attention_with_logsumexp(q, k, v, causal, scale)[1]
        return lse if lse is not None else logsumexp_of_scores(q, k, causal, scale)

    return kernel


def attention_gradients_from_statistics(
    grad: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    causal: bool,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """
    dq, dk, dv of `attention(q, k, v)` (no mask) from its result `out` and statistics `lse`, by
    torch's fused backward kernel: no forward again. Where no fused kernel takes the tensors, the
    forward runs again (`attention_gradients`).
    """
    batch = tuple(q.shape[:-2])
    g4, q4, k4, v4, o4 = (_four_d(x, batch) for x in (grad, q, k, v, out))
    l4 = lse.reshape(-1, batch[-1] if batch else 1, lse.shape[-1])
    gradients = None
    try:
        if q.device.type == "cpu":
            gradients = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                g4, q4, k4, v4, o4, l4, 0.0, causal, scale=scale
            )
        elif q.device.type == "cuda":
            gradients = _cuda_gradients(g4, q4, k4, v4, o4, l4, causal, scale)
    except RuntimeError:  # a shape, layout or dtype the fused kernel refuses
        gradients = None
    if gradients is None:
        return attention_gradients(grad, q, k, v, None, causal, scale)
    dq, dk, dv = (g.reshape(x.shape) for g, x in zip(gradients[:3], (q, k, v)))
    return dq, dk, dv


def _cuda_gradients(
    grad: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    causal: bool,
    scale: float,
) -> tuple[torch.Tensor, ...]:
    """Flash attention's backward for f16 and bf16 (as eager's backward), else memory-efficient attention's."""
    length = q.shape[-2]
    # No dropout: no random state; no packed sequences (cumulative lengths undefined, not empty:
    # an empty tensor selects the variable-length kernel).
    none = torch.empty(0, dtype=torch.int64, device=q.device)
    lse = lse.contiguous()
    if q.dtype in (torch.float16, torch.bfloat16):
        try:
            return torch.ops.aten._scaled_dot_product_flash_attention_backward(
                grad, q, k, v, out, lse, None, None, length, k.shape[-2], 0.0, causal, none, none, scale=scale
            )
        except RuntimeError:
            pass
    padded = -length % 32  # the kernel reads the statistics in blocks of 32 queries
    if padded:
        lse = torch.nn.functional.pad(lse, (0, padded))
    return torch.ops.aten._scaled_dot_product_efficient_attention_backward(
        grad, q, k, v, None, out, lse, none, none, 0.0, [True, True, True, False], causal, scale=scale
    )[:3]


class StackedGradients(tuple):
    """
    dq, dk, dv of an attention backward whose launch only slices them apart: a slice of one of
    them is a view of the kernel's own result, not of a stacked copy of the three.
    """

    def __getitem__(self, index: object) -> torch.Tensor:  # type: ignore[override]
        if isinstance(index, tuple) and index and isinstance(index[0], slice):
            first = index[0]
            start, stop, step = first.indices(len(self))
            if step == 1 and stop == start + 1:
                return tuple.__getitem__(self, start).unsqueeze(0)[(slice(None), *index[1:])]
        return torch.stack(tuple(self))[index]  # type: ignore[index]


def sdpa_backward_statistics_gradients(
    op: fusion.ScaledDotProductAttentionStatsBackwardOp,
) -> Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """`f(grad, q, k, v, out, lse) -> (dq, dk, dv)`."""
    causal, scale = op.is_causal, op.scale.value.data
    return lambda grad, q, k, v, out, lse: attention_gradients_from_statistics(grad, q, k, v, out, lse, causal, scale)


def sliced_apart(op: fusion.FusionOp) -> bool:
    """Whether every reader of the stacked gradients slices one of them out (a launch's `fusion.slice`s)."""
    uses = list(op.results[0].uses)
    if not uses:
        return False
    for use in uses:
        reader = use.operation
        if not isinstance(reader, fusion.SliceOp) or reader.parent_block() is not op.parent_block():
            return False
        if reader.results[0].type.get_shape()[0] != 1:  # type: ignore[attr-defined]
            return False
    return True


def sdpa_backward_stacked_kernel(
    op: fusion.ScaledDotProductAttentionBackwardOp | fusion.ScaledDotProductAttentionStatsBackwardOp,
) -> Callable[..., object]:
    """
    `f(grad, q, k, v, ...) -> [3, ...]`: the three stacked, or where the launch only slices them
    apart (`sliced_apart`), the three as the kernel returned them (`StackedGradients`).
    """
    gradients = _gradients_of(op)
    if sliced_apart(op):
        return lambda *operands: StackedGradients(gradients(*operands))
    return lambda *operands: torch.stack(gradients(*operands))


def _gradients_of(
    op: fusion.ScaledDotProductAttentionBackwardOp | fusion.ScaledDotProductAttentionStatsBackwardOp,
) -> Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """`f(operands...) -> (dq, dk, dv)` of either attention backward."""
    if isinstance(op, fusion.ScaledDotProductAttentionStatsBackwardOp):
        return sdpa_backward_statistics_gradients(op)
    return sdpa_backward_gradients(op)


def sdpa_backward_into(
    op: fusion.ScaledDotProductAttentionBackwardOp | fusion.ScaledDotProductAttentionStatsBackwardOp,
) -> Callable[..., object]:
    """`f(destination, grad, q, k, v, ...)`: each gradient copied into its slice of `destination`."""
    gradients = _gradients_of(op)

    def into(destination: torch.Tensor, *operands: torch.Tensor) -> None:
        for slot, gradient in zip(destination, gradients(*operands)):
            slot.copy_(gradient)

    return into


def reads_statistics(op: fusion.ScaledDotProductAttentionOp) -> bool:
    """Whether a `fusion.sdpa_logsumexp` of this unmasked attention's result (same operands and properties) reads it."""
    if op.mask is not None:
        return False
    for use in op.result.uses:
        reader = use.operation
        if (
            isinstance(reader, fusion.ScaledDotProductAttentionLogsumexpOp)
            and reader.attention is op.result
            and (reader.q, reader.k, reader.v) == (op.q, op.k, op.v)
            and reader.is_causal == op.is_causal
            and reader.scale.value.data == op.scale.value.data
        ):
            return True
    return False
