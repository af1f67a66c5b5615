"""
Result adoption: a launch whose destination is a fresh buffer takes its kernel's result as that
buffer instead of copying the result into it.

A kernel without an `out=` form (attention and its backward, the norms, softmax) and a segment
run op by op compute a tensor of their own, which the launch then copies into its destination:
one read and one write of the whole result, for nothing, when no one has seen the destination
yet. Where the destination is a `hir.allocate` of the launch's own block (or a view of all of it
that only drops unit axes) that nothing used between the allocation and the launch, on the
stream the allocation ran on (the result is then made where the buffer was made), the launch
rebinds the buffer (and those views) to the result.

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
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from hir.dialects import fusion, hir
from hir.runtime.compiler import Frame
from hir.runtime.memory import overlaps, ranges_meet, storage_range

FRESH_RESULT_KINDS: tuple[type[fusion.FusionOp], ...] = (
    fusion.ScaledDotProductAttentionOp,
    fusion.ScaledDotProductAttentionBackwardOp,
    fusion.ScaledDotProductAttentionStatsBackwardOp,
    fusion.ScaledDotProductAttentionLogsumexpOp,
    fusion.NormFusionOp,
    fusion.NormBackwardFusionOp,
    fusion.SoftmaxOp,
    fusion.MeanOp,
)
"""Ops whose `out=` kernel computes a fresh tensor and copies it into the destination."""

VIEW_KINDS: tuple[type[fusion.FusionOp], ...] = (fusion.PermuteOp, fusion.ReshapeOp, fusion.SliceOp)
"""
Ops whose `out=` kernel copies a view: of a fresh result computed earlier in the launch, the view
may be adopted where contiguous (attention's output with its heads merged back, on the GPU's
fused kernels whose output is laid out [batch, sequence, heads, head_dim]).
"""

CALLERS_STREAM = object()
"""The stream of an op before any stream switch of a function's body: the caller's stream."""

STREAM_SWITCHES: tuple[type[Operation], ...] = (hir.SetCurrentStreamOp, hir.StreamForOp)
"""The ops whose steps make another stream current (a stream loop: its workers, then its `main`)."""


class BlockOrder:
    """
    One walk of a block: each op's position, and the stream current when it runs, as the SSA value
    of the last `hir.set_current_stream` before it (a `hir.get_current_stream` of this block
    resolved to where it ran), CALLERS_STREAM at the top of a function's body, or None where that
    is not known (after an op with stream switches inside it, after a stream loop from another
    stream than the current; at the top of a nested region).
    """

    def __init__(self, block: Block):
        self.position: dict[Operation, int] = {}
        self.stream: dict[Operation, object | None] = {}
        current: object | None = CALLERS_STREAM if isinstance(block.parent_op(), func.FuncOp) else None
        for k, op in enumerate(block.ops):
            self.position[op], self.stream[op] = k, current
            if isinstance(op, hir.SetCurrentStreamOp):
                current = self._resolved(op.stream)
            elif isinstance(op, hir.StreamForOp):
                # After the loop `main` is current, or what was, where it ran no iteration.
                current = current if self._resolved(op.main) is current else None
            elif any(isinstance(inner, STREAM_SWITCHES) for inner in op.walk()):
                current = None

    def _resolved(self, stream: SSAValue) -> object:
        """A stream value, as the stream a `hir.get_current_stream` of this block stands for where it is one."""
        owner = stream.owner
        if isinstance(owner, hir.GetCurrentStreamOp) and owner in self.stream:
            return self.stream[owner]
        return stream

    def outermost(self, op: Operation) -> Operation | None:
        """The op of this block that is `op` or holds it; None outside the block."""
        while op is not None and op not in self.position:
            op = op.parent_op()
        return op


def fresh_chain(launch: hir.LaunchOp, value: SSAValue, order: BlockOrder) -> list[SSAValue] | None:
    """
    Where the launch's destination `value` is a buffer no one has seen before the launch: the
    values from its `hir.allocate` down to `value`, each a `hir.alias_select` of the one before
    along an axis of extent 1 (the whole buffer, a unit axis dropped: a stream loop of one
    iteration leaves such views; a dynamic extent is checked at run time). The allocation is
    plain (not symmetric) and in the launch's block (`order` is that block's); between it and the
    launch nothing else uses these values; and the launch runs on the stream the allocation ran
    on. None where the destination is not fresh.
    """
    chain = [value]
    while isinstance(alias := chain[-1].owner, hir.AliasSelectOp):
        base = alias.buffer.type
        assert isinstance(base, MemRefType)
        if base.get_shape()[alias.axis_value] not in (1, DYNAMIC_INDEX):  # a dynamic one is checked by `adopt`
            return None
        chain.append(alias.buffer)
    allocation = chain[-1].owner
    if not isinstance(allocation, hir.AllocateOp) or allocation.symmetric is not None:
        return None
    if allocation not in order.position or order.position[allocation] > order.position[launch]:
        return None
    stream = order.stream[allocation]
    if stream is None or order.stream[launch] is not stream:
        return None
    views = {v.owner for v in chain[:-1]}
    first, last = order.position[allocation], order.position[launch]
    for v in chain:
        for use in v.uses:
            user = order.outermost(use.operation)
            if user is not None and user is not launch and user not in views and first < order.position[user] < last:
                return None
    return chain[::-1]


def fresh_destinations(launch: hir.LaunchOp, orders: dict[Block, BlockOrder]) -> list[list[SSAValue] | None]:
    """
    `fresh_chain` of each of the launch's outs (an out named twice is never fresh); `orders` holds
    the `BlockOrder` of each block walked so far, made here for the launch's block if missing.
    """
    block = launch.parent_block()
    if block is None:
        return [None] * len(launch.outs)
    if (order := orders.get(block)) is None:
        order = orders[block] = BlockOrder(block)
    outs = list(launch.outs)
    return [fresh_chain(launch, v, order) if outs.count(v) == 1 else None for v in outs]


def input_spans(inputs: Sequence[Any]) -> list[tuple[int, int]]:
    """The storage byte ranges of a launch's tensor operands (`adopt` compares results against them)."""
    return [storage_range(t) for t in inputs if isinstance(t, torch.Tensor)]


def adopt(
    frame: Frame,
    chain: Sequence[int],
    result: torch.Tensor,
    inputs: Sequence[tuple[int, int]],
    adopted: Sequence[torch.Tensor] = (),
) -> bool:
    """
    Makes `result` the buffer of the fresh destination whose `fresh_chain` has the slots `chain`
    (the allocation's first, the launch's out last), where that is the same as copying it there
    (the module docstring's checks); returns whether it did. `inputs` are the storage ranges of
    the launch's operands (`input_spans`, once per run of the launch), `adopted` the results this
    launch adopted before.
    """
    env = frame.env
    if frame.memory_stats is not None or chain[0] in frame.preallocated:
        return False
    destination = env[chain[-1]]
    if (
        result.shape != destination.shape
        or result.dtype != destination.dtype
        or result.device != destination.device
        or not result.is_contiguous()
    ):
        return False
    span = storage_range(result)
    if any(ranges_meet(span, other) for other in inputs):
        return False
    if any(overlaps(result, other) for other in adopted):
        return False
    if any(env[slot].numel() != result.numel() for slot in chain[:-1]):  # a view of part of the buffer
        return False
    for slot in chain[:-1]:  # the allocation and its unit-axis views: the same memory, other shapes
        env[slot] = result.view(env[slot].shape)
    env[chain[-1]] = result
    return True
