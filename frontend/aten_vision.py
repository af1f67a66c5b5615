"""
Vision ops that torch's core ATen set keeps whole: group norm (a diffusion UNet's, a ConvNeXt's),
average and max pooling. Group norm is a layer norm of each group's channels and positions (a
view of the input as `[N, G, C/G * HxW]`), then the per-channel affine; average pooling sums the input's
patches (the windows a convolution reads, frontend/aten_conv.py) and divides by the window's size;
max pooling takes their maximum, and where the graph reads them (max pooling's backward, which
torch decomposes into a scatter-add at them, `return_indices=True`), the indices of the maxima.
With `ceil_mode`, the last windows run past the input: it is extended by the padding's value, and
an average divides by each window's count as torch's kernel takes it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import torch
from torch.fx import Node
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, float_only, out_element
from hir.frontend.aten_conv import _zeros_around, fold, input_patches, per_axis
from hir.frontend.aten_indexing import I64, arg_reduce, gather, iota
from hir.frontend.aten_special import Num, maximum, minimum, where
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of


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
    out_spatial = list(node.meta["val"].shape[-len(kernel_size) :])
    pool = _Pool(e, node, e.cast(x, element), kernel_size, stride, padding, out_spatial)
    total = pool.reduce(fusion.SumOp, pool.x)
    return pool.result(e.binary(fusion.DivOp, total, pool.divisor(count_include_pad, divisor_override), element))


def _avg_pool_backward(
    e: Emitter,
    node: Node,
    grad: SSAValue,
    x: SSAValue,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> SSAValue:
    """Each output's gradient over its divisor, given to each input element of its window (summed over windows)."""
    element = out_element(node)
    n = len(kernel_size)
    out_spatial = list(shape_of(grad)[-n:])
    pool = _Pool(e, node, e.cast(x, element), kernel_size, stride, padding, out_spatial)
    grad = e.cast(grad, element)
    if pool.unbatched:
        grad = e.unsqueeze(grad, [0])
    share = e.binary(fusion.DivOp, grad, pool.divisor(count_include_pad, divisor_override), element)
    batch, channels = shape_of(share)[:2]
    positions = math.prod(pool.kernel)
    share = e.broadcast_to(e.unsqueeze(share, [2]), (batch, channels, positions, *out_spatial))
    cols = e.reshape(share, (batch, 1, channels * positions, math.prod(out_spatial)), f"{node.target}")
    shape = shape_of(pool.x)
    extended = (*shape[:2], *(i + extra for i, extra in zip(shape[2:], pool.overhang)))
    dx = fold(e, cols, extended, pool.kernel, out_spatial, pool.stride, pool.padding, pool.dilation)
    if extended != shape:  # ceil_mode's overhang, which no input element is under
        dx = e.typed(lambda t: fusion.SliceOp(dx, [0] * len(shape), [1] * len(shape), t), [dx], shape, element)
    return e.squeeze(dx, [0]) if pool.unbatched else dx


