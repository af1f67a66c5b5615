"""torch dtypes as the IR's element types."""

from __future__ import annotations

import torch
from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType
from xdsl.ir import Attribute

from hir.frontend.errors import located_error

_ELEMENT_TYPES: dict[torch.dtype, Attribute] = {
    torch.float16: Float16Type(),
    torch.bfloat16: BFloat16Type(),
    torch.float32: Float32Type(),
    torch.float64: Float64Type(),
    torch.bool: IntegerType(1),
    torch.int8: IntegerType(8),
    torch.int16: IntegerType(16),
    torch.int32: IntegerType(32),
    torch.int64: IntegerType(64),
}


def input_element_type(dtype: torch.dtype, node: Node | None = None) -> Attribute:
    """
    A program input's element type: uint8 (an image's pixels, which the IR has no type for) is
    passed widened to int16 (`widened`), whose values it holds; an op whose result is uint8 is
    still an error at its line.
    """
    return IntegerType(16) if dtype == torch.uint8 else element_type(dtype, node)


def widened(tensor: torch.Tensor) -> torch.Tensor:
    """A program input as the program takes it: uint8 as int16 (`input_element_type`)."""
    return tensor.to(torch.int16) if tensor.dtype == torch.uint8 else tensor


def element_type(dtype: torch.dtype, node: Node | None = None) -> Attribute:
    """The element type of `dtype`; an error at `node`'s line for a dtype the IR lacks."""
    if dtype not in _ELEMENT_TYPES:
        supported = ", ".join(str(d).removeprefix("torch.") for d in _ELEMENT_TYPES)
        hint = " (a uint8 input is taken, as int16: cast it before computing, `img.float()`)" * (dtype == torch.uint8)
        raise located_error(node, f"tensors of {dtype} are not supported (supported: {supported}){hint}")
    return _ELEMENT_TYPES[dtype]
