"""
THE table from ATen overloads to fusion ops: `ATEN_TABLE[overload](emitter, node, *args, **kwargs)`
returns the fusion value of the node. Arguments arrive as torch.export records them, with graph
values replaced by fusion values. An overload missing here is an error naming it and the user's
line (frontend/errors.py); an argument a builder cannot honour is an error too, never a guess.

Ops the dialect does not have yet are decomposed where that is cheap and exact in exact arithmetic
(softmax, silu, sigmoid, gelu's tanh form, mean, unsqueeze/squeeze, integer powers); the others
(reshape, slice, concat, comparisons, norms, erf-gelu, sqrt) wait for their fusion ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch.fx import Node
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of
from hir.frontend.types import element_type

aten = torch.ops.aten
Builder = Callable[..., SSAValue]


def _out_element(node: Node):
    return element_type(node.meta["val"].dtype, node)


def _binary(kind: type[fusion.BinaryFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, a, b, **kwargs) -> SSAValue:
        _no_options(e, node, kwargs)
        return e.binary(kind, a, b, _out_element(node))

    return build


def _add_or_sub(kind: type[fusion.BinaryFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, a, b, alpha=1) -> SSAValue:
        element = _out_element(node)
        if alpha != 1:
            b = e.binary(fusion.MulOp, b, alpha, element)
        return e.binary(kind, a, b, element)

    return build


def _div(e: Emitter, node: Node, a, b, rounding_mode=None) -> SSAValue:
    if rounding_mode is not None:
        raise e.error(f"{node.target}: rounding_mode={rounding_mode!r} has no fusion op (only true division)")
    return e.binary(fusion.DivOp, a, b, _out_element(node))


def _rsub(e: Emitter, node: Node, a, b, alpha=1) -> SSAValue:
    element = _out_element(node)
    if alpha != 1:
        a = e.binary(fusion.MulOp, a, alpha, element)
    return e.binary(fusion.SubOp, b, a, element)


def _unary(kind: type[fusion.UnaryFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
        element = _out_element(node)
        return e.unary(kind, e.cast(x, element))

    return build


def _identity(e: Emitter, node: Node, x: SSAValue, *args, **kwargs) -> SSAValue:
    return x


def _dropout(e: Emitter, node: Node, x: SSAValue, p: float, train: bool | None) -> SSAValue:
    if train:
        raise e.error("dropout in training mode draws random numbers, which fusion does not: call model.eval()")
    return x


def _to(e: Emitter, node: Node, x: SSAValue, *args, **kwargs) -> SSAValue:
    val = node.meta["val"]
    if val.device != node.args[0].meta["val"].device:
        raise e.error(f"{node.target}: device moves inside the program are not supported")
    return e.cast(x, element_type(val.dtype, node))


def _sigmoid(e: Emitter, x: SSAValue) -> SSAValue:
    element = element_of(x)
    # 1 / (1 + exp(-x))
    denominator = e.binary(fusion.AddOp, 1.0, e.unary(fusion.ExpOp, e.unary(fusion.NegOp, x)), element)
    return e.binary(fusion.DivOp, 1.0, denominator, element)


def _silu(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
    element = element_of(x)
    return e.binary(fusion.MulOp, x, _sigmoid(e, x), element)


def _gelu(e: Emitter, node: Node, x: SSAValue, approximate: str = "none") -> SSAValue:
    if approximate != "tanh":
        raise e.error(
            f"{node.target}: gelu with approximate={approximate!r} needs erf, which the fusion dialect lacks; "
            "approximate='tanh' is supported"
        )
    element = element_of(x)
    # 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), torch's formula
    cube = e.binary(fusion.MulOp, e.binary(fusion.MulOp, x, x, element), x, element)
    inner = e.binary(fusion.AddOp, x, e.binary(fusion.MulOp, cube, 0.044715, element), element)
    t = e.unary(fusion.TanhOp, e.binary(fusion.MulOp, inner, math.sqrt(2.0 / math.pi), element))
    half_x = e.binary(fusion.MulOp, x, 0.5, element)
    return e.binary(fusion.MulOp, half_x, e.binary(fusion.AddOp, t, 1.0, element), element)


def _softmax(e: Emitter, node: Node, x: SSAValue, dim: int, half_to_float: bool = False) -> SSAValue:
    if half_to_float:
        raise e.error(f"{node.target}: half_to_float is not supported")
    element = element_of(x)
    # exp(x - max) / sum(exp(x - max)): the max keeps exp in range, as torch's kernel does
    shifted = e.binary(fusion.SubOp, x, e.reduce(fusion.MaxOp, x, [dim], keepdim=True), element)
    exp = e.unary(fusion.ExpOp, shifted)
    return e.binary(fusion.DivOp, exp, e.reduce(fusion.SumOp, exp, [dim], keepdim=True), element)


def _reduction(kind: type[fusion.ReductionFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, x: SSAValue, dims=None, keepdim: bool = False, *, dtype=None) -> SSAValue:
        x = e.cast(x, _out_element(node))
        return e.reduce(kind, x, _dims(x, dims), keepdim)

    return build


def _mean(e: Emitter, node: Node, x: SSAValue, dims=None, keepdim: bool = False, *, dtype=None) -> SSAValue:
    element = _out_element(node)
    x = e.cast(x, element)
    dims = _dims(x, dims)
    count = math.prod(shape_of(x)[d] for d in dims)
    return e.binary(fusion.DivOp, e.reduce(fusion.SumOp, x, dims, keepdim), float(count), element)


def _dims(x: SSAValue, dims) -> list[int]:
    rank = len(shape_of(x))
    if dims is None or (isinstance(dims, list | tuple) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return [d % rank for d in dims]


def _amax_or_amin(kind: type[fusion.ReductionFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, x: SSAValue, dims=(), keepdim: bool = False) -> SSAValue:
        return e.reduce(kind, x, _dims(x, dims), keepdim)

    return build


def _sum_all(e: Emitter, node: Node, x: SSAValue, *, dtype=None) -> SSAValue:
    x = e.cast(x, _out_element(node))
    return e.reduce(fusion.SumOp, x, _dims(x, None), keepdim=False)


def _expand(e: Emitter, node: Node, x: SSAValue, sizes, implicit: bool = False) -> SSAValue:
    shape = tuple(node.meta["val"].shape)
    return e.broadcast_to(x, shape)


def _permute(e: Emitter, node: Node, x: SSAValue, dims) -> SSAValue:
    return e.permute(x, dims)


def _transpose(e: Emitter, node: Node, x: SSAValue, dim0: int = 0, dim1: int = 1) -> SSAValue:
    rank = len(shape_of(x))
    if rank < 2:
        return x
    perm = list(range(rank))
    perm[dim0 % rank], perm[dim1 % rank] = perm[dim1 % rank], perm[dim0 % rank]
    return e.permute(x, perm)


def _unsqueeze(e: Emitter, node: Node, x: SSAValue, dim: int) -> SSAValue:
    return e.unsqueeze(x, [dim % (len(shape_of(x)) + 1)])


def _squeeze(e: Emitter, node: Node, x: SSAValue, dims=None) -> SSAValue:
    rank = len(shape_of(x))
    axes = range(rank) if dims is None else [dims % rank] if isinstance(dims, int) else [d % rank for d in dims]
    return e.squeeze(x, list(axes))


def _view(e: Emitter, node: Node, x: SSAValue, shape) -> SSAValue:
    """Reshapes that only add or drop axes of extent 1 (the others need fusion.reshape)."""
    source = shape_of(x)
    target = tuple(node.meta["val"].shape)
    if source == target:
        return x
    if [d for d in source if d != 1] != [d for d in target if d != 1]:
        raise e.error(
            f"{node.target}: reshaping {list(source)} to {list(target)} needs fusion.reshape, which the "
            "fusion dialect lacks (only adding or dropping axes of extent 1 is supported)"
        )
    x = e.squeeze(x, [i for i, d in enumerate(source) if d == 1])
    return e.unsqueeze(x, [i for i, d in enumerate(target) if d == 1]) if 1 in target else x


def _pow(e: Emitter, node: Node, x: SSAValue, exponent) -> SSAValue:
    if not (isinstance(exponent, int | float) and float(exponent).is_integer() and 1 <= exponent <= 4):
        raise e.error(
            f"{node.target}: x ** {exponent!r} needs fusion.pow, which the fusion dialect lacks "
            "(integer exponents 1 to 4 are multiplied out)"
        )
    element = _out_element(node)
    x = e.cast(x, element)
    result = x
    for _ in range(int(exponent) - 1):
        result = e.binary(fusion.MulOp, result, x, element)
    return result


def _matmul(e: Emitter, node: Node, a: SSAValue, b: SSAValue) -> SSAValue:
    shape = tuple(node.meta["val"].shape)
    return e.typed(lambda t: fusion.MatmulOp(a, b, t), [a, b], shape, _out_element(node))


def _linear(e: Emitter, node: Node, x: SSAValue, w: SSAValue, bias: SSAValue | None = None) -> SSAValue:
    shape = tuple(node.meta["val"].shape)
    operands = [x, w] if bias is None else [x, w, bias]
    return e.typed(lambda t: fusion.LinearOp(x, w, bias, t), operands, shape, _out_element(node))


def _no_options(e: Emitter, node: Node, kwargs: dict) -> None:
    if kwargs:
        raise e.error(f"{node.target}: arguments {sorted(kwargs)} are not supported")


def _float_only(builder: Builder) -> Builder:
    def build(e: Emitter, node: Node, *args, **kwargs) -> SSAValue:
        if not is_float(_out_element(node)):
            raise e.error(f"{node.target} on {node.meta['val'].dtype} tensors: fusion computes it on floats only")
        return builder(e, node, *args, **kwargs)

    return build


ATEN_TABLE: dict[torch._ops.OpOverload, Builder] = {
    # elementwise arithmetic (scalar operands become constants)
    aten.add.Tensor: _add_or_sub(fusion.AddOp),
    aten.add.Scalar: _add_or_sub(fusion.AddOp),
    aten.sub.Tensor: _add_or_sub(fusion.SubOp),
    aten.sub.Scalar: _add_or_sub(fusion.SubOp),
    aten.rsub.Scalar: _rsub,
    aten.rsub.Tensor: _rsub,
    aten.mul.Tensor: _binary(fusion.MulOp),
    aten.mul.Scalar: _binary(fusion.MulOp),
    aten.div.Tensor: _div,
    aten.div.Scalar: _div,
    aten.div.Tensor_mode: _div,
    aten.maximum.default: _binary(fusion.MaximumOp),
    aten.neg.default: _unary(fusion.NegOp),
    aten.abs.default: _unary(fusion.AbsOp),
    aten.exp.default: _float_only(_unary(fusion.ExpOp)),
    aten.tanh.default: _float_only(_unary(fusion.TanhOp)),
    aten.relu.default: _unary(fusion.ReluOp),
    aten.pow.Tensor_Scalar: _pow,
    aten.square.default: lambda e, node, x: _pow(e, node, x, 2),
    # activations, decomposed
    aten.sigmoid.default: _float_only(lambda e, node, x: _sigmoid(e, x)),
    aten.silu.default: _float_only(_silu),
    aten.gelu.default: _float_only(_gelu),
    aten.softmax.int: _float_only(_softmax),
    aten._softmax.default: _float_only(_softmax),
    # dtype and no-op conversions
    aten.to.dtype: _to,
    aten.to.dtype_layout: _to,
    aten._to_copy.default: _to,
    aten.type_as.default: lambda e, node, x, other: e.cast(x, element_of(other)),
    aten.clone.default: _identity,
    aten.contiguous.default: _identity,
    aten.alias.default: _identity,
    aten.detach.default: _identity,
    aten.dropout.default: _dropout,
    # shapes
    aten.expand.default: _expand,
    aten.permute.default: _permute,
    aten.transpose.int: _transpose,
    aten.t.default: _transpose,
    aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.dim: _squeeze,
    aten.squeeze.dims: _squeeze,
    aten.squeeze.default: _squeeze,
    aten.view.default: _view,
    aten.reshape.default: _view,
    # reductions
    aten.sum.dim_IntList: _reduction(fusion.SumOp),
    aten.sum.default: _sum_all,
    aten.mean.dim: _float_only(_mean),
    aten.mean.default: _float_only(_mean),
    aten.amax.default: _amax_or_amin(fusion.MaxOp),
    aten.amin.default: _amax_or_amin(fusion.MinOp),
    # contractions
    aten.matmul.default: _matmul,
    aten.mm.default: _matmul,
    aten.bmm.default: _matmul,
    aten.linear.default: _linear,
}

IGNORED: frozenset[torch._ops.OpOverload] = frozenset(
    {aten._assert_tensor_metadata.default, aten._assert_scalar.default, aten.sym_constrain_range_for_size.default}
)
"""Checks torch.export records (dtype, shape assertions) that compute nothing: no fusion op."""
