"""
Complex tensors as the rotary embeddings of Meta's Llama write them (`torch.view_as_complex`, a
`freqs_cis` buffer from `torch.polar`, a product, `torch.view_as_real`): fusion has no complex
element types, so a complex tensor of shape `S` is carried as its `view_as_real` form, a real
tensor `S + [2]` (real and imaginary parts on the last axis). `view_as_complex` and
`view_as_real` are then the value itself, views act on the leading axes, and a product is
`(ac - bd, ad + bc)` of the two parts.

`COMPLEX_TABLE` maps the ops of complex values (any operand or the result complex); the importer
uses it for those nodes, and an op it lacks is an error at the user's line. A complex buffer is
passed as its `view_as_real` view; complex arguments and outputs of the program are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.fx import Node
from xdsl.ir import Attribute, SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten
from hir.frontend.emitter import Emitter, element_of, shape_of
from hir.frontend.types import element_type

_PARTS: dict[torch.dtype, torch.dtype] = {
    torch.complex32: torch.float16,
    torch.complex64: torch.float32,
    torch.complex128: torch.float64,
}


def real_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of a complex dtype's parts (the dtype of its `view_as_real`)."""
    return _PARTS.get(dtype, dtype)


def is_complex_node(node: Node) -> bool:
    """Whether the node's result or one of its tensor operands is complex."""
    values = [node.meta.get("val")]
    for arg in (*node.args, *node.kwargs.values()):
        for a in arg if isinstance(arg, list | tuple) else (arg,):
            if isinstance(a, Node):
                values.append(a.meta.get("val"))
    return any(isinstance(v, torch.Tensor) and v.dtype.is_complex for v in values)


def _complex(node: Node) -> bool:
    val = node.meta["val"]
    return isinstance(val, torch.Tensor) and val.dtype.is_complex


def _pair_shape(node: Node) -> tuple[int, ...]:
    """The fusion shape of the node's result: its shape, plus the parts' axis when complex."""
    shape = tuple(node.meta["val"].shape)
    return (*shape, 2) if _complex(node) else shape


def _part(e: Emitter, z: SSAValue, index: int) -> SSAValue:
    """The real (0) or imaginary (1) part of a complex value: a slice of the last axis, squeezed."""
    shape = shape_of(z)
    rank = len(shape)
    offsets = [index if k == rank - 1 else 0 for k in range(rank)]
    one = e.typed(lambda t: fusion.SliceOp(z, offsets, [1] * rank, t), [z], (*shape[:-1], 1), element_of(z))
    return e.squeeze(one, [rank - 1])


def _pair(e: Emitter, re: SSAValue, im: SSAValue) -> SSAValue:
    """The complex value of two real parts of one shape: stacked on a new last axis."""
    re, im = e.broadcast_pair(re, im)
    parts = [e.unsqueeze(v, [len(shape_of(v))]) for v in (re, im)]
    shape = (*shape_of(re), 2)
    return e.typed(lambda t: fusion.ConcatOp(parts, len(shape) - 1, t), parts, shape, element_of(re))


def _parts(e: Emitter, value: Any, arg: Any, element: Attribute) -> tuple[Any, Any]:
    """(real, imaginary) of an operand: a complex value's parts, a real tensor and 0, or a Python number's."""
    if isinstance(arg, Node):
        if arg.meta["val"].dtype.is_complex:
            return _part(e, value, 0), _part(e, value, 1)
        return e.cast(value, element), None
    if isinstance(value, complex):
        return value.real, value.imag
    return value, None


def _element(node: Node) -> Attribute:
    return element_type(real_dtype(node.meta["val"].dtype), node)


def _mul(e: Emitter, node: Node, a, b) -> SSAValue:
    """`(a + bi)(c + di) = (ac - bd) + (ad + bc)i`; a real factor scales both parts."""
    element = _element(node)
    (ar, ai), (br, bi) = (_parts(e, v, n, element) for v, n in zip((a, b), node.args))
    re = e.binary(fusion.MulOp, ar, br, element)
    im = None
    if ai is not None and bi is not None:
        re = e.binary(fusion.SubOp, re, e.binary(fusion.MulOp, ai, bi, element), element)
    if ai is not None:
        im = e.binary(fusion.MulOp, ai, br, element)
    if bi is not None:
        term = e.binary(fusion.MulOp, ar, bi, element)
        im = term if im is None else e.binary(fusion.AddOp, im, term, element)
    return _pair(e, re, _tensor(e, im, re, element))


