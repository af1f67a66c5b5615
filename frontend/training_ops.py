"""
Ops of traced training steps whose backward is one op too: `F.scaled_dot_product_attention` as
`hir::attention` (backward `hir::attention_backward`), `F.layer_norm` as `hir::layer_norm`
(backward `hir::layer_norm_backward`, the input gradient) and `F.rms_norm` as `hir::rms_norm`
(backward `hir::rms_norm_backward`): torch custom ops. Autograd would otherwise record the
device's fused kernels and their device-specific backward ops (flash attention's on a GPU), or
their decompositions: for attention the matmuls and softmax that write the `[L, S]` scores out
and save them; for a bf16 norm a dozen elementwise ops and reductions in f32. The frontend
imports them as `fusion.sdpa` / `fusion.sdpa_backward`, `fusion.layer_norm` /
`fusion.layer_norm_backward`, `fusion.rms_norm` / `fusion.rms_norm_backward`, which the runtime
runs on torch's fused kernels. A norm's weight and bias gradients are what they are, sums over
the rows (`sum(grad * norm(x))`, `sum(grad)`), traced as such. Attention without a mask is
`hir::attention_stats` instead, which also returns the softmax statistics (the logsumexp per
query row) that torch's fused kernel computes with the result: the forward saves both, and
`hir::attention_stats_backward` (`fusion.sdpa_logsumexp`, `fusion.sdpa_backward_stats`) calls
the fused backward kernel on them, without running the attention again.

`FusedTrainingOps` (a torch function mode, active while a training step is traced) routes the
calls it can: attention with self-attention shapes (queries, keys and values of one shape, after
grouped-query key and value heads are repeated for their groups), no dropout, a mask that needs
no gradient; norms of floating-point inputs.
Other calls run as before (attention under the math backend: its decomposition).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from hir.runtime.attention_kernels import (
    attention_gradients,
    attention_gradients_from_statistics,
    attention_with_logsumexp,
    logsumexp_of_scores,
    statistics_dtype,
)
from hir.runtime.norm_grad_kernels import layer_norm_input_gradient, rms_norm_input_gradient


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
    return attention_gradients(grad, q, k, v, attn_mask, is_causal, scale)


@attention_backward.register_fake
def _(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any) -> tuple[torch.Tensor, ...]:
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


@torch.library.custom_op("hir::attention_stats", mutates_args=())
def attention_stats(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Unmasked attention and its softmax statistics (`[..., L]` logsumexp), which its backward reads."""
    out, lse = attention_with_logsumexp(q, k, v, is_causal, scale)
    return out, lse if lse is not None else logsumexp_of_scores(q, k, is_causal, scale)


@attention_stats.register_fake
def _(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any) -> tuple[torch.Tensor, torch.Tensor]:
    return q.new_empty((*q.shape[:-1], v.shape[-1])), q.new_empty(q.shape[:-1], dtype=statistics_dtype(q.dtype))


