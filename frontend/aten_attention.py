"""
`aten.scaled_dot_product_attention` as one `fusion.sdpa`: the runtime calls torch's fused kernel
on it, so a block with attention runs the kernel eager PyTorch runs (and never writes the [L, S]
scores out, as its decomposition into matmul, softmax and matmul would). In a training step's
graphs (frontend/training_ops.py), `hir::attention` is the same op and `hir::attention_backward`
is one `fusion.sdpa_backward`, whose stacked gradients are sliced apart; `hir::attention_stats`
(no mask) is `fusion.sdpa` and `fusion.sdpa_logsumexp` of its result, and its backward one
`fusion.sdpa_backward_stats` of the result and statistics.
"""

from __future__ import annotations

import math

from torch.fx import Node
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

import hir.frontend.training_ops  # noqa: F401 (registers torch.ops.hir.attention and its backward)
from hir.dialects import fusion
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of
from hir.frontend.types import element_type


def scaled_dot_product_attention(
    e: Emitter,
    node: Node,
    q: SSAValue,
    k: SSAValue,
    v: SSAValue,
    attn_mask: SSAValue | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> SSAValue:
    """`F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale)` -> `fusion.sdpa`."""
    if dropout_p:
        raise e.error(
            f"{node.target}: dropout_p={dropout_p} draws random numbers, which fusion does not "
            "(pass dropout_p=0.0 outside training)"
        )
    if attn_mask is not None and is_causal:
        raise e.error(f"{node.target}: attn_mask and is_causal=True together (torch refuses them too)")
    val = node.meta["val"]
    element = element_type((val[0] if isinstance(val, (tuple, list)) else val).dtype, node)  # hir::attention_stats: 2
    if not is_float(element):
        raise e.error(f"{node.target} needs floating-point tensors, got {element}")
    q, k, v = (e.cast(x, element) for x in (q, k, v))
    if enable_gqa:
        k, v = (_repeat_heads(e, x, shape_of(q)) for x in (k, v))
    shapes = [shape_of(x) for x in (q, k, v)]
    if len({len(s) for s in shapes}) != 1 or len({s[:-2] for s in shapes}) != 1 or len(shapes[0]) < 2:
        raise e.error(
            f"{node.target}: query, key and value must have the same batch and head axes "
            f"(no broadcasting between them), got {', '.join(str(list(s)) for s in shapes)}"
        )
    operands = [q, k, v]
    if attn_mask is not None:
        if not _is_bool(attn_mask):  # a float mask is added to the scores in their dtype
            attn_mask = e.cast(attn_mask, element)
        operands.append(attn_mask)
    if scale is None:
        scale = 1.0 / math.sqrt(shapes[0][-1])  # torch's default
    shape = (*shapes[0][:-1], shapes[2][-1])
    return e.typed(
        lambda t: fusion.ScaledDotProductAttentionOp(q, k, v, attn_mask, is_causal, float(scale), t),
        operands,
        shape,
        element,
    )


def _repeat_heads(e: Emitter, x: SSAValue, query: tuple[int, ...]) -> SSAValue:
    """
    `enable_gqa`: the key's (or value's) heads, each repeated for the query heads of its group, as
    torch does (`repeat_interleave` along the heads axis, the third from last).
    """
    shape = shape_of(x)  # torch refuses, while capturing, fewer than 3 axes and heads that do not divide
    groups = query[-3] // shape[-3]
    if groups == 1:
        return x
    *lead, heads, length, width = shape
    spread = e.broadcast_to(e.unsqueeze(x, [len(shape) - 2]), (*lead, heads, groups, length, width))
    return e.reshape(spread, (*lead, heads * groups, length, width), "the repeat of the key and value heads")


def _is_bool(value: SSAValue) -> bool:
    element = element_of(value)
    return isinstance(element, IntegerType) and element.width.data == 1


def scaled_dot_product_attention_backward(
    e: Emitter,
    node: Node,
    grad: SSAValue,
    q: SSAValue,
    k: SSAValue,
    v: SSAValue,
    attn_mask: SSAValue | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """`hir::attention_backward(grad, q, k, v, ...)` -> `fusion.sdpa_backward`, then dq, dk, dv."""
    element = element_type(node.meta["val"][0].dtype, node)
    grad, q, k, v = (e.cast(x, element) for x in (grad, q, k, v))
    operands = [grad, q, k, v]
    if attn_mask is not None:
        if not _is_bool(attn_mask):
            attn_mask = e.cast(attn_mask, element)
        operands.append(attn_mask)
    shape = shape_of(q)
    if scale is None:
        scale = 1.0 / math.sqrt(shape[-1])
    stacked = e.typed(
        lambda t: fusion.ScaledDotProductAttentionBackwardOp(grad, q, k, v, attn_mask, is_causal, float(scale), t),
        operands,
        (3, *shape),
        element,
    )
    return tuple(_unstacked(e, stacked, j) for j in range(3))  # type: ignore[return-value]


def _unstacked(e: Emitter, stacked: SSAValue, j: int) -> SSAValue:
    """Gradient j of the stacked three: a slice of the leading axis, viewed without it."""
    shape = shape_of(stacked)
    offsets, strides = [j] + [0] * (len(shape) - 1), [1] * len(shape)
    piece = e.typed(
        lambda t: fusion.SliceOp(stacked, offsets, strides, t), [stacked], (1, *shape[1:]), element_of(stacked)
    )
    return e.reshape(piece, shape[1:], "a gradient of the attention's backward")


def attention_with_statistics(
    e: Emitter, node: Node, q: SSAValue, k: SSAValue, v: SSAValue, is_causal: bool, scale: float
) -> tuple[SSAValue, SSAValue]:
    """`hir::attention_stats(q, k, v, ...)` -> `fusion.sdpa` and the `fusion.sdpa_logsumexp` of its result."""
    out = scaled_dot_product_attention(e, node, q, k, v, None, 0.0, is_causal, scale)
    return out, logsumexp_of(e, node, q, k, v, out, is_causal, scale)


def logsumexp_of(
    e: Emitter, node: Node, q: SSAValue, k: SSAValue, v: SSAValue, out: SSAValue, is_causal: bool, scale: float
) -> SSAValue:
    """The `fusion.sdpa_logsumexp` of the attention result `out` (`hir::attention_stats`'s second result)."""
    element = element_of(out)
    q, k, v = (e.cast(x, element) for x in (q, k, v))
    statistics = element_type(node.meta["val"][1].dtype, node)
    return e.typed(
        lambda t: fusion.ScaledDotProductAttentionLogsumexpOp(q, k, v, out, is_causal, float(scale), t),
        [q, k, v, out],
        shape_of(out)[:-1],
        statistics,
    )


def attention_backward_with_statistics(
    e: Emitter,
    node: Node,
    grad: SSAValue,
    q: SSAValue,
    k: SSAValue,
    v: SSAValue,
    out: SSAValue,
    lse: SSAValue,
    is_causal: bool,
    scale: float,
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """`hir::attention_stats_backward(grad, q, k, v, out, lse, ...)` -> `fusion.sdpa_backward_stats`, dq, dk, dv."""
    element = element_type(node.meta["val"][0].dtype, node)
    grad, q, k, v, out = (e.cast(x, element) for x in (grad, q, k, v, out))
    stacked = e.typed(
        lambda t: fusion.ScaledDotProductAttentionStatsBackwardOp(grad, q, k, v, out, lse, is_causal, float(scale), t),
        [grad, q, k, v, out, lse],
        (3, *shape_of(q)),
        element,
    )
    return tuple(_unstacked(e, stacked, j) for j in range(3))  # type: ignore[return-value]
