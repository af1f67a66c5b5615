"""
Vision ops that torch's core ATen set keeps whole: group norm (a diffusion UNet's, a ConvNeXt's)
and average pooling. Group norm is a layer norm of each group's channels and positions (a view of
the input as `[N, G, C/G * HxW]`), then the per-channel affine; average pooling sums the input's
patches (the windows a convolution reads, frontend/aten_conv.py) and divides by the window's size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch.fx import Node
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, float_only, out_element
from hir.frontend.aten_conv import input_patches, per_axis
from hir.frontend.emitter import Emitter, shape_of


def _group_norm(
    e: Emitter,
    node: Node,
    x: SSAValue,
    weight: SSAValue | None,
    bias: SSAValue | None,
    n: int,
    c: int,
    hxw: int,
    group: int,
    eps: float,
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """native_group_norm: (the output, each group's mean, its 1/sqrt(var + eps)), the last two `[N, G]`."""
    element = out_element(node)
    x = e.cast(x, element)
    shape = shape_of(x)
    grouped = e.reshape(x, (n, group, c // group * hxw), "a group norm's groups")
    normed = e.typed(
        lambda t: fusion.LayerNormOp(grouped, None, None, [2], eps, t), [grouped], shape_of(grouped), element
    )
    y = e.reshape(normed, shape, "a group norm's groups")
    per_channel = (c, *([1] * (len(shape) - 2)))
    if weight is not None:
        y = e.binary(fusion.MulOp, y, e.reshape(e.cast(weight, element), per_channel), element)
    if bias is not None:
        y = e.binary(fusion.AddOp, y, e.reshape(e.cast(bias, element), per_channel), element)
    stats = out_element(node, 1)
    grouped = e.cast(grouped, stats)
    mean = e.reduce(fusion.MeanOp, grouped, [2], keepdim=True)
    centered = e.binary(fusion.SubOp, grouped, mean, stats)
    variance = e.reduce(fusion.MeanOp, e.binary(fusion.MulOp, centered, centered, stats), [2], keepdim=False)
    rstd = e.unary(fusion.RsqrtOp, e.binary(fusion.AddOp, variance, float(eps), stats))
    return y, e.squeeze(mean, [2]), rstd


def _avg_pool(
    e: Emitter,
    node: Node,
    x: SSAValue,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> SSAValue:
    """The sum of each window (zero padding) over the window's size, or over its elements in the input."""
    element = out_element(node)
    x = e.cast(x, element)
    n = len(kernel_size)
    kernel = per_axis(kernel_size, n)
    stride = per_axis(stride, n) if len(stride) else kernel
    padding = per_axis(padding, n)
    out_shape = tuple(node.meta["val"].shape)
    out_spatial = list(out_shape[-n:])
    spatial = shape_of(x)[-n:]
    floor = [(i + 2 * p - k) // s + 1 for i, p, k, s in zip(spatial, padding, kernel, stride)]
    if out_spatial != floor:
        raise e.error(f"{node.target}: ceil_mode=True adds windows that run past the input, which are not supported")
    unbatched = len(shape_of(x)) == n + 1
    if unbatched:
        x = e.unsqueeze(x, [0])
    patches, axes = input_patches(e, node, x, kernel, out_spatial, stride, padding, [1] * n)
    total = e.reduce(fusion.SumOp, patches, axes, keepdim=False)
    if divisor_override:
        divisor: SSAValue | float = float(divisor_override)
    elif count_include_pad or not any(padding):
        divisor = float(math.prod(kernel))
    else:  # the window's elements inside the input: the same sum over a tensor of ones
        ones = e.emit(fusion.FullOp(1.0, TensorType(element, shape_of(x))))
        counts, _ = input_patches(e, node, ones, kernel, out_spatial, stride, padding, [1] * n)
        divisor = e.reduce(fusion.SumOp, counts, axes, keepdim=False)
    y = e.binary(fusion.DivOp, total, divisor, element)
    return e.squeeze(y, [0]) if unbatched else y


VISION_TABLE: dict[object, Builder] = {
    aten.native_group_norm.default: float_only(_group_norm),
    aten.avg_pool1d.default: float_only(_avg_pool),
    aten.avg_pool2d.default: float_only(_avg_pool),
    aten.avg_pool3d.default: float_only(_avg_pool),
}
