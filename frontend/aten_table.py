"""
THE table from ATen overloads to fusion ops: `ATEN_TABLE[overload](emitter, node, *args, **kwargs)`
returns the fusion value of the node. Arguments arrive as torch.export records them, with graph
values replaced by fusion values. An overload missing here is an error naming it and the user's
line (frontend/errors.py); an argument a builder cannot honour is an error too, never a guess.

Each op maps to its fusion op; a few are spelled with others where that is exact: unsqueeze is a
broadcast to extent 1, squeeze a sum over axes of extent 1, `x.pow(2)`-style scalars are 0-d
`fusion.full`s broadcast to the operand. The table joins those of aten_composite.py (ops spelled
with several fusion ops), aten_indexing.py (indexing and scans), aten_conv.py (convolutions),
aten_vision.py (group norm, pooling), aten_math.py
(functions of unary ops, unfold), aten_special.py (atan2, erfc, erfinv, lgamma, digamma,
polygamma), aten_scans.py (cummax, logcumsumexp, masked_scatter) and aten_attention.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float64Type, IntegerType, NoneAttr, TensorType
from xdsl.ir import Attribute, SSAValue

from hir.dialects import fusion
from hir.frontend.aten_attention import (
    attention_backward_with_statistics,
    attention_with_statistics,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)
from hir.frontend.aten_bags import BAG_TABLE
from hir.frontend.aten_common import (
    binary,
    dims_of,
    fill_value,
    float_only,
    linear_of_product,
    matmul,
    meta,
    opmath_binary,
    opmath_dtype,
    opmath_element,
    out_element,
    reads_transposed,
    scaled_sum,
    unary,
    where,
)
from hir.frontend.aten_composite import COMPOSITE_TABLE
from hir.frontend.aten_conv import CONV_TABLE
from hir.frontend.aten_indexing import INDEXING_TABLE, TensorIndex, select_at
from hir.frontend.aten_math import MATH_TABLE
from hir.frontend.aten_random import RANDOM_TABLE
from hir.frontend.aten_scans import SCAN_TABLE
from hir.frontend.aten_special import SPECIAL_TABLE
from hir.frontend.aten_vision import VISION_TABLE
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of
from hir.frontend.errors import data_dependent_shape
from hir.frontend.types import element_type

aten = torch.ops.aten
Builder = Callable[..., SSAValue]


def _add_or_sub(kind: type[fusion.BinaryFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, a, b, alpha=1) -> SSAValue:
        element = out_element(node)
        if alpha != 1:
            return scaled_sum(e, kind, a, b, alpha, element)
        return e.binary(kind, a, b, element)

    return build


_ROUNDING: dict[str | None, type[fusion.BinaryFusionOp]] = {
    None: fusion.DivOp,
    "floor": fusion.FloorDivOp,
    "trunc": fusion.TruncDivOp,
}


def _div(e: Emitter, node: Node, a, b, rounding_mode=None) -> SSAValue:
    if rounding_mode not in _ROUNDING:
        raise e.error(f"{node.target}: rounding_mode={rounding_mode!r} is not one of None, 'floor', 'trunc'")
    return opmath_binary(e, _ROUNDING[rounding_mode], a, b, out_element(node))


def _rsub(e: Emitter, node: Node, a, b, alpha=1) -> SSAValue:
    element = out_element(node)
    if alpha != 1:
        return scaled_sum(e, fusion.SubOp, b, a, alpha, element)
    return e.binary(fusion.SubOp, b, a, element)


def _identity(e: Emitter, node: Node, x: SSAValue, *args, **kwargs) -> SSAValue:
    return x


def _random(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
    """Random ops fusion.random does not build (`randperm`, `multinomial`): an error naming the op."""
    raise e.error(f"{node.target} draws random numbers in a way compiled programs do not (a permutation, a sample)")


def _data_dependent(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
    """Ops whose result's shape depends on the input's values (`torch.where(mask)`, `x.nonzero()`)."""
    raise e.error(
        f"{node.target} returns as many values as its input's data selects (a data-dependent shape), which "
        "compiled programs do not have: route every token densely (a mask, one_hot weights, gather) instead"
    )


def _python_value(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue | TensorIndex:
    """
    `.item()`, `.tolist()`, `float(t)`: a tensor's value read into Python while the trace runs,
    an error; but a 0-d integer tensor's only used to index (`x[t]`) is that index.
    """
    index = TensorIndex.of(node, args[0]) if args else None
    if index is not None:
        return index
    raise e.error(
        "the code reads a tensor's value into Python (`.item()`, `.tolist()`, `float(t)`, `int(t)`), which a "
        "program compiled once for every value cannot: keep it a tensor (`x * t.max()`, `torch.where`)"
    )


def _data_dependent_shape(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
    """`torch.bincount`: as many counts as the input's largest value (a data-dependent shape)."""
    raise e.error(data_dependent_shape(str(node.target)))


