"""
`aten.convolution` (nn.Conv1d / Conv2d / Conv3d, F.conv*d) spelled as a matmul of the weight
with the input's patches, exactly: `out[b, o, p] = sum_{c, k} w[o, c, k] * x[b, c, p * stride +
k * dilation] + bias[o]`.

The patches are `[B, C, K, L]` (K the kernel's positions, L the output's): a reshape and a
permute of the input when the kernel tiles it (stride = kernel, no padding or dilation: a ViT's
patch embedding), else one strided `fusion.slice` of the zero-padded input per kernel position
(a Whisper or Mamba conv1d, kernel 3 or 4), stacked. Groups split the channels: the weight as
`[G, O/G, C/G * K]` times the patches as `[B, G, C/G * K, L]` is one batched `fusion.matmul`.
Transposed convolutions are refused at the user's line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch.fx import Node
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, float_only, out_element
from hir.frontend.aten_composite import COMPOSITE_TABLE
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
    if transposed:
        raise e.error("a transposed convolution (ConvTranspose) is not supported: fusion has no scatter of patches")
    element = out_element(node)
    x, w = e.cast(x, element), e.cast(w, element)
    batch, channels, *spatial = shape_of(x)
    out_channels, _, *kernel = shape_of(w)
    n = len(spatial)
    stride, padding, dilation = (per_axis(v, n) for v in (stride, padding, dilation))
    out_shape = tuple(node.meta["val"].shape)
    out_spatial = list(out_shape[2:])
    length = math.prod(out_spatial)
    positions = math.prod(kernel)
    patches, _ = input_patches(e, node, x, kernel, out_spatial, stride, padding, dilation)
    per_group = channels // groups * positions
    patches = e.reshape(patches, (batch, groups, per_group, length), f"{node.target}")
    weight = e.reshape(w, (groups, out_channels // groups, per_group), f"{node.target}")
    shape = (batch, groups, out_channels // groups, length)
    y = e.typed(lambda t: fusion.MatmulOp(weight, patches, t), [weight, patches], shape, element)
    y = e.reshape(y, out_shape, f"{node.target}")
    if bias is not None:
        bias = e.reshape(e.cast(bias, element), (out_channels, *([1] * n)), f"{node.target}")
        y = e.binary(fusion.AddOp, y, bias, element)
    return y


def per_axis(values: Sequence[int], n: int) -> list[int]:
    values = list(values)
    return values * n if len(values) == 1 else values


def input_patches(
    e: Emitter,
    node: Node,
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
    if list(stride) == kernel and not any(padding) and all(d == 1 for d in dilation):
        return _tiles(e, x, kernel, out_spatial), list(range(2, 2 + len(kernel)))
    return _slices(e, node, x, kernel, out_spatial, stride, padding, dilation, fill), [2]


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
    node: Node,
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
    if any(padding):
        pad = [p for axis in reversed(range(n)) for p in (padding[axis], padding[axis])]
        x = COMPOSITE_TABLE[aten.constant_pad_nd.default](e, node, x, pad, fill)  # in the result's dtype
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


CONV_TABLE: dict[object, Builder] = {
    aten.convolution.default: float_only(_convolution),
}
