"""
Math functions fusion spells with its unary ops, each as torch computes it up to rounding:
`tan = sin / cos`, `sinh = (expm1(x) - expm1(-x)) / 2` (no cancellation near 0), `cosh = (exp(x)
+ exp(-x)) / 2`, `hypot = sqrt(a^2 + b^2)`, `log10 = log(x) / ln 10`; and `Tensor.unfold`, the
sliding windows of an axis: a reshape where the windows tile it, else one strided slice per
position in the window, stacked on a new last axis.
"""

from __future__ import annotations

import math

from torch.fx import Node
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, float_only, out_element
from hir.frontend.emitter import Emitter, element_of, shape_of


def _tan(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    element = out_element(node)
    x = e.cast(x, element)
    return e.binary(fusion.DivOp, e.unary(fusion.SinOp, x), e.unary(fusion.CosOp, x), element)


def _sinh(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    element = out_element(node)
    x = e.cast(x, element)
    up, down = e.unary(fusion.Expm1Op, x), e.unary(fusion.Expm1Op, e.unary(fusion.NegOp, x))
    return e.binary(fusion.MulOp, e.binary(fusion.SubOp, up, down, element), 0.5, element)


def _cosh(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    element = out_element(node)
    x = e.cast(x, element)
    up, down = e.unary(fusion.ExpOp, x), e.unary(fusion.ExpOp, e.unary(fusion.NegOp, x))
    return e.binary(fusion.MulOp, e.binary(fusion.AddOp, up, down, element), 0.5, element)


def _hypot(e: Emitter, node: Node, a: SSAValue, b: SSAValue) -> SSAValue:
    element = out_element(node)
    squares = e.binary(
        fusion.AddOp, e.binary(fusion.MulOp, a, a, element), e.binary(fusion.MulOp, b, b, element), element
    )
    return e.unary(fusion.SqrtOp, squares)


def _log10(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    element = out_element(node)
    return e.binary(fusion.MulOp, e.unary(fusion.LogOp, e.cast(x, element)), 1 / math.log(10), element)


def _unfold(e: Emitter, node: Node, x: SSAValue, dim: int, size: int, step: int) -> SSAValue:
    """`x.unfold(dim, size, step)`: axis `dim` becomes the windows' starts, a new last axis their positions."""
    shape = shape_of(x)
    rank = len(shape)
    dim = dim % rank if rank else 0
    out_shape = tuple(node.meta["val"].shape)
    windows = out_shape[dim] if rank else 1
    if rank == 0:
        return e.unsqueeze(x, [0])
    if step == size:  # the windows tile the axis: a view of its first windows * size elements
        used = tuple(windows * size if k == dim else n for k, n in enumerate(shape))
        if used != shape:
            x = e.typed(lambda t: fusion.SliceOp(x, [0] * rank, [1] * rank, t), [x], used, element_of(x))
        split = (*shape[:dim], windows, size, *shape[dim + 1 :])
        x = e.reshape(x, split, f"{node.target}")
        return e.permute(x, [*range(dim + 1), *range(dim + 2, rank + 1), dim + 1])
    parts = []
    sliced = tuple(windows if k == dim else n for k, n in enumerate(shape))
    for k in range(size):
        offsets = [k if a == dim else 0 for a in range(rank)]
        strides = [step if a == dim else 1 for a in range(rank)]
        part = e.typed(lambda t, o=offsets, s=strides: fusion.SliceOp(x, o, s, t), [x], sliced, element_of(x))
        parts.append(e.unsqueeze(part, [rank]))
    if len(parts) == 1:
        return parts[0]
    return e.typed(lambda t: fusion.ConcatOp(parts, rank, t), parts, out_shape, element_of(x))


MATH_TABLE: dict[object, Builder] = {
    aten.tan.default: float_only(_tan),
    aten.sinh.default: float_only(_sinh),
    aten.cosh.default: float_only(_cosh),
    aten.hypot.default: float_only(_hypot),
    aten.log10.default: float_only(_log10),
    aten.unfold.default: _unfold,
}
