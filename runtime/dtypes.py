"""Element types of the IR and their torch dtypes."""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute

_FLOATS: dict[type, torch.dtype] = {
    Float16Type: torch.float16,
    BFloat16Type: torch.bfloat16,
    Float32Type: torch.float32,
    Float64Type: torch.float64,
}
_INTS: dict[int, torch.dtype] = {1: torch.bool, 8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def torch_dtype(element_type: Attribute) -> torch.dtype:
    if (dtype := _FLOATS.get(type(element_type))) is not None:
        return dtype
    if isinstance(element_type, IntegerType) and (dtype := _INTS.get(element_type.width.data)) is not None:
        return dtype
    raise ValueError(f"no torch dtype for element type {element_type}")


def shaped_dtype(t: Attribute) -> torch.dtype:
    assert isinstance(t, TensorType | MemRefType)
    return torch_dtype(t.element_type)


def random_tensor(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str, generator=None
) -> torch.Tensor:
    """Random data for a test input: normal floats, small integers, random booleans (never zeros)."""
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype=dtype, device=device)
    if dtype == torch.bool:
        return (torch.rand(shape, generator=generator) > 0.5).to(device)
    return torch.randint(-8, 9, shape, generator=generator).to(dtype=dtype, device=device)
