"""torch dtypes as the IR's element types."""

from __future__ import annotations

import torch
from torch.fx import Node
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType, Signedness
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
    torch.uint8: IntegerType(8, Signedness.UNSIGNED),  # `ui8`: torch's unsigned arithmetic (mod 256)
}


def element_type(dtype: torch.dtype, node: Node | None = None) -> Attribute:
    """The element type of `dtype`; an error at `node`'s line for a dtype the IR lacks."""
    if dtype not in _ELEMENT_TYPES:
        supported = ", ".join(str(d).removeprefix("torch.") for d in _ELEMENT_TYPES)
        raise located_error(node, f"tensors of {dtype} are not supported (supported: {supported})")
    return _ELEMENT_TYPES[dtype]
