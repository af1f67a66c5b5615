"""
The autocast regions around a call (`with torch.autocast("cpu", dtype=torch.bfloat16):`): a
compiled function runs programs traced in its own call's regions, as eager casts by the region
it runs in, never the programs of the first call's regions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

AUTOCAST_DEVICES = ("cpu", "cuda")

Regions = tuple[tuple[str, torch.dtype], ...]


def autocast_state() -> Regions:
    """
    The autocast regions around a call, as (device type, dtype) pairs; () outside any. A program
    traced inside one returns bf16 where eager returns bf16, one traced outside f32: an evaluation
    pass outside the region after training inside it would get bf16 results, and the reverse f32.
    """
    if not torch._C._is_any_autocast_enabled():  # the usual case: one check per call
        return ()
    return tuple((d, torch.get_autocast_dtype(d)) for d in AUTOCAST_DEVICES if torch.is_autocast_enabled(d))


@contextmanager
def exported_in(module: torch.nn.Module, regions: Regions) -> Iterator[None]:
    """
    While torch.export captures `module`: the call's autocast regions entered inside its forward,
    where the trace records their casts, and none around it (an ambient region is seen only in
    part: the export gave `aten.linear` a bf16 result of f32 operands, without the casts).
    """
    if not regions:
        yield
        return
    own = module.__dict__.get("forward")
    original = module.forward

    @functools.wraps(original)
    def forward(*args: Any, **kwargs: Any) -> Any:
        with ExitStack() as inside:
            for device, dtype in regions:
                inside.enter_context(torch.autocast(device, dtype=dtype))
            return original(*args, **kwargs)

    module.forward = forward
    try:
        with ExitStack() as around:
            for device, _ in regions:
                around.enter_context(torch.autocast(device, enabled=False))
            yield
    finally:
        if own is None:
            del module.forward
        else:
            module.forward = own