@torch.library.custom_op("hir::attention_stats_backward", mutates_args=())
def attention_stats_backward(
    grad: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    is_causal: bool,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients of `hir::attention_stats`'s result with respect to q, k and v (no forward again)."""
    return attention_gradients_from_statistics(grad, q, k, v, out, lse, is_causal, scale)


@attention_stats_backward.register_fake
def _(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any) -> tuple[torch.Tensor, ...]:
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


@torch.library.custom_op("hir::layer_norm", mutates_args=())
def layer_norm(
    x: torch.Tensor, normalized_shape: list[int], weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float
) -> torch.Tensor:
    return F.layer_norm(x, normalized_shape, weight, bias, eps)


@torch.library.custom_op("hir::layer_norm_backward", mutates_args=())
def layer_norm_backward(
    grad: torch.Tensor, x: torch.Tensor, normalized_shape: list[int], weight: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """The gradient of `hir::layer_norm` with respect to x (the bias does not enter it)."""
    return layer_norm_input_gradient(grad, x, normalized_shape, weight, eps)


@torch.library.custom_op("hir::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, normalized_shape: list[int], weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    return F.rms_norm(x, normalized_shape, weight, eps)


@torch.library.custom_op("hir::rms_norm_backward", mutates_args=())
def rms_norm_backward(
    grad: torch.Tensor, x: torch.Tensor, normalized_shape: list[int], weight: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """The gradient of `hir::rms_norm` with respect to x."""
    return rms_norm_input_gradient(grad, x, normalized_shape, weight, eps)


def _shaped_as_input(x: torch.Tensor, *args: Any) -> torch.Tensor:
    """A norm's result on fake tensors: the input's shape."""
    return torch.empty_like(x)


def _shaped_as_second(grad: torch.Tensor, x: torch.Tensor, *args: Any) -> torch.Tensor:
    """A norm's input gradient on fake tensors: the input's (second operand's) shape."""
    return torch.empty_like(x)


for _norm in (layer_norm, rms_norm):
    _norm.register_fake(_shaped_as_input)
for _gradient in (layer_norm_backward, rms_norm_backward):
    _gradient.register_fake(_shaped_as_second)


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


class _AttentionWithStatistics(torch.autograd.Function):
    """
    Unmasked attention whose forward saves its result and softmax statistics, so that its
    backward (`hir::attention_stats_backward`, torch's fused backward kernel) does not run the
    forward again.
    """

    @staticmethod
    def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, scale: float) -> Any:  # type: ignore[override]
        return torch.ops.hir.attention_stats(q, k, v, is_causal, scale)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, torch.Tensor]) -> None:
        q, k, v, is_causal, scale = inputs
        out, lse = output
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.mark_non_differentiable(lse)
        ctx.is_causal, ctx.scale = is_causal, scale

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor, _: Any) -> tuple[Any, ...]:  # type: ignore[override]
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = torch.ops.hir.attention_stats_backward(grad, q, k, v, out, lse, ctx.is_causal, ctx.scale)
        return dq, dk, dv, None, None


class _LayerNorm(torch.autograd.Function):
    """`hir::layer_norm`: the input gradient one op, the weight's and the bias's sums over the rows."""

    @staticmethod
    def forward(x: torch.Tensor, shape: list[int], weight: Any, bias: Any, eps: float) -> torch.Tensor:  # type: ignore[override]
        return torch.ops.hir.layer_norm(x, shape, weight, bias, eps)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        x, shape, weight, bias, eps = inputs
        ctx.save_for_backward(x, weight)
        ctx.shape, ctx.eps, ctx.has_bias = shape, eps, bias is not None

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        x, weight = ctx.saved_tensors
        dx = torch.ops.hir.layer_norm_backward(grad, x, ctx.shape, weight, ctx.eps)
        rows = tuple(range(grad.dim() - len(ctx.shape)))
        dw = db = None
        if weight is not None and ctx.needs_input_grad[2]:
            dw = (grad * torch.ops.hir.layer_norm(x, ctx.shape, None, None, ctx.eps)).sum(rows)
        if ctx.has_bias and ctx.needs_input_grad[3]:
            db = grad.sum(rows)
        return dx, None, dw, db, None


class _RmsNorm(torch.autograd.Function):
    """`hir::rms_norm`: the input gradient one op, the weight's a sum over the rows."""

    @staticmethod
    def forward(x: torch.Tensor, shape: list[int], weight: Any, eps: float) -> torch.Tensor:  # type: ignore[override]
        return torch.ops.hir.rms_norm(x, shape, weight, eps)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        x, shape, weight, eps = inputs
        ctx.save_for_backward(x, weight)
        ctx.shape, ctx.eps = shape, eps

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        x, weight = ctx.saved_tensors
        dx = torch.ops.hir.rms_norm_backward(grad, x, ctx.shape, weight, ctx.eps)
        dw = None
        if weight is not None and ctx.needs_input_grad[2]:
            rows = tuple(range(grad.dim() - len(ctx.shape)))
            dw = (grad * torch.ops.hir.rms_norm(x, ctx.shape, None, ctx.eps)).sum(rows)
        return dx, None, dw, None