DATA_DEPENDENT_OPS = (
    aten.nonzero.default,
    aten.masked_select.default,
    aten._unique2.default,
    aten.unique_dim.default,
    aten.unique_consecutive.default,
)

RANDOM_OPS = (aten.randperm.default, aten.multinomial.default)


def _to(e: Emitter, node: Node, x: SSAValue, *args, **kwargs) -> SSAValue:
    val = node.meta["val"]
    if val.device != node.args[0].meta["val"].device:
        raise e.error(f"{node.target}: device moves inside the program are not supported")
    return e.cast(x, element_type(val.dtype, node))


def _gelu(e: Emitter, node: Node, x: SSAValue, approximate: str = "none") -> SSAValue:
    return e.typed(lambda t: fusion.GeluOp(x, approximate, t), [x], shape_of(x), element_of(x))


def _activation_backward(
    e: Emitter, grad: SSAValue, x: SSAValue, element: Attribute, make: Callable[..., fusion.FusionOp]
) -> SSAValue:
    """An activation's backward (`make(grad, x, result_type)`): both operands cast and broadcast as a binary op's."""
    grad, x = e.cast(grad, element), e.cast(x, element)
    grad, x = e.broadcast_pair(grad, x)
    return e.typed(lambda t: make(grad, x, t), [grad, x], shape_of(grad), element)


def _gelu_backward(e: Emitter, node: Node, grad: SSAValue, x: SSAValue, approximate: str = "none") -> SSAValue:
    def make(g: SSAValue, v: SSAValue, t: Attribute) -> fusion.FusionOp:
        return fusion.GeluBackwardOp(g, v, approximate, t)

    return _activation_backward(e, grad, x, out_element(node), make)


def _silu_backward(e: Emitter, node: Node, grad: SSAValue, x: SSAValue) -> SSAValue:
    return _activation_backward(e, grad, x, out_element(node), fusion.SiluBackwardOp)


def _softmax(e: Emitter, node: Node, x: SSAValue, dim: int, dtype_or_half_to_float=None) -> SSAValue:
    """softmax.int's dtype and _softmax's half_to_float both give the result's dtype: x is cast to it first."""
    x = e.cast(x, out_element(node))
    return e.typed(lambda t: fusion.SoftmaxOp(x, dim % len(shape_of(x)), t), [x], shape_of(x), element_of(x))


def _log_softmax(e: Emitter, node: Node, x: SSAValue, dim: int, dtype_or_half_to_float=None) -> SSAValue:
    """
    `x - max - log(sum(exp(x - max)))` along `dim` (the shift keeps exp from overflowing), in the
    result's dtype; a bf16 or f16 one in f32, rounded once, as torch's kernels compute it. torch's
    CPU kernel along the last axis rounds the sum and its log to the result's dtype on the way:
    so does a program captured on CPU, which then gives eager's numbers there.
    """
    element = out_element(node)
    wide = opmath_element(element)
    x = e.cast(x, wide)
    dim %= max(1, len(shape_of(x)))
    shifted = e.binary(fusion.SubOp, x, e.reduce(fusion.MaxOp, x, [dim], keepdim=True), wide)
    total = e.reduce(fusion.SumOp, e.unary(fusion.ExpOp, shifted), [dim], keepdim=True)
    rounds = wide != element and dim == len(shape_of(x)) - 1 and node.meta["val"].device.type == "cpu"
    if rounds:
        total = e.cast(e.cast(total, element), wide)
    log = e.unary(fusion.LogOp, total)
    if rounds:
        log = e.cast(e.cast(log, element), wide)
    return e.cast(e.binary(fusion.SubOp, shifted, log, wide), element)


