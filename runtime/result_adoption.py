"""
Result adoption: a launch whose destination is a fresh buffer takes its kernel's result as that
buffer instead of copying the result into it.

A kernel without an `out=` form (attention and its backward, the norms, softmax) and a segment
run op by op compute a tensor of their own, which the launch then copies into its destination:
one read and one write of the whole result, for nothing, when no one has seen the destination
yet. Where the destination is a `hir.allocate` of the launch's own block that nothing used
between the allocation and the launch, and no stream switch came between them (the result is
then made on the stream the buffer was made on), the launch rebinds the buffer to the result.

What a run checks before it adopts (else it copies, as before): the result has the buffer's
shape, dtype and device and is contiguous, as the fresh buffer was; it shares no storage with
the launch's inputs (a view of an input would make two buffers one) nor memory with a result
already adopted by the same launch; the buffer is not a caller's preallocated output, which
must hold the result; and the run does not count buffer bytes (`hir-run --memory-stats`), which
follows each allocation. The race checker compiles without adoption: it tracks accesses by the
buffer each op names, which adoption would replace under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.ir import Operation, SSAValue

from hir.dialects import fusion, hir
from hir.runtime.compiler import Frame
from hir.runtime.memory import overlaps, ranges_meet, storage_range

FRESH_RESULT_KINDS: tuple[type[fusion.FusionOp], ...] = (
    fusion.ScaledDotProductAttentionOp,
    fusion.ScaledDotProductAttentionBackwardOp,
    fusion.NormFusionOp,
    fusion.NormBackwardFusionOp,
    fusion.SoftmaxOp,
    fusion.MeanOp,
)
"""Ops whose `out=` kernel computes a fresh tensor and copies it into the destination."""

SCAN_LIMIT = 64
"""Ops between an allocation and its launch that `fresh_destination` looks through at most."""


def fresh_destination(launch: hir.LaunchOp, value: SSAValue) -> bool:
    """
    Whether the launch's destination `value` is a buffer no one has seen before the launch: a
    plain `hir.allocate` of the launch's block, with no use of it and no stream switch between.
    """
    allocation = value.owner
    if not isinstance(allocation, hir.AllocateOp) or allocation.symmetric is not None:
        return False
    if allocation.parent_block() is not launch.parent_block():
        return False
    op: Operation | None = allocation.next_op
    for _ in range(SCAN_LIMIT):
        if op is None:
            return False
        if op is launch:
            return True
        for inner in op.walk():
            if isinstance(inner, hir.SetCurrentStreamOp) or value in inner.operands:
                return False
        op = op.next_op
    return False


def fresh_destinations(launch: hir.LaunchOp) -> list[bool]:
    """`fresh_destination` of each of the launch's outs (an out named twice is never fresh)."""
    outs = list(launch.outs)
    return [outs.count(v) == 1 and fresh_destination(launch, v) for v in outs]


def adopt(
    frame: Frame, out: int, result: torch.Tensor, inputs: Sequence[Any], adopted: Sequence[torch.Tensor] = ()
) -> bool:
    """
    Makes `result` the buffer of slot `out` where that is the same as copying it there (the
    module docstring's checks); returns whether it did. `inputs` are the launch's operands,
    `adopted` the results this launch adopted before.
    """
    if frame.memory_stats is not None or out in frame.preallocated:
        return False
    destination = frame.env[out]
    if (
        result.shape != destination.shape
        or result.dtype != destination.dtype
        or result.device != destination.device
        or not result.is_contiguous()
    ):
        return False
    span = storage_range(result)
    if any(isinstance(t, torch.Tensor) and ranges_meet(span, storage_range(t)) for t in inputs):
        return False
    if any(overlaps(result, other) for other in adopted):
        return False
    frame.env[out] = result
    return True
