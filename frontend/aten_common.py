"""
What the ATen builders share (frontend/aten_table.py, aten_composite.py, aten_indexing.py): the
result's element type, dims, and the builders other builders call (where, matmul, scalar fills).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.dialects.syntax import array_values
from hir.frontend.emitter import Emitter, element_of, is_float, shape_of
from hir.frontend.types import element_type

aten = torch.ops.aten
Builder = Callable[..., Any]


def out_element(node: Node, index: int | None = None):
    """The result's element type (of output `index`, or the first, for an op with several)."""
    val = node.meta["val"]
    if isinstance(val, list | tuple):
        val = val[index or 0]
    return element_type(val.dtype, node)


def no_options(e: Emitter, node: Node, kwargs: dict) -> None:
    if kwargs:
        raise e.error(f"{node.target}: arguments {sorted(kwargs)} are not supported")


def binary(kind: type[fusion.BinaryFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, a, b, **kwargs) -> SSAValue:
        no_options(e, node, kwargs)
        return opmath_binary(e, kind, a, b, out_element(node))

    return build


_OPMATH = {BFloat16Type(): torch.bfloat16, Float16Type(): torch.float16}


def opmath_element(element: Any) -> Any:
    """The element type torch's kernels compute a result of `element` in: f32 for bf16 and f16, else itself."""
    return Float32Type() if element in _OPMATH else element


def opmath_dtype(dtype: torch.dtype) -> torch.dtype:
    """`opmath_element` of a torch dtype."""
    return torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype


_DIVISIONS = (fusion.DivOp, fusion.FloorDivOp, fusion.TruncDivOp)


def opmath_binary(e: Emitter, kind: type[fusion.BinaryFusionOp], a: Any, b: Any, element: Any) -> SSAValue:
    """
    `a OP b` as torch computes a bf16 or f16 tensor times, or over, a Python number (or a 0-d tensor
    of a wider float): in f32 with the number as it is, rounded once to the result's dtype. Where
    the number is not exact in that dtype (`x * 0.125` is, `x / math.sqrt(8)` is not), the operands
    are cast to f32 and the result back. Other ops round the number to the result's dtype first, as
    torch's `add` and `sub` do.
    """
    dtype = _OPMATH.get(element)
    numbers = (a, b) if kind is fusion.MulOp else (b,) if kind in _DIVISIONS else ()
    if dtype is None or not any(_inexact(v, dtype) for v in numbers):
        return e.binary(kind, a, b, element)
    wide = Float32Type()
    a, b = (e.cast(v, wide) if isinstance(v, SSAValue) else v for v in (a, b))
    return e.cast(e.binary(kind, a, b, wide), element)


def scaled_sum(e: Emitter, kind: type[fusion.BinaryFusionOp], a: Any, b: Any, alpha: Any, element: Any) -> SSAValue:
    """
    `a + alpha * b` (`kind` add or sub), one op in torch: for a bf16 or f16 result, computed in f32
    with alpha (and a Python number operand) rounded to the result's dtype, and rounded once.
    """
    dtype = _OPMATH.get(element)
    if dtype is None:
        return e.binary(kind, a, e.binary(fusion.MulOp, b, alpha, element), element)
    wide = Float32Type()
    alpha, a, b = (
        e.cast(v, wide) if isinstance(v, SSAValue) else torch.tensor(v, dtype=dtype).item() for v in (alpha, a, b)
    )
    return e.cast(e.binary(kind, a, e.binary(fusion.MulOp, b, alpha, wide), wide), element)


def _inexact(value: Any, dtype: torch.dtype) -> bool:
    """A Python number that `dtype` rounds, or a 0-d tensor of a wider float type."""
    if isinstance(value, SSAValue):
        return shape_of(value) == () and element_of(value) in (Float32Type(), Float64Type())
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return torch.tensor(value, dtype=dtype).item() != value


def unary(kind: type[fusion.UnaryFusionOp]) -> Builder:
    def build(e: Emitter, node: Node, x: SSAValue) -> SSAValue:
        element = out_element(node)
        return e.unary(kind, e.cast(x, element))

    return build


def dims_of(x: SSAValue, dims) -> list[int]:
    rank = len(shape_of(x))
    if dims is None or (isinstance(dims, list | tuple) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return [d % rank for d in dims]


def where(e: Emitter, node: Node, condition, a, b) -> SSAValue:
    element = out_element(node)
    a, b = (v if isinstance(v, SSAValue) else e.constant(v, element) for v in (a, b))  # scalars: 0-d constants
    a, b = e.cast(a, element), e.cast(b, element)
    # The operands' own shapes: on a mesh they are the fusion forms ([D, S, D, R, N/D] ...), not
    # the logical shape torch recorded.
    shape = tuple(torch.broadcast_shapes(*(tuple(shape_of(v)) for v in (condition, a, b))))
    like = next((v for v in (a, b, condition) if shape_of(v) == shape), None)
    condition, a, b = (e.broadcast_to(v, shape, like) for v in (condition, a, b))
    return e.typed(lambda t: fusion.WhereOp(condition, a, b, t), [condition, a, b], shape, element)


def meta(value: Any, arg: Any) -> Any:
    """What torch.result_type takes: the argument's fake tensor, or the Python scalar itself."""
    return arg.meta["val"] if isinstance(arg, Node) else value


def fill_value(value: Any, dtype: torch.dtype) -> int | float | bool:
    """The fill value in the tensor's kind of number (`torch.zeros(.., dtype=torch.long)` fills 0, not 0.0)."""
    if dtype == torch.bool:
        return bool(value)
    return float(value) if dtype.is_floating_point else int(value)


def matmul(e: Emitter, node: Node, a: SSAValue, b: SSAValue) -> SSAValue:
    shape = tuple(node.meta["val"].shape)
    return e.typed(lambda t: fusion.MatmulOp(a, b, t), [a, b], shape, out_element(node))


def linear_of_product(e: Emitter, node: Node, a: SSAValue, b: SSAValue, bias: SSAValue | None = None) -> SSAValue:
    """
    `a @ b (+ bias)` as one fusion.linear of the weight `b^T`, as `F.linear` runs it: autograd
    records a linear as `mm(x, t(w))` or `addmm(bias, x, t(w))`, whose `t(w)` is a [1, 0] permute
    of `w` itself (read through); another `b` is transposed by a view.
    """
    w = b.owner.operands[0] if reads_transposed(b) else e.permute(b, [1, 0])  # type: ignore[union-attr]
    operands = [a, w] if bias is None else [a, w, bias]
    shape = tuple(node.meta["val"].shape)
    return e.typed(lambda t: fusion.LinearOp(a, w, bias, t), operands, shape, element_of(a))


def reads_transposed(b: SSAValue) -> bool:
    """Whether `b` is a [1, 0] fusion.permute of another value (a weight's `t(w)`)."""
    owner = b.owner
    return isinstance(owner, fusion.PermuteOp) and list(array_values(owner.properties["perm"])) == [1, 0]


def float_only(builder: Builder) -> Builder:
    def build(e: Emitter, node: Node, *args, **kwargs) -> SSAValue:
        if not is_float(out_element(node)):
            raise e.error(f"{node.target} on {node.meta['val'].dtype} tensors: fusion computes it on floats only")
        return builder(e, node, *args, **kwargs)

    return build


def truth(e: Emitter, x: SSAValue) -> SSAValue:
    if element_of(x) == IntegerType(1):
        return x
    zero = e.broadcast_to(e.constant(0, element_of(x)), shape_of(x))
    return e.typed(lambda t: fusion.CompareOp("ne", x, zero, t), [x, zero], shape_of(x), IntegerType(1))


def concat(e: Emitter, parts: list[SSAValue], dim: int) -> SSAValue:
    """`parts` joined along `dim` (one part: itself)."""
    if len(parts) == 1:
        return parts[0]
    shape = list(shape_of(parts[0]))
    shape[dim] = sum(shape_of(p)[dim] for p in parts)
    return e.typed(lambda t: fusion.ConcatOp(parts, dim, t), parts, tuple(shape), element_of(parts[0]))
