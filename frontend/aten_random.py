"""
Ops that draw random numbers, built on `fusion.random` (uniform in [0, 1), or normal): dropout in
training mode and its backward, `rand`/`randn` and their `_like` forms, `bernoulli`, `randint`,
`normal`, `uniform`, `exponential`, `log_normal`, `cauchy`, `geometric`, `random_(to)` and
`F.rrelu` in training mode.

The numbers come from torch's generator at run time (`torch.manual_seed` seeds them), not in
torch's order: a compiled dropout drops other elements than eager's at the same seed, with the
same probability. Dropout keeps an element where a float32 uniform draw is below `1 - p`, and
scales the kept ones by `1 / (1 - p)`, as torch's `native_dropout`; its mask is the backward's.

On a mesh each device would draw its own numbers for a replicated tensor, whose copies would
then differ: there these ops stay an error at the user's line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten, out_element, where
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of, with_shape

F32 = Float32Type()
I1 = IntegerType(1)

_ON_A_MESH = (
    "{op} draws random numbers, which on a mesh each device would draw differently for a tensor "
    "it replicates: set the dropout probabilities to 0 or call model.eval() for a program on a mesh"
)


def draw(e: Emitter, node: Node, distribution: str, like: SSAValue | None, element: Attribute) -> SSAValue:
    """A `fusion.random` of the node's shape (with `like`'s layout, where given) and `element`."""
    if e.on_mesh:
        raise e.error(_ON_A_MESH.format(op=node.target))
    val = node.meta["val"]
    shape = shape_of(like) if like is not None else tuple(val.shape)
    result = with_shape(like.type, shape, element) if like is not None else TensorType(element, shape)
    assert isinstance(result, TensorType)
    return e.emit(fusion.RandomOp(distribution, result))


def _below(e: Emitter, u: SSAValue, bound: SSAValue | float) -> SSAValue:
    """`u < bound` (bound broadcast to u), an i1 tensor with u's layout."""
    bound = e.cast(e._operand(bound, u, element_of(u)), element_of(u))
    u, bound = e.broadcast_pair(u, bound)
    return e.typed(lambda t: fusion.CompareOp("lt", u, bound, t), [u, bound], shape_of(u), I1)


def _dropped(e: Emitter, node: Node, x: SSAValue, p: float) -> tuple[SSAValue, SSAValue]:
    """`(x * keep / (1 - p), keep)` with `keep` true where a uniform draw is below 1 - p (none for p = 1)."""
    if not 0 <= p <= 1:
        raise e.error(f"dropout probability has to be between 0 and 1, but got {p}")
    keep = _below(e, draw(e, node, "uniform", x, F32), 1.0 - p)
    element = element_of(x)
    scaled = e.binary(fusion.MulOp, x, 1.0 / (1.0 - p) if p < 1 else 0.0, element)
    return where(e, node, keep, scaled, 0.0), keep


def _kept(e: Emitter, x: SSAValue) -> SSAValue:
    return e.emit(fusion.FullOp(True, TensorType(I1, shape_of(x))))


def dropout(e: Emitter, node: Node, x: SSAValue, p: float, train: bool | None) -> SSAValue:
    """`torch.dropout(x, p, train)`: x itself where nothing is dropped (eval mode, p = 0)."""
    if not train or not p:
        return x
    return _dropped(e, node, x, p)[0]


def native_dropout(e: Emitter, node: Node, x: SSAValue, p: float, train: bool | None) -> tuple[SSAValue, SSAValue]:
    """`(out, mask)`; `train=None` is training, as in torch's schema."""
    if train is False or not p:
        return x, _kept(e, x)
    return _dropped(e, node, x, p)


def native_dropout_backward(e: Emitter, node: Node, grad: SSAValue, mask: SSAValue, scale: float) -> SSAValue:
    """The gradient where the forward kept the element, times the forward's scale; 0 where it dropped it."""
    return where(e, node, mask, e.binary(fusion.MulOp, grad, scale, element_of(grad)), 0.0)


def _float_element(e: Emitter, node: Node) -> Attribute:
    element = out_element(node)
    if not is_float(element):
        raise e.error(f"{node.target} of {node.meta['val'].dtype}: random numbers of a float type only")
    return element


def _like(x: Any) -> SSAValue | None:
    return x if isinstance(x, SSAValue) else None


