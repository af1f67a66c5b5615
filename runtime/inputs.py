"""Random inputs for a function's (global) input types: seeded, never zeros."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, TensorType
from xdsl.ir import Attribute

from hir.diagnostics import UserError
from hir.runtime.dtypes import random_tensor, shaped_dtype


def random_inputs(types: Sequence[Attribute], seed: int = 0, device: str | torch.device = "cpu") -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    inputs = []
    for i, t in enumerate(types):
        if not isinstance(t, TensorType | MemRefType):
            raise UserError(f"input #{i} has type {t}: pass the inputs with --inputs")
        shape = t.get_shape()
        if DYNAMIC_INDEX in shape:
            raise UserError(f"input #{i} has dynamic extents ({t}): pass the inputs with --inputs")
        dtype = shaped_dtype(t)
        needed, available = math.prod(shape) * dtype.itemsize, memory_of(torch.device(device))
        if needed > available:  # refused up front: an overcommitting host would start writing the pages
            raise UserError(
                f"input #{i} ({t}) cannot be allocated: it needs {needed / 2**30:.1f} GiB, "
                f"the {torch.device(device).type} device has {available / 2**30:.1f} GiB"
            )
        try:
            inputs.append(random_tensor(shape, dtype, device, generator))
        except (RuntimeError, MemoryError) as err:  # more memory than the device has
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UserError(f"input #{i} ({t}) cannot be allocated: {reason}") from None
    return inputs


def memory_of(device: torch.device) -> int:
    """The bytes of memory a device has: the GPU's, or the host's physical memory for the CPU."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no such query here: let the allocator say
        return 2**63