def _layer_norm(e: Emitter, node: Node, x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn=True) -> SSAValue:
    dims = _trailing(x, normalized_shape)
    element = element_of(x)
    x = _widened_to_parameters(e, x, weight, bias)
    if bias is not None and weight is None:  # the op takes a bias only after a weight
        weight = e.emit(fusion.FullOp(1.0, TensorType(element_of(x), tuple(normalized_shape))))
    operands = [v for v in (x, weight, bias) if v is not None]
    out = e.typed(lambda t: fusion.LayerNormOp(x, weight, bias, dims, eps, t), operands, shape_of(x), element_of(x))
    return e.cast(out, element)


def _rms_norm(e: Emitter, node: Node, x, normalized_shape, weight=None, eps=None) -> SSAValue:
    dims = _trailing(x, normalized_shape)
    if eps is None:  # torch's default: the epsilon of the dtype it computes in (f32 for bf16 and f16)
        eps = torch.finfo(opmath_dtype(node.args[0].meta["val"].dtype)).eps
    element = element_of(x)
    x = _widened_to_parameters(e, x, weight)
    operands = [v for v in (x, weight) if v is not None]
    out = e.typed(lambda t: fusion.RmsNormOp(x, weight, dims, eps, t), operands, shape_of(x), element_of(x))
    return e.cast(out, element)


def _widened_to_parameters(e: Emitter, x: SSAValue, *parameters: SSAValue | None) -> SSAValue:
    """
    A bf16 / f16 input of a norm whose weight is f32 (a linear's output under autocast, before
    an f32 LayerNorm): torch's kernel normalizes it in f32 and rounds the result once to the
    input's dtype, as the norm of the input widened to f32, cast back.
    """
    wide = opmath_element(element_of(x))
    given = [element_of(p) for p in parameters if p is not None]
    return e.cast(x, wide) if wide != element_of(x) and given and given[0] == wide else x


def norm_backward(kind: type[fusion.NormBackwardFusionOp]) -> Builder:
    """`hir::layer_norm_backward` / `hir::rms_norm_backward(grad, x, normalized_shape, weight, eps)`: dx."""

    def build(e: Emitter, node: Node, grad, x, normalized_shape, weight=None, eps=1e-5) -> SSAValue:
        dims = _trailing(x, normalized_shape)
        operands = [v for v in (grad, x, weight) if v is not None]
        return e.typed(lambda t: kind(grad, x, weight, dims, eps, t), operands, shape_of(x), element_of(x))

    return build


def _trailing(x: SSAValue, normalized_shape) -> list[int]:
    rank = len(shape_of(x))
    return list(range(rank - len(normalized_shape), rank))


