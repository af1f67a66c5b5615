"""
The core-ATen decompositions `import_torch` runs on the exported program: what the ATen table
does not map is spelled by torch in ops it does (`einsum` as `bmm` and views, `masked_fill` as
`where`, in-place ops in their functional form). The ops the table maps stay whole (it lowers
them better: `linear`, `layer_norm`, `softmax`, `gelu`, attention).

torch >= 2.6 has `torch.export.default_decompositions()`; older versions the table of
`torch._decomp.core_aten_decompositions()`. A program that the decompositions cannot run on
is imported as exported: the table then names the op it lacks at the user's line.
"""

from __future__ import annotations

import math
import operator
import re
import struct
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch._decomp
from torch.export import ExportedProgram

from hir.frontend.aten_table import ATEN_TABLE, IGNORED
from hir.frontend.cia_ops import cia_ops_collected_once, registered_ops
from hir.frontend.cia_override import cia_override_reused
from hir.frontend.older_torch import FALLBACKS, fallback_to, lstm_hidden_states_kept, scatter_at_indices


def decomposition_table() -> Any:
    """
    torch's core-ATen decompositions without the ops ATEN_TABLE maps (a dict or torch's table
    type), built once per registered op set: the same table, entry by entry, lets
    `cia_override_reused` reuse torch's override of the CIA ops. Callers copy it before changing it
    (`run_decompositions` does).
    """
    key = registered_ops()
    if key not in _TABLES:
        _TABLES.clear()
        with cia_ops_collected_once():  # torch's table collects the CIA ops again at its first lookup
            _TABLES[key] = _decomposition_table()
    return _TABLES[key]


_TABLES: dict[tuple[Any, ...], Any] = {}


def _decomposition_table() -> Any:
    default = getattr(torch.export, "default_decompositions", None)
    if default is not None:
        table = default()
    else:  # torch < 2.6
        from torch._decomp import core_aten_decompositions

        table = dict(core_aten_decompositions())
    for op in ATEN_TABLE:
        if op in table:
            table.pop(op)
    for op in EXTRA:
        if op in torch._decomp.decomposition_table and op not in ATEN_TABLE:
            table[op] = torch._decomp.decomposition_table[op]
    for op, own in FALLBACKS.items():  # where this torch has none of its own, or its declines
        table[op] = fallback_to(own, table[op] if op in table else None)  # torch's table type has no .get
    table.update(OWN)
    return table


aten = torch.ops.aten
EXTRA = (
    aten.upsample_nearest2d.vec,
    aten.upsample_nearest2d.default,
    aten.upsample_bilinear2d.vec,
    aten.upsample_bilinear2d.default,
    aten._adaptive_avg_pool2d.default,
    aten.adaptive_max_pool2d.default,
    aten.max_pool2d_with_indices_backward.default,
    aten.grid_sampler_2d.default,
    aten._native_batch_norm_legit.no_stats,
    aten._native_batch_norm_legit_functional.default,
    aten.addmv.default,
    aten.reflection_pad1d_backward.default,
    aten.reflection_pad2d_backward.default,
    aten.reflection_pad3d_backward.default,
)
"""
Ops torch's core set keeps whole (vision ops, instance norm's statistics of the batch, a training
batch norm with the update of its running statistics, a reflection pad's backward, `addmv`) whose
torch decompositions are ops the table maps.
"""


def _max_pool3d_backward(grad: torch.Tensor, x: torch.Tensor, *args: Any) -> torch.Tensor:
    """`max_pool3d_with_indices_backward(grad, x, kernel, stride, padding, dilation, ceil_mode, indices)`."""
    return scatter_at_indices(grad, x, args[-1], 3)


