"""The torch dtypes of the IR's element types (the table is dialects/shaped_types.py's), random test data."""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Attribute

from hir.dialects.shaped_types import ELEMENT_TYPES, element_type_name


def torch_dtype(element_type: Attribute) -> torch.dtype:
    """The torch dtype of a supported element type (dialects/shaped_types.py: `ELEMENT_TYPES`)."""
    name = element_type_name(element_type)
    if name is None:
        raise ValueError(f"element type {element_type} is not supported (the runtime runs {', '.join(ELEMENT_TYPES)})")
    return getattr(torch, ELEMENT_TYPES[name])


def shaped_dtype(t: Attribute) -> torch.dtype:
    assert isinstance(t, TensorType | MemRefType)
    return torch_dtype(t.element_type)


def random_tensor(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str, generator=None
) -> torch.Tensor:
    """Random data for a test input: normal floats, small integers, uint8 in 0..255, random booleans (never zeros)."""
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype=dtype, device=device)
    if dtype == torch.bool:
        return (torch.rand(shape, generator=generator) > 0.5).to(device)
    if dtype == torch.uint8:  # the whole range, so that wrapping arithmetic is exercised
        return torch.randint(0, 256, shape, generator=generator, dtype=dtype).to(device)
    return torch.randint(-8, 9, shape, generator=generator).to(dtype=dtype, device=device)