def _reduction(kind: type[fusion.ReductionFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, x: SSAValue, dims=None, keepdim: bool = False, *, dtype=None) -> SSAValue:
        x = e.cast(x, out_element(node))
        return e.reduce(kind, x, dims_of(x, dims), keepdim)

    return build


def _mean(e: Emitter, node: Node, x: SSAValue, dims=None, keepdim: bool = False, *, dtype=None) -> SSAValue:
    x = e.cast(x, out_element(node))
    return e.reduce(fusion.MeanOp, x, dims_of(x, dims), keepdim)


def _amax_or_amin(kind: type[fusion.ReductionFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, x: SSAValue, dims=(), keepdim: bool = False) -> SSAValue:
        return e.reduce(kind, x, dims_of(x, dims), keepdim)

    return build


def _sum_all(e: Emitter, node: Node, x: SSAValue, *, dtype=None) -> SSAValue:
    x = e.cast(x, out_element(node))
    return e.reduce(fusion.SumOp, x, dims_of(x, None), keepdim=False)


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
    """Adding or dropping axes of extent 1 keeps the other axes (a broadcast, a sum); else fusion.reshape."""
    source = shape_of(x)
    target = tuple(node.meta["val"].shape)
    if source == target:
        return x
    if [d for d in source if d != 1] == [d for d in target if d != 1]:
        if not isinstance(x.type, TensorType) or x.type.encoding == NoneAttr():
            # Without a layout to keep on the other axes: one reshape, a view at run time (a sum
            # over the dropped axes would be a reduction kernel).
            return e.reshape(x, target, f"{node.target}")
        x = e.squeeze(x, [i for i, d in enumerate(source) if d == 1])
        return e.unsqueeze(x, [i for i, d in enumerate(target) if d == 1]) if 1 in target else x
    return e.reshape(x, target, f"{node.target}")


def _flatten(e: Emitter, node: Node, x: SSAValue, *args) -> SSAValue:
    return _view(e, node, x, None)


def _slice(e: Emitter, node: Node, x: SSAValue, dim: int = 0, start=None, end=None, step: int = 1) -> SSAValue:
    shape = shape_of(x)
    dim %= len(shape)
    begin = 0 if start is None else start
    begin = max(0, min(shape[dim], begin + shape[dim] if begin < 0 else begin))
    return _strided(e, node, x, dim, begin, step)


def _narrow(e: Emitter, node: Node, x: SSAValue, dim: int, start: int, length: int) -> SSAValue:
    dim %= len(shape_of(x))
    return _strided(e, node, x, dim, start % shape_of(x)[dim], 1)


def _select(e: Emitter, node: Node, x: SSAValue, dim: int, index: int | TensorIndex) -> SSAValue:
    if isinstance(index, TensorIndex):
        return select_at(e, x, dim, index)
    shape = shape_of(x)
    dim %= len(shape)
    one = _strided(e, node, x, dim, index % shape[dim], 1, keep=True)
    return e.squeeze(one, [dim])


def _strided(e: Emitter, node: Node, x: SSAValue, dim: int, begin: int, step: int, keep: bool = False) -> SSAValue:
    shape = list(shape_of(x))
    if keep:
        shape[dim] = 1
    else:
        shape = list(node.meta["val"].shape)
    if tuple(shape) == shape_of(x):
        return x
    offsets = [begin if k == dim else 0 for k in range(len(shape))]
    strides = [step if k == dim else 1 for k in range(len(shape))]
    return e.typed(lambda t: fusion.SliceOp(x, offsets, strides, t), [x], tuple(shape), element_of(x))


def _cat(e: Emitter, node: Node, xs, dim: int = 0) -> SSAValue:
    element = out_element(node)
    xs = [e.cast(x, element) for x in xs if math.prod(shape_of(x)) or len(xs) == 1]
    if len(xs) == 1:
        return xs[0]
    shape = tuple(node.meta["val"].shape)
    if not xs:  # every piece empty (the gradient of an empty batch's split): the empty result
        return e.emit(fusion.FullOp(fill_value(0, node.meta["val"].dtype), TensorType(element, shape)))
    return e.typed(lambda t: fusion.ConcatOp(xs, dim % len(shape), t), xs, shape, element)


def _compare(predicate: str) -> Builder:
    def build(e: Emitter, node: Node, a, b) -> SSAValue:
        operand = element_type(torch.result_type(*(meta(v, n) for v, n in zip((a, b), node.args))), node)
        a, b = e._operand(a, b, operand), e._operand(b, a, operand)
        a, b = e.cast(a, operand), e.cast(b, operand)
        a, b = e.broadcast_pair(a, b)
        return e.typed(lambda t: fusion.CompareOp(predicate, a, b, t), [a, b], shape_of(a), IntegerType(1))

    return build


def _full(e: Emitter, node: Node, *args, **kwargs) -> SSAValue:
    val = node.meta["val"]
    fill = args[1] if node.target in (aten.full.default, aten.full_like.default) else 0.0
    if node.target in (aten.ones.default, aten.ones_like.default):
        fill = 1.0
    return e.emit(
        fusion.FullOp(fill_value(fill, val.dtype), TensorType(element_type(val.dtype, node), tuple(val.shape)))
    )


def _pow(e: Emitter, node: Node, x, exponent) -> SSAValue:
    element = out_element(node)
    if not is_float(element) and node.target == aten.pow.Scalar and type(x) is int:
        # `2 ** n` of integers (ldexp's backward): in f64, exact below 2^53; the cast back truncates
        # a negative power to 0, as torch's integer pow does
        wide = Float64Type()
        return e.cast(e.binary(fusion.PowOp, float(x), e.cast(exponent, wide), wide), element)
    if not is_float(element):
        # Integers: a small non-negative whole exponent as products (`(i - j) ** 2`), exact as torch's.
        if node.target != aten.pow.Tensor_Scalar or isinstance(exponent, bool) or not isinstance(exponent, int):
            raise e.error(f"{node.target} on {node.meta['val'].dtype} tensors: fusion computes it on floats only")
        if not 0 <= exponent <= 16:
            raise e.error(f"{node.target} of integers: only whole exponents 0 to 16 (products), got {exponent}")
        x = e.cast(x, element)
        result = e.broadcast_to(e.constant(1, element), shape_of(x))
        for _ in range(exponent):
            result = e.binary(fusion.MulOp, result, x, element)
        return result
    if node.target == aten.pow.Tensor_Scalar and type(exponent) in (int, float) and element != Float16Type():
        spelled = _torchs_power(e, e.cast(x, element), float(exponent), element)
        if spelled is not None:
            return spelled
    return e.binary(fusion.PowOp, x, exponent, element)


def _torchs_power(e: Emitter, x: SSAValue, exponent: float, element: Attribute) -> SSAValue | None:
    """
    `x ** p` of an f32, f64 or bf16 tensor as torch's kernel spells these exponents (f16's is a
    pow): `sqrt`, `rsqrt`, `reciprocal`, `x * x`, `x * x * x`, `1 / (x * x)`, each op rounded to
    the dtype. A pow differs where they do: `(-inf) ** 0.5` is NaN, `(-0.0) ** 0.5` is -0.0, and
    the products are an ulp off a pow.
    """
    unary = {0.5: fusion.SqrtOp, -0.5: fusion.RsqrtOp, -1.0: fusion.ReciprocalOp}.get(exponent)
    if unary is not None:
        return e.unary(unary, x)
    if exponent not in (2.0, 3.0, -2.0):
        return None
    square = e.binary(fusion.MulOp, x, x, element)
    if exponent == 3.0:
        return e.binary(fusion.MulOp, square, x, element)
    return square if exponent == 2.0 else e.unary(fusion.ReciprocalOp, square)


def _linear(e: Emitter, node: Node, x: SSAValue, w: SSAValue, bias: SSAValue | None = None) -> SSAValue:
    shape = tuple(node.meta["val"].shape)
    element = out_element(node)
    if bias is not None and element in _HALF and not _linear_adds_bias_inside(node, len(shape_of(bias))):
        # torch's F.linear of such an input is a matmul, then an add: two roundings of a bf16 or
        # f16 result, where the fused op's one rounding is an ulp off eager's.
        y = e.typed(lambda t: fusion.LinearOp(x, w, None, t), [x, w], shape, element)
        return e.binary(fusion.AddOp, y, bias, element)
    operands = [x, w] if bias is None else [x, w, bias]
    return e.typed(lambda t: fusion.LinearOp(x, w, bias, t), operands, shape, element)


_HALF = (BFloat16Type(), Float16Type())


def _linear_adds_bias_inside(node: Node, bias_rank: int) -> bool:
    """
    Whether torch's `at::linear` adds the bias inside its GEMM (`addmm`): for a 2-D input, and
    for a contiguous one of more axes (folded into rows), by eager's strides as the trace
    recorded them; a transposed or permuted input (an MLP-Mixer's token mixing, a ConvNeXt's
    channels-last MLP) goes through `matmul`, then `add_`.
    """
    x = node.args[0].meta["val"]  # type: ignore[union-attr]
    return x.dim() == 2 or (x.is_contiguous() and (x.dim() == 3 or bias_rank == 1))


def _mm(e: Emitter, node: Node, a: SSAValue, b: SSAValue) -> SSAValue:
    """`mm(x, t(w))`, a linear as autograd records it: one fusion.linear; any other product, a matmul."""
    if reads_transposed(b) and len(shape_of(a)) == 2 and element_of(a) == element_of(b):
        return linear_of_product(e, node, a, b)
    return matmul(e, node, a, b)


ATEN_TABLE: dict[torch._ops.OpOverload, Builder] = {
    # elementwise arithmetic (scalar operands become 0-d fusion.full constants)
    aten.add.Tensor: _add_or_sub(fusion.AddOp),
    aten.add.Scalar: _add_or_sub(fusion.AddOp),
    aten.sub.Tensor: _add_or_sub(fusion.SubOp),
    aten.sub.Scalar: _add_or_sub(fusion.SubOp),
    aten.rsub.Scalar: _rsub,
    aten.rsub.Tensor: _rsub,
    aten.mul.Tensor: binary(fusion.MulOp),
    aten.mul.Scalar: binary(fusion.MulOp),
    aten.div.Tensor: _div,
    aten.div.Scalar: _div,
    aten.div.Tensor_mode: _div,
    aten.maximum.default: binary(fusion.MaximumOp),
    aten.minimum.default: binary(fusion.MinimumOp),
    aten.floor_divide.default: lambda e, node, a, b: _div(e, node, a, b, "floor"),
    aten.floor_divide.Scalar: lambda e, node, a, b: _div(e, node, a, b, "floor"),
    aten.remainder.Tensor: binary(fusion.RemainderOp),
    aten.remainder.Scalar: binary(fusion.RemainderOp),
    aten.fmod.Tensor: binary(fusion.FmodOp),
    aten.fmod.Scalar: binary(fusion.FmodOp),
    aten.pow.Tensor_Scalar: _pow,
    aten.pow.Tensor_Tensor: float_only(_pow),
    aten.pow.Scalar: _pow,
    aten.square.default: lambda e, node, x: _pow(e, node, x, 2),
    aten.neg.default: unary(fusion.NegOp),
    aten.abs.default: unary(fusion.AbsOp),
    aten.relu.default: unary(fusion.ReluOp),
    aten.exp.default: float_only(unary(fusion.ExpOp)),
    aten.log.default: float_only(unary(fusion.LogOp)),
    aten.log1p.default: float_only(unary(fusion.Log1pOp)),
    aten.expm1.default: float_only(unary(fusion.Expm1Op)),
    aten.sign.default: unary(fusion.SignOp),
    aten.sin.default: float_only(unary(fusion.SinOp)),
    aten.cos.default: float_only(unary(fusion.CosOp)),
    aten.erf.default: float_only(unary(fusion.ErfOp)),
    aten.tanh.default: float_only(unary(fusion.TanhOp)),
    aten.sqrt.default: float_only(unary(fusion.SqrtOp)),
    aten.rsqrt.default: float_only(unary(fusion.RsqrtOp)),
    aten.reciprocal.default: float_only(unary(fusion.ReciprocalOp)),
    # activations and normalizations
    aten.sigmoid.default: float_only(unary(fusion.SigmoidOp)),
    aten.silu.default: float_only(unary(fusion.SiluOp)),
    aten.gelu.default: float_only(_gelu),
    aten.gelu_backward.default: float_only(_gelu_backward),
    aten.silu_backward.default: float_only(_silu_backward),
    aten.softmax.int: float_only(_softmax),
    aten._softmax.default: float_only(_softmax),
    aten.log_softmax.int: float_only(_log_softmax),
    aten._log_softmax.default: float_only(_log_softmax),
    aten.layer_norm.default: float_only(_layer_norm),
    aten.rms_norm.default: float_only(_rms_norm),
    # comparisons and selection (-> i1)
    aten.eq.Tensor: _compare("eq"),
    aten.eq.Scalar: _compare("eq"),
    aten.ne.Tensor: _compare("ne"),
    aten.ne.Scalar: _compare("ne"),
    aten.lt.Tensor: _compare("lt"),
    aten.lt.Scalar: _compare("lt"),
    aten.le.Tensor: _compare("le"),
    aten.le.Scalar: _compare("le"),
    aten.gt.Tensor: _compare("gt"),
    aten.gt.Scalar: _compare("gt"),
    aten.ge.Tensor: _compare("ge"),
    aten.ge.Scalar: _compare("ge"),
    aten.where.self: where,
    aten.where.ScalarSelf: where,
    aten.where.ScalarOther: where,
    aten.where.Scalar: where,
    # constants
    aten.full.default: _full,
    aten.full_like.default: _full,
    aten.zeros.default: _full,
    aten.zeros_like.default: _full,
    aten._efficientzerotensor.default: _full,  # a backward's zeros (torch.sign's)
    aten.ones.default: _full,
    aten.ones_like.default: _full,
    # dtype and no-op conversions
    aten.to.dtype: _to,
    aten.to.dtype_layout: _to,
    aten._to_copy.default: _to,
    aten.type_as.default: lambda e, node, x, other: e.cast(x, element_of(other)),
    aten.clone.default: _identity,
    aten.contiguous.default: _identity,
    aten.alias.default: _identity,
    aten.detach.default: _identity,
    aten.lift_fresh_copy.default: _identity,
    **dict.fromkeys(RANDOM_OPS, _random),
    **RANDOM_TABLE,
    **dict.fromkeys(DATA_DEPENDENT_OPS, _data_dependent),
    aten._local_scalar_dense.default: _python_value,
    aten.bincount.default: _data_dependent_shape,
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
    aten._unsafe_view.default: _view,
    aten.flatten.using_ints: _flatten,
    aten.slice.Tensor: _slice,
    aten.narrow.default: _narrow,
    aten.narrow_copy.default: _narrow,
    aten.select.int: _select,
    aten.cat.default: _cat,
    # reductions
    aten.sum.dim_IntList: _reduction(fusion.SumOp),
    aten.sum.default: _sum_all,
    aten.mean.dim: float_only(_mean),
    aten.mean.default: float_only(_mean),
    aten.amax.default: _amax_or_amin(fusion.MaxOp),
    aten.amin.default: _amax_or_amin(fusion.MinOp),
    # contractions
    aten.matmul.default: matmul,
    aten.mm.default: _mm,
    aten.bmm.default: matmul,
    aten.linear.default: _linear,
    aten.scaled_dot_product_attention.default: scaled_dot_product_attention,
    **INDEXING_TABLE,
    **CONV_TABLE,
    **VISION_TABLE,
    **MATH_TABLE,
    **SPECIAL_TABLE,
    **SCAN_TABLE,
    **BAG_TABLE,
    **COMPOSITE_TABLE,
}

FFT_OPS = frozenset({aten._fft_r2c.default, aten._fft_c2c.default, aten._fft_c2r.default})
"""torch.fft's ops (FNet's mixing, an STFT): fusion has no Fourier transform; an error at the user's line."""

IGNORED: frozenset[torch._ops.OpOverload] = frozenset(
    {
        aten._assert_tensor_metadata.default,
        aten._assert_scalar.default,
        aten._assert_async.default,
        aten._assert_async.msg,
        aten.sym_constrain_range_for_size.default,
        aten._linalg_check_errors.default,
    }
)
"""Checks torch.export records (dtype, shape assertions) that compute nothing: no fusion op."""


TRAINING_OPS_TABLE: dict[torch._ops.OpOverload, Builder] = {
    torch.ops.hir.attention.default: scaled_dot_product_attention,
    torch.ops.hir.attention_backward.default: scaled_dot_product_attention_backward,
    torch.ops.hir.attention_stats.default: attention_with_statistics,
    torch.ops.hir.attention_stats_backward.default: attention_backward_with_statistics,
    torch.ops.hir.layer_norm.default: float_only(_layer_norm),
    torch.ops.hir.layer_norm_backward.default: float_only(norm_backward(fusion.LayerNormBackwardOp)),
    torch.ops.hir.rms_norm.default: float_only(_rms_norm),
    torch.ops.hir.rms_norm_backward.default: float_only(norm_backward(fusion.RmsNormBackwardOp)),
}
"""The ops a traced training step records for attention and norms (frontend/training_ops.py)."""
