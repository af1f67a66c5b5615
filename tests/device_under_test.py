"""
Where the numeric tests run the lowered programs: CPU by default, or a GPU with real streams when
HIR_TEST_DEVICE=cuda. On a GPU every pool stream and the caller's stream start with a long sleep
(torch.cuda._sleep) and the outputs are copied on the caller's stream right after the run, so a
missing or misplaced hir.synchronize gives a wrong answer instead of passing by luck. Either way
the run is race-checked (runtime/race_check.py): a missing synchronization fails on CPU too.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

import hir
from hir.runtime.device import streams_for

DEVICE = os.environ.get("HIR_TEST_DEVICE", "cpu")
SLEEP_CYCLES = 20_000_000  # ~10 ms on an H100/H200: far longer than any kernel of these tests


def execute_lowered(
    module: ModuleOp,
    inputs: list[Any],
    *,
    entry: str = "main",
    num_streams: int = 4,
    outputs: list[torch.Tensor | None] | None = None,
    device_name: str = DEVICE,
) -> list[Any]:
    """
    Runs a lowered (hir) module on DEVICE (or `device_name`); results come back on the CPU.
    Preallocated `outputs` (on the CPU) are passed on as they are on the CPU; on a GPU, copies on
    the device are, and the results are copied back into them.
    """
    if device_name == "cpu":
        return hir.execute(module, inputs, entry=entry, num_streams=num_streams, race_check=True, outputs=outputs)
    device = torch.device(device_name)
    on_device = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    outputs_on_device = None if outputs is None else [o.to(device) if o is not None else None for o in outputs]
    pool = streams_for(device)
    torch.cuda.synchronize()
    for k in range(num_streams + 1):  # the compute streams and a comm stream
        with torch.cuda.stream(pool.pool(k)):
            torch.cuda._sleep(SLEEP_CYCLES)
    caller = torch.cuda.Stream(device)
    with torch.cuda.stream(caller):
        torch.cuda._sleep(SLEEP_CYCLES // 4)
        results = hir.execute(
            module, on_device, entry=entry, num_streams=num_streams, race_check=True, outputs=outputs_on_device
        )
        copies = [o.clone() if isinstance(o, torch.Tensor) else o for o in results]
    torch.cuda.synchronize()
    for given, seen in zip(inputs, on_device):  # let the caller check its inputs were only read
        if isinstance(given, torch.Tensor) and not _overlaps_itself(given):
            given.copy_(seen)
    back = [c.cpu() if isinstance(c, torch.Tensor) else c for c in copies]
    for k, out in enumerate(outputs or []):
        if out is not None:
            back[k] = out.copy_(back[k])
    return back


def _overlaps_itself(t: torch.Tensor) -> bool:
    """An expanded view (stride 0), which torch cannot copy into."""
    return any(stride == 0 and extent > 1 for stride, extent in zip(t.stride(), t.shape))