def rand(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
    """`torch.rand(size)` / `torch.rand_like(x)`: uniform in [0, 1)."""
    return draw(e, node, "uniform", _like(args[0]) if args else None, _float_element(e, node))


def randn(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
    """`torch.randn(size)` / `torch.randn_like(x)`: standard normal."""
    return draw(e, node, "normal", _like(args[0]) if args else None, _float_element(e, node))


def bernoulli(e: Emitter, node: Node, x: SSAValue, p: Any = None, **kwargs: Any) -> SSAValue:
    """`torch.bernoulli(probs)`, `x.bernoulli(p)` (a number or a tensor): 1 where a uniform draw is below p."""
    probability = x if p is None else p
    if isinstance(probability, SSAValue):
        probability = e.cast(probability, F32)
    hits = _below(e, draw(e, node, "uniform", x, F32), probability)
    return e.cast(hits, out_element(node))


def _randint(e: Emitter, node: Node, low: int, high: int, like: SSAValue | None) -> SSAValue:
    """`low + floor(u * (high - low))` of a uniform draw (in float64 where float32 cannot tell the values apart)."""
    if high <= low:
        raise e.error(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    element = out_element(node)
    wide = Float64Type() if high - low > 1 << 24 else F32
    u = draw(e, node, "uniform", like, wide)
    scaled = e.unary(fusion.FloorOp, e.binary(fusion.MulOp, u, float(high - low), wide))
    return e.cast(e.binary(fusion.AddOp, scaled, float(low), wide), element)


def randint(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
    """`randint(high, size)` / `randint(low, high, size)`."""
    if node.target == aten.randint.low:
        return _randint(e, node, args[0], args[1], None)
    return _randint(e, node, 0, args[0], None)


def randint_like(e: Emitter, node: Node, x: SSAValue, *args: Any, **kwargs: Any) -> SSAValue:
    """`randint_like(x, high)` / `randint_like(x, low, high)`."""
    low, high = (0, args[0]) if len(args) == 1 or not isinstance(args[1], int) else (args[0], args[1])
    return _randint(e, node, low, high, x)


def _affine(e: Emitter, node: Node, u: SSAValue, scale: Any, shift: Any) -> SSAValue:
    """`shift + scale * u`, with numbers or tensors (broadcast) as scale and shift."""
    element = out_element(node)
    return e.binary(fusion.AddOp, e.binary(fusion.MulOp, u, scale, element), shift, element)


def _shape_of_broadcast(values: Sequence[Any]) -> tuple[int, ...]:
    return tuple(torch.broadcast_shapes(*(tuple(shape_of(v)) for v in values if isinstance(v, SSAValue))))


def normal(e: Emitter, node: Node, mean: Any, std: Any = 1.0, *args: Any, **kwargs: Any) -> SSAValue:
    """`torch.normal(mean, std)` with numbers or tensors (and a size where both are numbers)."""
    element = _float_element(e, node)
    like = next(
        (v for v in (mean, std) if isinstance(v, SSAValue) and shape_of(v) == _shape_of_broadcast((mean, std))), None
    )
    return _affine(e, node, draw(e, node, "normal", like, element), std, mean)


def normal_functional(
    e: Emitter, node: Node, x: SSAValue, mean: float = 0.0, std: float = 1.0, **kwargs: Any
) -> SSAValue:
    """`x.normal_(mean, std)` as a new tensor of x's shape."""
    return _affine(e, node, draw(e, node, "normal", x, _float_element(e, node)), std, mean)


def uniform(e: Emitter, node: Node, x: SSAValue, low: float = 0.0, high: float = 1.0, **kwargs: Any) -> SSAValue:
    """`x.uniform_(low, high)` as a new tensor of x's shape."""
    return _affine(e, node, draw(e, node, "uniform", x, _float_element(e, node)), high - low, low)


def exponential(e: Emitter, node: Node, x: SSAValue, lambd: float = 1.0, **kwargs: Any) -> SSAValue:
    """`x.exponential_(lambd)`: `-log(1 - u) / lambd` (1 - u is in (0, 1]: no log of 0)."""
    element = _float_element(e, node)
    u = draw(e, node, "uniform", x, element)
    tail = e.unary(fusion.LogOp, e.binary(fusion.SubOp, 1.0, u, element))
    return e.binary(fusion.MulOp, tail, -1.0 / lambd if lambd else -math.inf, element)


def log_normal(e: Emitter, node: Node, x: SSAValue, mean: float = 1.0, std: float = 2.0, **kwargs: Any) -> SSAValue:
    """`x.log_normal_(mean, std)`: `exp(mean + std * n)` of a normal draw."""
    element = _float_element(e, node)
    return e.unary(fusion.ExpOp, _affine(e, node, draw(e, node, "normal", x, element), std, mean))


def cauchy(e: Emitter, node: Node, x: SSAValue, median: float = 0.0, sigma: float = 1.0, **kwargs: Any) -> SSAValue:
    """`x.cauchy_(median, sigma)`: `median + sigma * tan(pi * (u - 1/2))` (sin / cos: no tan op)."""
    element = _float_element(e, node)
    angle = _affine(e, node, draw(e, node, "uniform", x, element), math.pi, -math.pi / 2)
    tan = e.binary(fusion.DivOp, e.unary(fusion.SinOp, angle), e.unary(fusion.CosOp, angle), element)
    return _affine(e, node, tan, sigma, median)


def geometric(e: Emitter, node: Node, x: SSAValue, p: float, **kwargs: Any) -> SSAValue:
    """`x.geometric_(p)`, the trials to the first success: `floor(log(1 - u) / log(1 - p)) + 1`."""
    if not 0 < p < 1:
        raise e.error(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = draw(e, node, "uniform", x, F32)
    tail = e.unary(fusion.LogOp, e.binary(fusion.SubOp, 1.0, u, F32))  # 1 - u in (0, 1]
    trials = e.unary(fusion.FloorOp, e.binary(fusion.MulOp, tail, 1.0 / math.log1p(-p), F32))
    return e.cast(e.binary(fusion.AddOp, trials, 1.0, F32), out_element(node))


def random_to(e: Emitter, node: Node, x: SSAValue, *args: Any, **kwargs: Any) -> SSAValue:
    """`x.random_(to)` / `x.random_(from, to)`: integers in [from, to) of x's dtype."""
    low, high = (0, args[0]) if node.target == aten.random.to else (args[0], args[1])
    if high is None:
        raise e.error("random_(from, None) draws up to its dtype's largest value: give `to`")
    return _randint(e, node, low, high, x)


def rrelu_with_noise(
    e: Emitter,
    node: Node,
    x: SSAValue,
    noise: SSAValue,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    *args: Any,
    **kwargs: Any,
) -> tuple[SSAValue, SSAValue]:
    """
    `F.rrelu` in training mode, `(out, noise)`: each negative element times a slope drawn uniformly
    in [lower, upper) (its noise, which the backward multiplies by), the others kept (noise 1);
    in eval mode the mean slope, with the noise left as it was.
    """
    element = element_of(x)
    values, zero = e.broadcast_pair(x, e._operand(0.0, x, element))
    negative = e.typed(lambda t: fusion.CompareOp("le", values, zero, t), [values, zero], shape_of(x), I1)
    if not training:
        slope = e.binary(fusion.MulOp, x, (lower + upper) / 2, element)
        return where(e, node, negative, slope, x), noise
    slopes = _affine(e, node, draw(e, node, "uniform", x, element), upper - lower, lower)
    drawn = where(e, node, negative, slopes, 1.0)
    return e.binary(fusion.MulOp, x, drawn, element), drawn


def rrelu_with_noise_backward(
    e: Emitter,
    node: Node,
    grad: SSAValue,
    x: SSAValue,
    noise: SSAValue,
    lower: float,
    upper: float,
    training: bool,
    *args: Any,
) -> SSAValue:
    """The gradient times the forward's noise (training mode), or times the mean slope where x <= 0."""
    element = element_of(grad)
    if training:
        return e.binary(fusion.MulOp, grad, noise, element)
    values, zero = e.broadcast_pair(x, e._operand(0.0, x, element_of(x)))
    negative = e.typed(lambda t: fusion.CompareOp("le", values, zero, t), [values, zero], shape_of(x), I1)
    return where(e, node, negative, e.binary(fusion.MulOp, grad, (lower + upper) / 2, element), grad)


RANDOM_TABLE: dict[Any, Builder] = {
    aten.dropout.default: dropout,
    aten.native_dropout.default: native_dropout,
    aten.native_dropout_backward.default: native_dropout_backward,
    aten.rand.default: rand,
    aten.rand_like.default: rand,
    aten.randn.default: randn,
    aten.randn_like.default: randn,
    aten.bernoulli.default: bernoulli,
    aten.bernoulli.p: bernoulli,
    aten.bernoulli.Tensor: bernoulli,
    aten.randint.default: randint,
    aten.randint.low: randint,
    aten.randint_like.default: randint_like,
    aten.randint_like.low_dtype: randint_like,
    aten.normal.Tensor_float: normal,
    aten.normal.float_Tensor: normal,
    aten.normal.Tensor_Tensor: normal,
    aten.normal.float_float: normal,
    aten.normal_functional.default: normal_functional,
    aten.uniform.default: uniform,
    aten.exponential.default: exponential,
    aten.log_normal.default: log_normal,
    aten.cauchy.default: cauchy,
    aten.geometric.default: geometric,
    aten.random.to: random_to,
    getattr(aten.random, "from"): random_to,  # `from` is a keyword
    aten.rrelu_with_noise_functional.default: rrelu_with_noise,
    aten.rrelu_with_noise_backward.default: rrelu_with_noise_backward,
}
