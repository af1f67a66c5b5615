"""Random inputs for a function's (global) input types: seeded, never zeros."""

from __future__ import annotations

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
        try:
            inputs.append(random_tensor(shape, shaped_dtype(t), device, generator))
        except (RuntimeError, MemoryError) as err:  # more memory than the device has
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UserError(f"input #{i} ({t}) cannot be allocated: {reason}") from None
    return inputs
