"""
`aten.convolution` (nn.Conv1d / Conv2d / Conv3d, F.conv*d) spelled as a matmul of the weight
with the input's patches, exactly: `out[b, o, p] = sum_{c, k} w[o, c, k] * x[b, c, p * stride +
k * dilation] + bias[o]`.

The patches are `[B, C, K, L]` (K the kernel's positions, L the output's): a reshape and a
permute of the input when the kernel tiles it (stride = kernel, no padding or dilation: a ViT's
patch embedding), else one strided `fusion.slice` of the zero-padded input per kernel position
(a Whisper or Mamba conv1d, kernel 3 or 4), stacked. One group is a `fusion.linear` of the
patches as `[B, L, C * K]` (the bias inside, as torch rounds once); groups split the channels:
the weight as `[G, O/G, C/G * K]` times the patches as `[B, G, C/G * K, L]` is one batched
`fusion.matmul`.

A transposed convolution (nn.ConvTranspose1d/2d/3d, a UNet decoder's or a DCGAN generator's
upsampling) is the input gradient of the convolution it transposes: the weight's transpose times
the input, `[B, G, O/G * K, L]`, folded onto the output (`fold`); its gradients are those of the
convolution with the roles of input and output swapped: the input's is a convolution of the
output's gradient, the weight's the input times the output gradient's patches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, TensorType
from xdsl.ir import Attribute, SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, concat, float_only, out_element
from hir.frontend.emitter import Emitter, element_of, shape_of


def _convolution(
    e: Emitter,
    node: Node,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> SSAValue:
    element = out_element(node)
    out_shape = tuple(node.meta["val"].shape)
    if transposed:
        return _transposed(e, node, x, w, bias, stride, padding, dilation, groups, out_shape, element)
    geometry = _geometry(e, x, w, element, stride, padding, dilation)
    x, w, batch, channels, out_channels, kernel, _, stride, padding, dilation = geometry
    out_spatial = list(out_shape[2:])
    length = math.prod(out_spatial)
    positions = math.prod(kernel)
    patches, _ = input_patches(e, x, kernel, out_spatial, stride, padding, dilation)
    per_group = channels // groups * positions
    if groups == 1:  # a linear: its bias is added before the one rounding to the result's dtype, as torch's conv does
        cols = e.permute(e.reshape(patches, (batch, per_group, length), f"{node.target}"), [0, 2, 1])
        weight = e.reshape(w, (out_channels, per_group), f"{node.target}")
        bias = None if bias is None else e.cast(bias, element)
        operands = [cols, weight] if bias is None else [cols, weight, bias]
        y = e.typed(lambda t: fusion.LinearOp(cols, weight, bias, t), operands, (batch, length, out_channels), element)
        return e.reshape(e.permute(y, [0, 2, 1]), out_shape, f"{node.target}")
    patches = e.reshape(patches, (batch, groups, per_group, length), f"{node.target}")
    weight = e.reshape(w, (groups, out_channels // groups, per_group), f"{node.target}")
    if bias is not None and element in (BFloat16Type(), Float16Type()):
        # torch's kernel adds the bias before its one rounding to bf16 or f16 (a depthwise conv's
        # add after the product rounds twice, an ulp off): the bias is one more column of the
        # weight, times a row of ones under the patches, inside the GEMM's f32 accumulation.
        bias = e.reshape(e.cast(bias, element), (groups, out_channels // groups, 1), f"{node.target}")
        weight = concat(e, [weight, bias], 2)
        ones = e.broadcast_to(e.constant(1, element), (batch, groups, 1, length))
        patches, bias = concat(e, [patches, ones], 2), None
    shape = (batch, groups, out_channels // groups, length)
    y = e.typed(lambda t: fusion.MatmulOp(weight, patches, t), [weight, patches], shape, element)
    y = e.reshape(y, out_shape, f"{node.target}")
    return _add_bias(e, node, y, bias, element)


def _add_bias(e: Emitter, node: Node, y: SSAValue, bias: SSAValue | None, element: Attribute) -> SSAValue:
    """`y + bias` per channel (axis 1)."""
    if bias is None:
        return y
    shape = shape_of(y)
    bias = e.reshape(e.cast(bias, element), (shape[1], *([1] * (len(shape) - 2))), f"{node.target}")
    return e.binary(fusion.AddOp, y, bias, element)


def _transposed(
    e: Emitter,
    node: Node,
    x: SSAValue,
    w: SSAValue,
    bias: SSAValue | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    out_shape: tuple[int, ...],
    element: Attribute,
) -> SSAValue:
    """
    `conv_transpose(x, w)`, w `[C, O/G, *k]`: the input gradient of the convolution of an `out_shape`
    input by w (C its output channels) at the gradient x: `w^T @ x` per group, folded onto the output.
    """
    x, w = e.cast(x, element), e.cast(w, element)
    spatial = list(shape_of(x)[2:])
    kernel = list(shape_of(w)[2:])
    n = len(spatial)
    stride, padding, dilation = (per_axis(v, n) for v in (stride, padding, dilation))
    cols = _weight_times(e, node, w, x, groups, math.prod(kernel), element)
    y = fold(e, cols, out_shape, kernel, spatial, stride, padding, dilation)
    return _add_bias(e, node, y, bias, element)


def _weight_times(
    e: Emitter, node: Node, w: SSAValue, g: SSAValue, groups: int, positions: int, element: Attribute
) -> SSAValue:
    """
    The weight's transpose times `g` per group: w `[O, C/G, *k]`, g `[B, O, *L]` -> `[B, G, C/G * K,
    L]`, the patch entries that `fold` sums back onto a convolution's input.
    """
    out_channels, per_in = shape_of(w)[:2]
    batch = shape_of(g)[0]
    length = math.prod(shape_of(g)[2:])
    per_out, per_group = out_channels // groups, per_in * positions
    what = f"{node.target}"
    g = e.reshape(g, (batch, groups, per_out, length), what)
    wt = e.permute(e.reshape(w, (groups, per_out, per_group), what), [0, 2, 1])
    return e.typed(lambda t: fusion.MatmulOp(wt, g, t), [wt, g], (batch, groups, per_group, length), element)


class _Geometry(NamedTuple):
    """A convolution's operands in its dtype, their extents, and stride, padding, dilation per axis."""

    x: SSAValue
    w: SSAValue
    batch: int
    channels: int
    out_channels: int
    kernel: list[int]
    n: int
    """The number of spatial axes."""
    stride: list[int]
    padding: list[int]
    dilation: list[int]


def _geometry(
    e: Emitter,
    x: SSAValue,
    w: SSAValue,
    element: Attribute,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> _Geometry:
    """The forward's and the backward's common start."""
    x, w = e.cast(x, element), e.cast(w, element)
    batch, channels, *spatial = shape_of(x)
    out_channels, _, *kernel = shape_of(w)
    n = len(spatial)
    stride, padding, dilation = (per_axis(v, n) for v in (stride, padding, dilation))
    return _Geometry(x, w, batch, channels, out_channels, kernel, n, stride, padding, dilation)


def tiles_input(kernel: list[int], stride: list[int], padding: list[int], dilation: list[int]) -> bool:
    """Whether the kernel's windows tile the input (stride = kernel, no padding or dilation): views, no slices."""
    return list(stride) == kernel and not any(padding) and all(d == 1 for d in dilation)


def per_axis(values: Sequence[int], n: int) -> list[int]:
    values = list(values)
    return values * n if len(values) == 1 else values


def input_patches(
    e: Emitter,
    x: SSAValue,
    kernel: list[int],
    out_spatial: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    fill: float = 0.0,
) -> tuple[SSAValue, list[int]]:
    """
    The input's values under each kernel position for each output position (padding of `fill`), and
    the kernel's axes among them: `[B, C, k1, ..., kn, O1, ..., On]` where the kernel tiles the
    input, else `[B, C, K, O1, ..., On]`, both with the kernel's positions in the weight's order.
    """
    if tiles_input(kernel, stride, padding, dilation):
        return _tiles(e, x, kernel, out_spatial), list(range(2, 2 + len(kernel)))
    return _slices(e, x, kernel, out_spatial, stride, padding, dilation, fill), [2]


def _tiles(e: Emitter, x: SSAValue, kernel: list[int], out_spatial: list[int]) -> SSAValue:
    """`[B, C, K, L]` by views: the input (cropped to whole tiles) as `[B, C, O1, k1, O2, k2, ...]`, permuted."""
    batch, channels, *spatial = shape_of(x)
    n = len(spatial)
    used = [o * k for o, k in zip(out_spatial, kernel)]
    if used != spatial:
        offsets = [0] * (n + 2)
        x = e.typed(
            lambda t: fusion.SliceOp(x, offsets, [1] * (n + 2), t), [x], (batch, channels, *used), element_of(x)
        )
    split = [batch, channels] + [d for o, k in zip(out_spatial, kernel) for d in (o, k)]
    x = e.reshape(x, tuple(split), "the patches of a convolution")
    perm = [0, 1] + [3 + 2 * i for i in range(n)] + [2 + 2 * i for i in range(n)]
    return e.permute(x, perm)


def _slices(
    e: Emitter,
    x: SSAValue,
    kernel: list[int],
    out_spatial: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    fill: float,
) -> SSAValue:
    """`[B, C, K, *out]`: one strided slice of the padded input per kernel position, stacked on axis 2."""
    batch, channels, *_ = shape_of(x)
    n = len(kernel)
    for axis in range(n):
        x = _zeros_around(e, x, 2 + axis, padding[axis], padding[axis], fill)
    parts = []
    for position in _positions(kernel):
        offsets = [0, 0] + [k * d for k, d in zip(position, dilation)]
        strides = [1, 1, *stride]
        shape = (batch, channels, *out_spatial)
        part = e.typed(lambda t, o=offsets, s=strides: fusion.SliceOp(x, o, s, t), [x], shape, element_of(x))
        parts.append(e.unsqueeze(part, [2]))
    if len(parts) == 1:
        return parts[0]
    shape = (batch, channels, len(parts), *out_spatial)
    return e.typed(lambda t: fusion.ConcatOp(parts, 2, t), parts, shape, element_of(x))


def _positions(kernel: list[int]) -> list[tuple[int, ...]]:
    """The kernel's positions in row-major order (the weight's `[k1, k2, ...]` order)."""
    positions: list[tuple[int, ...]] = [()]
    for k in kernel:
        positions = [(*p, i) for p in positions for i in range(k)]
    return positions


def _convolution_backward(
    e: Emitter,
    node: Node,
    grad: SSAValue,
    x: SSAValue,
    w: SSAValue,
    bias_sizes: Sequence[int] | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[SSAValue | None, SSAValue | None, SSAValue | None]:
    """
    The gradients of `_convolution` (those `output_mask` asks for): the input's is the weight's
    transpose times the output's gradient, `[B, G, C/G * K, L]`, folded back onto the input (each
    kernel position's part spread by the stride, shifted to its offset, summed; the padding cut
    off); the weight's is the output's gradient times the patches, summed over the batch; the
    bias's is the output's gradient summed over all but the channels.
    """
    element = element_of(grad)
    if transposed:  # the convolution it transposes, with the input and the output's gradient swapped
        grad, x = e.cast(x, element), e.cast(grad, element)
    geometry = _geometry(e, x, w, element, stride, padding, dilation)
    x, w, batch, channels, out_channels, kernel, n, stride, padding, dilation = geometry
    out_spatial = list(shape_of(grad)[2:])
    length, positions = math.prod(out_spatial), math.prod(kernel)
    per_group, per_out = channels // groups * positions, out_channels // groups
    what = f"{node.target}"
    g = e.reshape(grad, (batch, groups, per_out, length), what)
    grad_x = grad_w = grad_b = None
    if output_mask[0] and transposed:  # a convolution of the output's gradient (here `x`) by w
        shape = (batch, out_channels, *out_spatial)
        grad_x = _convolution_of(e, node, x, w, groups, kernel, out_spatial, stride, padding, dilation, shape)
    elif output_mask[0]:
        cols = _weight_times(e, node, w, grad, groups, positions, element)
        grad_x = fold(e, cols, shape_of(x), kernel, out_spatial, stride, padding, dilation)
    if output_mask[1]:
        patches, _ = input_patches(e, x, kernel, out_spatial, stride, padding, dilation)
        patches = e.permute(e.reshape(patches, (batch, groups, per_group, length), what), [0, 1, 3, 2])
        shape = (batch, groups, per_out, per_group)
        products = e.typed(lambda t: fusion.MatmulOp(g, patches, t), [g, patches], shape, element)
        grad_w = e.reshape(e.reduce(fusion.SumOp, products, [0], keepdim=False), shape_of(w), what)
    if output_mask[2]:
        output = x if transposed else grad
        grad_b = e.reduce(fusion.SumOp, output, [0, *range(2, n + 2)], keepdim=False)
    return grad_x, grad_w, grad_b


def _convolution_of(
    e: Emitter,
    node: Node,
    x: SSAValue,
    w: SSAValue,
    groups: int,
    kernel: list[int],
    out_spatial: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    out_shape: tuple[int, ...],
) -> SSAValue:
    """The convolution of x `[B, C, ...]` by w `[O, C/G, *k]` (no bias): the weight times the patches per group."""
    element = element_of(x)
    batch, channels = shape_of(x)[:2]
    out_channels = shape_of(w)[0]
    length, per_group = math.prod(out_spatial), channels // groups * math.prod(kernel)
    patches, _ = input_patches(e, x, kernel, out_spatial, stride, padding, dilation)
    patches = e.reshape(patches, (batch, groups, per_group, length), f"{node.target}")
    weight = e.reshape(w, (groups, out_channels // groups, per_group), f"{node.target}")
    shape = (batch, groups, out_channels // groups, length)
    y = e.typed(lambda t: fusion.MatmulOp(weight, patches, t), [weight, patches], shape, element)
    return e.reshape(y, out_shape, f"{node.target}")


def fold(
    e: Emitter,
    cols: SSAValue,
    shape: tuple[int, ...],
    kernel: list[int],
    out_spatial: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
) -> SSAValue:
    """The sum, at each input position, of the patch entries that read it (`cols` as `[B, G, C/G * K, L]`)."""
    batch, channels, *spatial = shape
    n = len(spatial)
    element = element_of(cols)
    if tiles_input(kernel, stride, padding, dilation):
        tiles = e.reshape(cols, (batch, channels, *kernel, *out_spatial), "the patches of a convolution")
        tiles = e.permute(tiles, [0, 1] + [a for i in range(n) for a in (2 + n + i, 2 + i)])
        used = [o * k for o, k in zip(out_spatial, kernel)]
        folded = e.reshape(tiles, (batch, channels, *used), "the patches of a convolution")
        for axis in range(n):
            folded = _zeros_around(e, folded, 2 + axis, 0, spatial[axis] - used[axis])
        return folded
    parts = e.reshape(cols, (batch, channels, math.prod(kernel), *out_spatial), "the patches of a convolution")
    padded = [i + 2 * p for i, p in zip(spatial, padding)]
    total = None
    rank = n + 3
    for index, position in enumerate(_positions(kernel)):
        offsets = [index if a == 2 else 0 for a in range(rank)]
        one = (batch, channels, 1, *out_spatial)
        part = e.typed(lambda t, o=offsets: fusion.SliceOp(parts, o, [1] * rank, t), [parts], one, element)
        part = e.squeeze(part, [2])
        for axis in range(n):
            part = _spread(e, part, 2 + axis, stride[axis])
            before = position[axis] * dilation[axis]
            part = _zeros_around(e, part, 2 + axis, before, padded[axis] - before - shape_of(part)[2 + axis])
        total = part if total is None else e.binary(fusion.AddOp, total, part, element)
    assert total is not None
    if any(padding):
        offsets = [0, 0, *padding]
        cut = e.typed(lambda t: fusion.SliceOp(total, offsets, [1] * (n + 2), t), [total], tuple(shape), element)
        return cut
    return total


def _spread(e: Emitter, x: SSAValue, axis: int, stride: int) -> SSAValue:
    """`x` with `stride - 1` zeros after each element along `axis` but the last: `[a, 0, b, 0, c]` for stride 2."""
    extent = shape_of(x)[axis]
    if stride == 1 or extent == 1:
        return x
    element = element_of(x)
    x = e.unsqueeze(x, [axis + 1])
    gaps = list(shape_of(x))
    gaps[axis + 1] = stride - 1
    zeros = e.emit(fusion.FullOp(0.0, TensorType(element, tuple(gaps))))
    spread = list(shape_of(x))
    spread[axis + 1] = stride
    x = e.typed(lambda t: fusion.ConcatOp([x, zeros], axis + 1, t), [x, zeros], tuple(spread), element)
    merged = list(shape_of(x))
    merged[axis : axis + 2] = [extent * stride]
    x = e.reshape(x, tuple(merged), "the gradient of a strided convolution")
    kept = list(merged)
    kept[axis] = (extent - 1) * stride + 1
    rank = len(kept)
    return e.typed(lambda t: fusion.SliceOp(x, [0] * rank, [1] * rank, t), [x], tuple(kept), element)


def _zeros_around(e: Emitter, x: SSAValue, axis: int, before: int, after: int, fill: float = 0.0) -> SSAValue:
    """`x` with `before` zeros (or `fill`s) ahead of it and `after` behind it along `axis`."""
    element = element_of(x)
    parts = []
    for size in (before, None, after):
        if size is None:
            parts.append(x)
        elif size > 0:
            block = list(shape_of(x))
            block[axis] = size
            parts.append(e.emit(fusion.FullOp(fill, TensorType(element, tuple(block)))))
    if len(parts) == 1:
        return x
    shape = list(shape_of(x))
    shape[axis] = sum(shape_of(p)[axis] for p in parts)
    return e.typed(lambda t: fusion.ConcatOp(parts, axis, t), parts, tuple(shape), element)


CONV_TABLE: dict[object, Builder] = {
    aten.convolution.default: float_only(_convolution),
    aten.convolution_backward.default: _convolution_backward,
}