def _adaptive_max_pool2d_backward(grad: torch.Tensor, x: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    return scatter_at_indices(grad, x, indices, 2)


def _window_means(extent: int, out: int, like: torch.Tensor) -> torch.Tensor:
    """`[out, extent]`: row i averages adaptive pooling's window i, `[floor(i * n / out), ceil((i + 1) * n / out))`."""
    i = torch.arange(out, device=like.device)
    start, end = (i * extent) // out, ((i + 1) * extent + out - 1) // out
    j = torch.arange(extent, device=like.device)
    inside = (j[None, :] >= start[:, None]) & (j[None, :] < end[:, None])
    return inside.to(like.dtype) / (end - start).to(like.dtype)[:, None]


def _adaptive_avg_pool2d_backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """
    Adaptive average pooling is separable, `M_h @ x @ M_w^T` with each row of `M` one window's
    mean: its input gradient is `M_h^T @ grad @ M_w` (`F.interpolate(mode="area")`'s backward too).
    """
    rows = _window_means(x.shape[-2], grad.shape[-2], grad)
    columns = _window_means(x.shape[-1], grad.shape[-1], grad)
    return rows.t() @ grad @ columns


def multilabel_margin_loss(
    x: torch.Tensor, target: torch.Tensor, reduction: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """
    `multilabel_margin_loss_forward`, as torch's kernel computes it: each row's targets are its
    target's entries up to the first -1; the loss sums `max(0, 1 - (x[y] - x[c]))` over its targets
    y and the classes c that are none of them, over the number of classes. (torch's own
    decomposition of the op gives other numbers than its kernel: it is replaced here.) Returns
    (the loss, the mask of targets in x's dtype), as the op does.
    """
    one_row = x.dim() == 1
    if one_row:
        x, target = x[None], target[None]
    classes = x.shape[-1]
    columns = torch.arange(classes, device=x.device)
    end = torch.where(target == -1, columns, classes).amin(-1, keepdim=True)  # the first -1
    listed = columns < end  # [N, J]: the entries that are targets
    y = torch.where(listed, target, 0)
    is_target = ((y[:, :, None] == columns) & listed[:, :, None]).any(1)  # [N, C]
    margins = (1 - torch.gather(x, 1, y)[:, :, None] + x[:, None, :]).clamp_min(0)  # [N, J, C]
    margins = margins * (listed[:, :, None] & ~is_target[:, None, :])
    loss = margins.sum((1, 2)) / classes
    if reduction == 1:
        loss = loss.mean()
    elif reduction == 2:
        loss = loss.sum()
    elif one_row:
        loss = loss[0]
    mask = is_target.to(x.dtype)
    return loss, mask[0] if one_row else mask


def _weight_norm_backward(
    grad: torch.Tensor, v: torch.Tensor, g: torch.Tensor, norms: torch.Tensor, dim: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """
    `_weight_norm_interface_backward`: the gradients of `w = g * v / ||v||` (the norm over every
    axis but `dim`, `norms` shaped as `g`) for v and g, as torch's kernel computes them: with
    `s = sum(grad * v)` over those axes, `grad_g = s / ||v||` and
    `grad_v = g / ||v|| * (grad - v * s / ||v||^2)`.
    """
    axes = [d for d in range(v.dim()) if d != dim % v.dim()]
    shape = [n if d == dim % v.dim() else 1 for d, n in enumerate(v.shape)]
    norm, gain = norms.reshape(shape), g.reshape(shape)
    sums = torch.sum(grad * v, axes, keepdim=True)
    grad_v = gain / norm * (grad - v * (sums / (norm * norm)))
    return grad_v, (sums / norm).reshape(g.shape)


def _attention_with_dropout(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Any:
    """
    Attention with dropout (a training-mode `dropout_p`) as torch's math attention spells it:
    scores, mask, softmax, dropout of the probabilities, times v. Without dropout it stays the one
    `fusion.sdpa` (NotImplemented: not decomposed).
    """
    if not dropout_p:
        return NotImplemented
    if enable_gqa:
        k, v = (t.repeat_interleave(q.shape[-3] // t.shape[-3], dim=-3) for t in (k, v))
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        visible = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(visible.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    probabilities = torch.dropout(torch.softmax(scores, dim=-1), dropout_p, True)
    return probabilities @ v


def _logsumexp(x: torch.Tensor, dim: Any, keepdim: bool = False) -> torch.Tensor:
    """
    `torch.logsumexp` as its kernel computes it, in x's dtype (torch's decomposition computes a
    bf16 or f16 one in f32, which rounds otherwise than eager): `log(sum(exp(x - m))) + m` with
    `m` the max, 0 where it is infinite.
    """
    if not x.is_floating_point():  # an integer tensor's is of the default float dtype, as torch's
        x = x.to(torch.get_default_dtype())
    dims = [dim] if isinstance(dim, int) else list(dim)
    if x.numel() == 0:
        return torch.sum(torch.exp(x), dims, keepdim).log()
    maxes = torch.amax(x, dims, keepdim=True)
    maxes = torch.masked_fill(maxes, maxes.abs() == math.inf, 0)
    squeezed = maxes if keepdim else torch.squeeze(maxes, dims)
    return torch.sum(torch.exp(x - maxes), dims, keepdim).log().add(squeezed)


def _pdist(x: torch.Tensor, p: float = 2.0) -> torch.Tensor:
    """`F.pdist`: the p-norm distance of each pair of rows `i < j`, in torch's order (row-major upper triangle)."""
    first, second = torch.triu_indices(x.shape[0], x.shape[0], 1, device=x.device)
    return torch.linalg.vector_norm(x[first] - x[second], ord=p, dim=-1)


def _bf16(value: float) -> float:
    """
    `value` rounded to bfloat16 (to nearest, ties to even) through float32, in Python: this runs
    inside torch's trace of the decomposition, where a tensor made to round it would be traced.
    """
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _batch_norm_of_the_batch(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """
    `_native_batch_norm_legit.no_stats` (instance norm; a batch norm without running statistics)
    of a bf16 input as torch's CPU kernel rounds it: the mean and the sum of squares in f32, each
    stored in the parameters' dtype (bf16 unless a weight or bias is f32); the variance that sum
    over the count, both bf16 (c10's `BFloat16 / int64_t`); 1/std in f32, stored likewise; then
    `x * a + b` in f32 with `a = w / std`, `b = bias - mean * a`, rounded once. torch's
    decomposition normalizes `(x - mean) / std` with the f32 statistics: 1 bf16 ulp off in about
    one element of ten. Other dtypes take torch's decomposition.
    """
    if x.dtype != torch.bfloat16:
        return _TORCH_NO_STATS(x, weight, bias, training, momentum, eps)
    held = torch.float32 if any(t is not None and t.dtype != x.dtype for t in (weight, bias)) else x.dtype
    dims = [0, *range(2, x.dim())]
    count = x.numel() // x.shape[1]
    per_channel = (1, -1) + (1,) * (x.dim() - 2)
    wide = x.float()
    mean = wide.sum(dims) / count
    centered = wide - mean.view(per_channel)
    mean, squares = mean.to(held), (centered * centered).sum(dims).to(held)
    variance = (squares.float() / _bf16(float(count))).to(held) if held == torch.bfloat16 else squares / count
    invstd = (1 / torch.sqrt(variance.float() + eps)).to(held)
    scale = invstd.float() if weight is None else invstd.float() * weight.float()
    shift = -(mean.float() * scale) if bias is None else bias.float() - mean.float() * scale
    out = wide * scale.view(per_channel) + shift.view(per_channel)
    return out.to(x.dtype), mean.to(x.dtype), invstd.to(x.dtype)


_TORCH_NO_STATS = torch._decomp.decomposition_table[aten._native_batch_norm_legit.no_stats]


def _f32(value: float) -> float:
    """`value` rounded to float32, in Python (as `_bf16`: a tensor made to round it would be traced)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _antialiased_weights(
    extent: int, out: int, align_corners: bool, scale: float | None, cubic: bool, dtype: torch.dtype, like: torch.Tensor
) -> torch.Tensor:
    """
    `[out, extent]`: row i weighs the inputs of output i along one axis as torch's antialiased
    kernel (`_compute_weights_aa`) does: the filter (Keys' cubic with a = -0.5, or the triangle)
    stretched by the scale where it downsamples, over the window `[xmin, xmax)` around the
    center, normalized to sum to 1; computed in `dtype` with the kernel's float and double steps.
    """
    round_ = _f32 if dtype != torch.float64 else float
    if align_corners:
        ratio = round_((extent - 1) / (out - 1)) if out > 1 else 0.0
    else:
        ratio = round_(1.0 / scale) if scale is not None and scale > 0 else round_(extent / out)
    size = 4 if cubic else 2
    support = round_(size * 0.5 * ratio) if ratio >= 1.0 else size * 0.5
    invscale = round_(1.0 / ratio) if ratio >= 1.0 else 1.0
    device = like.device
    center = (ratio * (torch.arange(out, dtype=torch.float64, device=device) + 0.5)).to(dtype)
    xmin = ((center - support).double() + 0.5).trunc().clamp_min(0)
    xmax = ((center + support).double() + 0.5).trunc().clamp_max(extent)
    j = torch.arange(extent, dtype=torch.float64, device=device)
    t = (((j.to(dtype)[None, :] - center[:, None]).double() + 0.5) * invscale).to(dtype).abs()
    if cubic:
        a = -0.5
        near = ((a + 2) * t - (a + 3)) * t * t + 1
        far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
        weights = torch.where(t < 1, near, torch.where(t < 2, far, 0.0))
    else:
        weights = torch.where(t < 1, 1 - t, 0.0)
    weights = torch.where((j[None, :] >= xmin[:, None]) & (j[None, :] < xmax[:, None]), weights, 0.0)
    total = weights.sum(-1, keepdim=True)
    return torch.where(total != 0, weights / total, weights)


def _upsample_aa(cubic: bool) -> Any:
    """
    `F.interpolate(mode="bilinear" | "bicubic", antialias=True)` (timm's position embeddings,
    torchvision's tensor `Resize`): separable, `W_h @ x @ W_w^T` with each axis's weights above.
    """

    def decomposition(
        x: torch.Tensor,
        output_size: list[int],
        align_corners: bool,
        scales_h: float | None = None,
        scales_w: float | None = None,
    ) -> torch.Tensor:
        dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        rows = _antialiased_weights(x.shape[-2], output_size[0], align_corners, scales_h, cubic, dtype, x)
        columns = _antialiased_weights(x.shape[-1], output_size[1], align_corners, scales_w, cubic, dtype, x)
        return (rows @ x.to(dtype) @ columns.t()).to(x.dtype)

    return decomposition


def _upsample_aa_backward(cubic: bool) -> Any:
    """The input gradient of `_upsample_aa`'s product: `W_h^T @ grad @ W_w`."""

    def decomposition(
        grad: torch.Tensor,
        output_size: list[int],
        input_size: list[int],
        align_corners: bool,
        scales_h: float | None = None,
        scales_w: float | None = None,
    ) -> torch.Tensor:
        dtype = torch.float64 if grad.dtype == torch.float64 else torch.float32
        rows = _antialiased_weights(input_size[-2], output_size[0], align_corners, scales_h, cubic, dtype, grad)
        columns = _antialiased_weights(input_size[-1], output_size[1], align_corners, scales_w, cubic, dtype, grad)
        return (rows.t() @ grad.to(dtype) @ columns).to(grad.dtype)

    return decomposition


def _checked_positions(indices: torch.Tensor, extent: int) -> torch.Tensor:
    """
    `indices`, with an entry out of `[0, extent)` raising at run time as eager raises on it: a
    gather of zeros at the entries (torch's gather raises on them) added to them, one pass over the
    index. (torch's decompositions assert the range with `_assert_async`, a check that computes
    nothing the program keeps, or not at all.)
    """
    zeros = torch.zeros(extent, dtype=indices.dtype, device=indices.device)
    return indices + torch.gather(zeros, 0, indices.reshape(-1)).reshape(indices.shape)


def _one_hot(x: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    """`F.one_hot(x, n)`: a class out of `[0, n)` raises at run time as eager does (torch's check is dropped)."""
    if num_classes == -1:  # the count from x's largest value: torch's own (its `.item()` is the located refusal)
        return torch._decomp.decompositions.one_hot(x, num_classes)
    classes = torch.arange(num_classes, dtype=x.dtype, device=x.device)
    return (_checked_positions(x, num_classes).unsqueeze(-1) == classes).to(torch.int64)


@contextmanager
def checked_one_hot() -> Iterator[None]:
    """
    While a training step is traced: `F.one_hot` is `_one_hot`. AOT autograd decomposes a
    composite-implicit op by its Python kernel before the decomposition table is consulted, and
    torch's kernel checks the classes' range with `_assert_async` only.
    """
    op, key = aten.one_hot.default, torch._C.DispatchKey.CompositeImplicitAutograd
    original = op.py_kernels.get(key)
    op.py_kernels[key] = _one_hot
    op._dispatch_cache.clear()
    try:
        yield
    finally:
        if original is None:
            del op.py_kernels[key]
        else:
            op.py_kernels[key] = original
        op._dispatch_cache.clear()


def _index_copy(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """
    `x.index_copy(dim, index, source)`: an index out of `[0, n)` raises at run time as eager does
    (torch's decomposition is an `index_put`, which counts a negative one from the end).
    """
    own = torch._decomp.decomposition_table[aten.index_copy.default]
    if x.dim() == 0 or index.numel() == 0:
        return own(x, dim, index, source)
    return own(x, dim, _checked_positions(index, x.shape[dim]), source)


def _index_fill(op: Any) -> Any:
    """
    `x.index_fill(dim, index, value)`: torch's decomposition, an `index_copy` of the value, with a
    negative index counted from the end first (eager's `index_fill` takes one, `index_copy` raises).
    """
    own = torch._decomp.decomposition_table[op]

    def decomposition(x: torch.Tensor, dim: int, index: torch.Tensor, value: Any) -> torch.Tensor:
        extent = x.shape[dim] if x.dim() else 1
        return own(x, dim, torch.where(index < 0, index + extent, index), value)

    return decomposition


def _max_unpool(op: Any, spatial: int) -> Any:
    """
    `max_unpool1d/2d/3d`: an index out of its plane (`[0, prod(output_size))`) raises at run time
    as eager does; torch's decomposition adds the plane's offset and writes it into another plane
    (or wraps a negative index), returning a result.
    """
    own = torch._decomp.decomposition_table[op]

    def decomposition(x: torch.Tensor, indices: torch.Tensor, output_size: Any, *rest: Any) -> torch.Tensor:
        extent = math.prod(output_size[-spatial:])
        if x.numel() == 0 or extent == 0:
            return own(x, indices, output_size, *rest)
        return own(x, _checked_positions(indices, extent), output_size, *rest)

    return decomposition


def _f16(value: float) -> float:
    """`value` rounded to float16 (to nearest, ties to even), in Python (as `_bf16`)."""
    return struct.unpack("<e", struct.pack("<e", value))[0]


def _logit(x: torch.Tensor, eps: float | None = None) -> torch.Tensor:
    """
    `torch.logit(x, eps)` of bf16 or f16 as torch's kernel computes it: the bounds `eps` and
    `1 - eps` rounded to the dtype, and `x / (1 - x)` in the dtype, each op rounded, before the
    log (torch's decomposition computes it all in f32: 2x off eager's near 0.5, and `logit(1.0,
    1e-6)` finite where bf16's bound is 1 and eager's inf). Other dtypes: torch's decomposition.
    """
    if x.dtype not in (torch.bfloat16, torch.float16):
        return torch._decomp.decomposition_table[aten.logit.default](x, eps)
    if eps is not None:
        rounded = _bf16 if x.dtype == torch.bfloat16 else _f16
        low = rounded(float(eps))
        x = torch.clamp(x, low, rounded(1.0 - low))
    return torch.log(x / (1 - x))


def _prims_scalar_tensor(value: Any, *, dtype: torch.dtype | None = None, device: Any = None) -> torch.Tensor:
    """`prims.scalar_tensor`, which torch's decompositions make (`xlogy(x, 2.0)`'s): the ATen op of that name."""
    return torch.scalar_tensor(value, dtype=dtype, device=device)


OWN = {
    torch.ops.prims.scalar_tensor.default: _prims_scalar_tensor,
    aten.logsumexp.default: _logsumexp,
    aten._pdist_forward.default: _pdist,
    aten.scaled_dot_product_attention.default: _attention_with_dropout,
    aten.max_pool3d_with_indices_backward.default: _max_pool3d_backward,
    aten.adaptive_max_pool2d_backward.default: _adaptive_max_pool2d_backward,
    aten._weight_norm_interface_backward.default: _weight_norm_backward,
    aten._adaptive_avg_pool2d_backward.default: _adaptive_avg_pool2d_backward,
    aten.multilabel_margin_loss_forward.default: multilabel_margin_loss,
    aten._native_batch_norm_legit.no_stats: _batch_norm_of_the_batch,
    aten._upsample_bilinear2d_aa.default: _upsample_aa(cubic=False),
    aten._upsample_bicubic2d_aa.default: _upsample_aa(cubic=True),
    aten._upsample_bilinear2d_aa_backward.default: _upsample_aa_backward(cubic=False),
    aten._upsample_bicubic2d_aa_backward.default: _upsample_aa_backward(cubic=True),
    aten.one_hot.default: _one_hot,
    aten.index_copy.default: _index_copy,
    aten.index_fill.int_Scalar: _index_fill(aten.index_fill.int_Scalar),
    aten.index_fill.int_Tensor: _index_fill(aten.index_fill.int_Tensor),
    aten.logit.default: _logit,
    aten.max_unpool2d.default: _max_unpool(aten.max_unpool2d.default, 2),
    aten.max_unpool3d.default: _max_unpool(aten.max_unpool3d.default, 3),
}
"""
Decompositions of ops torch has none (or a wrong one: `multilabel_margin_loss_forward`'s; one that
rounds otherwise than the kernel: `logsumexp`'s, a bf16 instance norm's) for, into
ops the table maps: max and adaptive average poolings' backwards, weight norm's
(`nn.utils.parametrizations.weight_norm`: its forward is torch's decomposition), `F.pdist`,
antialiased bilinear and bicubic resizing, and `F.one_hot` and `max_unpool` with their indices'
range checked at run time.
"""


def decompose(program: ExportedProgram) -> ExportedProgram:
    """The program in ops the table maps; as it is when it has only those (decomposing traces it again)."""
    if all(_mapped(node) for node in program.graph.nodes):
        return program
    nested = _nested_stack_traces(program.graph_module)
    try:
        with warnings.catch_warnings(), lstm_hidden_states_kept(), cia_ops_collected_once(), cia_override_reused():
            warnings.simplefilter("ignore")  # torch's deprecation notes about its own pytree types
            decomposed = program.run_decompositions(decomposition_table())
    except Exception:  # an op torch cannot decompose here: the table reports what it lacks
        return program
    if nested:
        for node in decomposed.graph.nodes:
            _restore_stack_trace(node, nested)
    return decomposed


_GENERATED_LINE = re.compile(r'^File "<eval_with_key>\.\d+", line \d+, in \w+\n\s*((\w+) = .*)$', re.M)


def _nested_stack_traces(module: torch.fx.GraphModule) -> dict[str, str | None]:
    """
    The stack traces of the nodes of a program's nested graphs (an autocast region's body,
    `wrap_with_autocast`), by their line of the graph's generated code (None where two nodes
    have the same line and other traces).
    """
    found: dict[str, str | None] = {}
    for _, sub in module.named_modules():
        if sub is module or not isinstance(sub, torch.fx.GraphModule):
            continue
        lines = {line.strip().split(" = ", 1)[0]: line.strip() for line in sub.code.splitlines() if " = " in line}
        for node in sub.graph.nodes:
            trace, line = node.meta.get("stack_trace"), lines.get(node.name)
            if trace and line:
                found[line] = trace if found.get(line, trace) == trace else None
    return found


def _restore_stack_trace(node: torch.fx.Node, nested: dict[str, str | None]) -> None:
    """
    A decomposed node of a nested graph's op: torch's retrace records the line of the graph's
    generated code (`<eval_with_key>.N`, the region's body inlined) as its stack trace; the op's
    own, with the user's line, is the nested node's.
    """
    match = _GENERATED_LINE.match(node.meta.get("stack_trace") or "")
    if match is not None and (trace := nested.get(match.group(1).strip())) is not None:
        node.meta["stack_trace"] = trace


def _mapped(node: torch.fx.Node) -> bool:
    if node.target == aten.scaled_dot_product_attention.default:  # with dropout: its math (above)
        return not (node.kwargs.get("dropout_p") or (node.args[4] if len(node.args) > 4 else 0.0))
    return (
        node.op != "call_function"
        or node.target in ATEN_TABLE
        or node.target in IGNORED
        or (node.target is operator.getitem)
    )