class FusedTrainingOps(TorchFunctionMode):
    """Routes attention and norm calls to the ops above, where they apply, and `F.grid_sample` to its decomposition."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            call = _arguments(*args, **kwargs)
            if call is not None:
                q, k, v, attn_mask, _, is_causal, scale = call
                if attn_mask is None and q.is_floating_point() and _fused_layout(q, k, v):  # no forward again
                    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
                    return _AttentionWithStatistics.apply(q, k, v, is_causal, scale)[0]
                return _Attention.apply(*call)
        elif func is F.layer_norm:
            call = _layer_norm_arguments(*args, **kwargs)
            if call is not None:
                x, rest = _widened(*call)  # a bf16 input of an f32 norm (autocast): normalized in f32, as eager
                return _LayerNorm.apply(x, *rest).to(call[0].dtype)
        elif func is getattr(F, "rms_norm", None):
            call = _rms_norm_arguments(*args, **kwargs)
            if call is not None:
                x, rest = _widened(*call)
                return _RmsNorm.apply(x, *rest).to(call[0].dtype)
        elif func is F.multilabel_margin_loss and not kwargs.get("size_average") and not kwargs.get("reduce"):
            from hir.frontend.decompositions import multilabel_margin_loss  # its ops, which autograd differentiates

            call = _multilabel_margin_arguments(*args, **kwargs)
            if call is not None:
                return multilabel_margin_loss(*call)[0]
        elif func is F.pad and _replicated(*args, **kwargs):  # replication_pad*d_backward has no decomposition
            x, pad = args[0], list(args[1] if len(args) > 1 else kwargs["pad"])
            op = getattr(torch.ops.aten, f"replication_pad{len(pad) // 2}d").default
            return torch._decomp.decomposition_table[op](x, pad)
        elif func is torch.cdist:
            call = _cdist_arguments(*args, **kwargs)
            if call is not None:  # its backward, `_cdist_backward`, has no decomposition: the norms of the differences
                x1, x2, p = call
                return torch.linalg.vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), ord=p, dim=-1)
        elif func is torch.Tensor.__setitem__ and _masked_rows(*args):
            # `x[mask] = value`: autograd's backward reads `grad[mask]` for the value (a data-dependent
            # shape); as a torch.where, the value's gradient is a masked sum.
            x, mask, value = args
            mask = mask.reshape(*mask.shape, *[1] * (x.dim() - mask.dim()))
            x.copy_(torch.where(mask, value.to(x.dtype), x))
            return None
        elif func is F.grid_sample:
            call = _grid_sample_arguments(*args, **kwargs)
            if call is not None:  # as torch's decomposition, whose ops autograd differentiates
                out = torch._decomp.decomposition_table[torch.ops.aten.grid_sampler_2d.default](*call)
                # Nearest sampling rounds the grid: its gradient is zeros in eager, not none.
                return _ZeroGradient.apply(out, call[1]) if call[2] == 1 and call[1].requires_grad else out
        return func(*args, **kwargs)


def _fused_layout(*tensors: torch.Tensor) -> bool:
    """
    Whether eager runs attention on these operands with a fused kernel (4-D, the head dimension
    contiguous), which saves its result: an in-place update of that result is then autograd's
    error in eager too. Elsewhere eager runs the math, which does not save the result, and
    `y = attention(...); y += x` trains; so does `hir::attention`, which saves q, k and v only.
    On a GPU eager's fused kernels take no f64 (nor do the statistics' kernels here).
    """
    if any(t.device.type == "cuda" and t.dtype == torch.float64 for t in tensors):
        return False
    return all(t.dim() == 4 and t.stride(-1) == 1 for t in tensors)


def _masked_rows(x: Any, key: Any = None, value: Any = None, *rest: Any) -> bool:
    """Whether `x[key] = value` is one boolean mask over x's leading axes and a value per row or a scalar."""
    if rest or not isinstance(key, torch.Tensor) or key.dtype != torch.bool or not isinstance(value, torch.Tensor):
        return False
    if key.dim() == 0 or tuple(key.shape) != tuple(x.shape[: key.dim()]):
        return False
    row = tuple(x.shape[key.dim() :])
    shape = list(value.shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    return len(shape) <= len(row) and all(v in (1, r) for v, r in zip(shape, row[len(row) - len(shape) :]))


class _ZeroGradient(torch.autograd.Function):
    """`out`, with a gradient of zeros for `of` (which `out` does not depend on differentiably)."""

    @staticmethod
    def forward(ctx: Any, out: torch.Tensor, of: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.shape, ctx.dtype = of.shape, of.dtype
        return out.view_as(out)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        return grad, grad.new_zeros(ctx.shape, dtype=ctx.dtype)


def _multilabel_margin_arguments(
    input: torch.Tensor, target: torch.Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean"
) -> tuple[Any, ...] | None:
    """`multilabel_margin_loss_forward`'s arguments (its fused backward has no decomposition), or None."""
    codes = {"none": 0, "mean": 1, "sum": 2}
    if size_average is not None or reduce is not None or reduction not in codes:
        return None
    return input, target, codes[reduction]


def _replicated(input: Any, pad: Any = (), mode: str = "constant", value: Any = None) -> bool:
    """Whether `F.pad` replicates the edges of a batched input (torch's decomposition then spells its padding)."""
    n = len(pad) // 2
    return mode == "replicate" and len(pad) % 2 == 0 and 1 <= n <= 3 and input.dim() in (n + 1, n + 2)


def _cdist_arguments(x1: Any, x2: Any, p: float = 2.0, compute_mode: Any = None) -> tuple[Any, ...] | None:
    """`torch.cdist`'s operands and p, where they are tensors of one batch shape; None where the call stays."""
    if not isinstance(x1, torch.Tensor) or not isinstance(x2, torch.Tensor) or x1.dim() < 2 or x2.dim() < 2:
        return None
    if x1.shape[:-2] != x2.shape[:-2] or x1.shape[-1] != x2.shape[-1] or p <= 0:  # p = 0: no gradient path
        return None  # torch's own error (or its broadcast), from the call as it is
    return x1, x2, float(p)


_GRID_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_GRID_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def _grid_sample_arguments(
    input: torch.Tensor,
    grid: torch.Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> tuple[Any, ...] | None:
    """
    `grid_sampler_2d`'s arguments for a 2-D `F.grid_sample` (a spatial transformer's, an optical
    flow's warp): its fused backward, `grid_sampler_2d_backward`, has no decomposition, so the
    training step traces torch's decomposition of the forward instead. None where the call stays.
    """
    if input.dim() != 4 or mode not in _GRID_MODES or padding_mode not in _GRID_PADDINGS:
        return None  # torch's own error, or a 3-D grid sample, from the call as it is
    return input, grid, _GRID_MODES[mode], _GRID_PADDINGS[padding_mode], bool(align_corners)


def _widened(x: torch.Tensor, shape: list[int], weight: Any, *rest: Any) -> tuple[torch.Tensor, tuple[Any, ...]]:
    """
    A norm's input widened to its weight's dtype where they differ (a linear's bf16 output under
    autocast, before an f32 norm): torch's kernel normalizes it in f32 and rounds the result once,
    and the norm ops here take one dtype.
    """
    if (
        isinstance(weight, torch.Tensor)
        and weight.dtype == torch.float32
        and x.dtype in (torch.bfloat16, torch.float16)
    ):
        x = x.to(weight.dtype)
    return x, (shape, weight, *rest)


def _layer_norm_arguments(
    input: torch.Tensor, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5
) -> tuple[Any, ...] | None:
    if not input.is_floating_point() or not isinstance(normalized_shape, (list, tuple)):
        return None  # torch's own error, from the call as it is
    return input, list(normalized_shape), weight, bias, float(eps)


def _rms_norm_arguments(
    input: torch.Tensor, normalized_shape: Any, weight: Any = None, eps: float | None = None
) -> tuple[Any, ...] | None:
    if not input.is_floating_point() or not isinstance(normalized_shape, (list, tuple)):
        return None  # torch's own error, from the call as it is
    # torch's kernel's default eps is its compute type's (f32's for bf16/f16), not the input's
    default = torch.finfo(torch.float32 if input.dtype in (torch.bfloat16, torch.float16) else input.dtype).eps
    return input, list(normalized_shape), weight, float(default if eps is None else eps)


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
    """
    `hir::attention`'s arguments, or None where the call stays as it is. Grouped-query key and
    value heads are repeated for their groups first, as torch's math does (autograd sums their
    gradients back), so that their attention is the fused op too.
    """
    if enable_gqa and query.dim() >= 3 and key.dim() == query.dim() and key.shape[-3] != query.shape[-3]:
        groups, rest = divmod(query.shape[-3], key.shape[-3])
        if rest or value.shape[-3] != key.shape[-3]:
            return None  # torch's own error, from the call as it is
        key, value = (t.repeat_interleave(groups, dim=-3) for t in (key, value))
    if dropout_p or not (query.shape == key.shape == value.shape) or query.dim() < 2:
        return None
    if attn_mask is not None and (attn_mask.requires_grad or is_causal):
        return None
    return query, key, value, attn_mask, 0.0, is_causal, scale