def _add_or_sub(kind: type[fusion.BinaryFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, a, b, alpha=1) -> SSAValue:
        element = _element(node)
        (ar, ai), (br, bi) = (_parts(e, v, n, element) for v, n in zip((a, b), node.args))
        if alpha != 1:
            br = e.binary(fusion.MulOp, br, alpha, element)
            bi = None if bi is None else e.binary(fusion.MulOp, bi, alpha, element)
        re = e.binary(kind, ar, br, element)
        if bi is None:
            im = ai
        elif ai is None:
            im = bi if kind is fusion.AddOp else e.binary(fusion.MulOp, bi, -1.0, element)
        else:
            im = e.binary(kind, _tensor(e, ai, re, element), bi, element)
        return _pair(e, re, _tensor(e, im, re, element))

    return build


def _tensor(e: Emitter, value: Any, like: SSAValue, element: Attribute) -> SSAValue:
    """A part as a tensor of `like`'s shape: a Python number (or None, zero) as a broadcast constant."""
    if isinstance(value, SSAValue):
        return value
    return e.broadcast_to(e.constant(0.0 if value is None else value, element), shape_of(like))


def _polar(e: Emitter, node: Node, magnitude: SSAValue, angle: SSAValue) -> SSAValue:
    element = _element(node)
    magnitude, angle = e.cast(magnitude, element), e.cast(angle, element)
    re = e.binary(fusion.MulOp, magnitude, e.unary(fusion.CosOp, angle), element)
    im = e.binary(fusion.MulOp, magnitude, e.unary(fusion.SinOp, angle), element)
    return _pair(e, re, im)


def _from_parts(e: Emitter, node: Node, re: SSAValue, im: SSAValue) -> SSAValue:
    element = _element(node)
    return _pair(e, e.cast(re, element), e.cast(im, element))


def _same(e: Emitter, node: Node, z: SSAValue, *args, **kwargs) -> SSAValue:
    """view_as_complex, view_as_real, clone, contiguous: the pairs are already that value."""
    return z


def _to(e: Emitter, node: Node, z: SSAValue, *args, **kwargs) -> SSAValue:
    source, target = node.args[0].meta["val"].dtype, node.meta["val"].dtype
    if not (source.is_complex and target.is_complex):
        raise e.error(f"{node.target}: a cast between complex and real dtypes ({source} to {target}) is not supported")
    return e.cast(z, _element(node))


def _part_of(index: int) -> Builder:
    def build(e: Emitter, node: Node, z: SSAValue) -> SSAValue:
        return _part(e, z, index)

    return build


def _abs(e: Emitter, node: Node, z: SSAValue) -> SSAValue:
    element = element_of(z)
    squares = e.binary(fusion.MulOp, z, z, element)
    return e.unary(fusion.SqrtOp, e.reduce(fusion.SumOp, squares, [len(shape_of(z)) - 1], keepdim=False))


def _conj(e: Emitter, node: Node, z: SSAValue) -> SSAValue:
    """`a - bi` (autograd's backward of a complex product multiplies by the other factor's conjugate)."""
    element = element_of(z)
    return _pair(e, _part(e, z, 0), e.binary(fusion.MulOp, _part(e, z, 1), -1.0, element))


def _reshape(e: Emitter, node: Node, z: SSAValue, *args, **kwargs) -> SSAValue:
    shape = _pair_shape(node)
    return z if shape == shape_of(z) else e.reshape(z, shape, f"{node.target}")


def _rank(node: Node) -> int:
    return node.args[0].meta["val"].dim()


def _slice(e: Emitter, node: Node, z: SSAValue, dim: int = 0, start=None, end=None, step: int = 1) -> SSAValue:
    dim %= _rank(node)
    extent = shape_of(z)[dim]
    begin = 0 if start is None else start
    begin = max(0, min(extent, begin + extent if begin < 0 else begin))
    return _strided(e, node, z, dim, begin, step)


def _narrow(e: Emitter, node: Node, z: SSAValue, dim: int, start: int, length: int) -> SSAValue:
    dim %= _rank(node)
    return _strided(e, node, z, dim, start % shape_of(z)[dim], 1)


def _strided(e: Emitter, node: Node, z: SSAValue, dim: int, begin: int, step: int) -> SSAValue:
    shape = _pair_shape(node)
    if shape == shape_of(z):
        return z
    offsets = [begin if k == dim else 0 for k in range(len(shape))]
    strides = [step if k == dim else 1 for k in range(len(shape))]
    return e.typed(lambda t: fusion.SliceOp(z, offsets, strides, t), [z], shape, element_of(z))


def _select(e: Emitter, node: Node, z: SSAValue, dim: int, index: int) -> SSAValue:
    dim %= _rank(node)
    shape = list(shape_of(z))
    offsets = [index % shape[dim] if k == dim else 0 for k in range(len(shape))]
    shape[dim] = 1
    one = e.typed(lambda t: fusion.SliceOp(z, offsets, [1] * len(shape), t), [z], tuple(shape), element_of(z))
    return e.squeeze(one, [dim])


def _unsqueeze(e: Emitter, node: Node, z: SSAValue, dim: int) -> SSAValue:
    return e.unsqueeze(z, [dim % (_rank(node) + 1)])


def _squeeze(e: Emitter, node: Node, z: SSAValue, dims=None) -> SSAValue:
    rank = _rank(node)
    axes = range(rank) if dims is None else [dims % rank] if isinstance(dims, int) else [d % rank for d in dims]
    return e.squeeze(z, list(axes))


def _expand(e: Emitter, node: Node, z: SSAValue, sizes, implicit: bool = False) -> SSAValue:
    return e.broadcast_to(z, _pair_shape(node))


def _permute(e: Emitter, node: Node, z: SSAValue, dims: Sequence[int]) -> SSAValue:
    rank = _rank(node)
    return e.permute(z, [*(d % rank for d in dims), rank])


def _transpose(e: Emitter, node: Node, z: SSAValue, dim0: int = 0, dim1: int = 1) -> SSAValue:
    rank = _rank(node)
    perm = list(range(rank + 1))
    perm[dim0 % rank], perm[dim1 % rank] = perm[dim1 % rank], perm[dim0 % rank]
    return e.permute(z, perm)


def _cat(e: Emitter, node: Node, zs, dim: int = 0) -> SSAValue:
    rank = node.meta["val"].dim()
    zs = [z for z in zs if shape_of(z)[dim % rank]]
    if len(zs) == 1:
        return zs[0]
    shape = _pair_shape(node)
    return e.typed(lambda t: fusion.ConcatOp(zs, dim % rank, t), zs, shape, element_of(zs[0]))


def _stack(e: Emitter, node: Node, zs, dim: int = 0) -> SSAValue:
    rank = node.meta["val"].dim()
    parts = [e.unsqueeze(z, [dim % rank]) for z in zs]
    if len(parts) == 1:
        return parts[0]
    return e.typed(lambda t: fusion.ConcatOp(parts, dim % rank, t), parts, _pair_shape(node), element_of(parts[0]))


COMPLEX_TABLE: dict[torch._ops.OpOverload, Builder] = {
    aten.view_as_complex.default: _same,
    aten.view_as_real.default: _same,
    aten.clone.default: _same,
    aten.contiguous.default: _same,
    aten.alias.default: _same,
    aten.detach.default: _same,
    aten.lift_fresh_copy.default: _same,
    aten._to_copy.default: _to,
    aten.to.dtype: _to,
    aten.to.dtype_layout: _to,
    aten.polar.default: _polar,
    aten.complex.default: _from_parts,
    aten.real.default: _part_of(0),
    aten.imag.default: _part_of(1),
    aten.abs.default: _abs,
    aten._conj.default: _conj,
    aten.conj_physical.default: _conj,
    aten._conj_physical.default: _conj,
    aten.resolve_conj.default: _same,
    aten.mul.Tensor: _mul,
    aten.mul.Scalar: _mul,
    aten.add.Tensor: _add_or_sub(fusion.AddOp),
    aten.sub.Tensor: _add_or_sub(fusion.SubOp),
    aten.view.default: _reshape,
    aten.reshape.default: _reshape,
    aten._unsafe_view.default: _reshape,
    aten.flatten.using_ints: _reshape,
    aten.slice.Tensor: _slice,
    aten.narrow.default: _narrow,
    aten.select.int: _select,
    aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.dim: _squeeze,
    aten.squeeze.dims: _squeeze,
    aten.squeeze.default: _squeeze,
    aten.expand.default: _expand,
    aten.permute.default: _permute,
    aten.transpose.int: _transpose,
    aten.cat.default: _cat,
    aten.stack.default: _stack,
}
"""The ops of complex values (on their pairs of parts)."""