class _Pool:
    """A pool's windows: per-axis kernel, stride and padding; the input with a batch axis; the divisor."""

    def __init__(
        self, e: Emitter, node: Node, x: SSAValue, kernel_size, stride, padding, out_spatial: list[int], dilation=(1,)
    ):
        n = len(kernel_size)
        self.e, self.out_spatial = e, out_spatial
        self.kernel = per_axis(kernel_size, n)
        self.stride = per_axis(stride, n) if len(stride) else self.kernel
        self.padding = per_axis(padding, n)
        self.dilation = per_axis(dilation, n)  # max pooling's (a TCN's, a dilated ResNet's); 1 for averages
        self.spatial = list(shape_of(x)[-n:])
        geometry = zip(out_spatial, self.stride, self.kernel, self.dilation, self.spatial, self.padding)
        self.overhang = [max(0, (o - 1) * s + (k - 1) * d + 1 - (i + 2 * p)) for o, s, k, d, i, p in geometry]
        """Per axis, how far ceil_mode's last window runs past the padded input (0 without it)."""
        self.unbatched = len(shape_of(x)) == n + 1
        self.x = e.unsqueeze(x, [0]) if self.unbatched else x

    def divisor(self, count_include_pad: bool, divisor_override: int | None) -> SSAValue | float:
        """
        `divisor_override`, or each window's size as torch's kernel counts it: its positions inside
        the padded input (count_include_pad), or inside the input; a number where all are the kernel's.
        """
        if divisor_override:
            return float(divisor_override)
        if not any(self.overhang) and (count_include_pad or not any(self.padding)):
            return float(math.prod(self.kernel))
        sizes: Num | None = None
        for axis, (k, s, p, extent) in enumerate(zip(self.kernel, self.stride, self.padding, self.spatial)):
            start = Num(self.e, iota(self.e, (self.out_spatial[axis],), 0, element_of(self.x))) * s - p
            end = minimum(start + k, extent + p)
            count = end - start if count_include_pad else minimum(end, extent) - maximum(start, 0)
            after = len(self.kernel) - axis - 1  # [out_axis, 1, ...]: broadcast against the later axes
            count = Num(self.e, self.e.unsqueeze(count.value, list(range(1, after + 1)))) if after else count
            sizes = count if sizes is None else sizes * count
        assert sizes is not None
        return sizes.value

    def windows(self, x: SSAValue, fill: float) -> tuple[SSAValue, list[int]]:
        """The patches of `x` (`input_patches`), ceil_mode's overhang filled with `fill` as the padding is."""
        for axis, extra in enumerate(self.overhang):
            if extra:  # its values are all `fill`, as the padding's: that it comes before the padding changes nothing
                x = _zeros_around(self.e, x, 2 + axis, 0, extra, fill)
        geometry = (self.kernel, self.out_spatial, self.stride, self.padding, self.dilation)
        return input_patches(self.e, x, *geometry, fill)

    def reduce(self, kind: type[fusion.ReductionFusionOp], x: SSAValue, fill: float = 0.0) -> SSAValue:
        """`kind` over each window of `x` (the input, or a tensor of its shape; padding of `fill`): `[B, C, *out]`."""
        patches, axes = self.windows(x, fill)
        return self.e.reduce(kind, patches, axes, keepdim=False)

    def max_positions(self, lowest: float) -> SSAValue:
        """
        Per window, where its first maximum lies in the input: the flat position over the spatial
        axes, as torch's indices (`[B, C, *out]`, I64). The argmax of the window's values (the
        padding, `lowest`, never wins) picks from the windows of a map of the positions.
        """
        e = self.e
        batch, channels, *spatial = shape_of(self.x)
        spread = (batch, channels, math.prod(self.kernel), *self.out_spatial)
        x = self.x
        floats = not math.isfinite(lowest)
        if not floats:  # integers, widened: the padding below every value, not tied with the least
            x, lowest = e.cast(x, I64), torch.iinfo(torch.int64).min
        values, _ = self.windows(x, lowest)
        values = e.reshape(values, spread, "the windows of a max pooling")  # tiles: the kernel's axes merged
        first = arg_reduce(e, fusion.ArgMaxOp, values, 2, keepdim=True)
        flat = iota(e, (math.prod(spatial),), 0, I64)
        positions, _ = self.windows(e.reshape(flat, (1, 1, *spatial)), -1)  # -1: the padding's
        positions = e.reshape(positions, (1, 1, *spread[2:]), "the windows of a max pooling")
        positions = e.broadcast_to(positions, spread)
        picked = gather(e, positions, 2, first)
        if floats:
            # A window whose values are all -inf ties them with its -inf padding: torch picks the
            # first of its input's positions there (the first position that is not the padding).
            real = e.cast(Num(e, positions).compare("ge", 0).value, I64)
            first_real = gather(e, positions, 2, arg_reduce(e, fusion.ArgMaxOp, real, 2, keepdim=True))
            maxima = e.reduce(fusion.MaxOp, values, [2], keepdim=True)
            tied = Num(e, maxima).compare("eq", float("-inf"))
            picked = where(tied, Num(e, first_real), Num(e, picked)).value
        return e.squeeze(picked, [2])

    def result(self, y: SSAValue) -> SSAValue:
        """`y` without the batch axis the pool added to an unbatched input."""
        return self.e.squeeze(y, [0]) if self.unbatched else y


def _max_pool_with_indices(
    e: Emitter,
    node: Node,
    x: SSAValue,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    dilation: Sequence[int] = (1,),
    ceil_mode: bool = False,
) -> tuple[SSAValue, SSAValue | None]:
    """
    The maximum of each window (the padding, -inf, never wins) and, where the graph reads them
    (max pooling's backward, `return_indices=True`), the flat positions of the first maxima in
    the input's spatial axes, as torch's indices. Mapped here rather than left to torch's
    decomposition, which not every torch version applies.
    """
    n = len(kernel_size)
    out_spatial = list(node.meta["val"][0].shape[-n:])
    pool = _Pool(e, node, x, kernel_size, stride, padding, out_spatial, dilation)
    # the padding never wins: -inf, or an integer dtype's least value (uint8 images pool too)
    lowest = float("-inf") if is_float(element_of(x)) else torch.iinfo(node.meta["val"][0].dtype).min
    values = pool.result(pool.reduce(fusion.MaxOp, pool.x, fill=lowest))
    read = any(user.target is operator.getitem and user.args[1] == 1 and user.users for user in node.users)
    return values, pool.result(pool.max_positions(lowest)) if read else None


VISION_TABLE: dict[object, Builder] = {
    aten.max_pool2d_with_indices.default: _max_pool_with_indices,
    aten.max_pool3d_with_indices.default: _max_pool_with_indices,
    aten.native_group_norm.default: float_only(_group_norm),
    aten.avg_pool1d.default: float_only(_avg_pool),
    aten.avg_pool2d.default: float_only(_avg_pool),
    aten.avg_pool3d.default: float_only(_avg_pool),
    aten.avg_pool2d_backward.default: float_only(_avg_pool_backward),
    aten.avg_pool3d_backward.default: float_only(_avg_pool_backward),
}
