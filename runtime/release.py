"""
Values released after their last use, as eager PyTorch frees a tensor once nothing refers to it.

A function's register file holds every value until the run ends: a lowered model block (one
buffer per launch, no `hir.deallocate`) would hold all its intermediates at once, three to four
times the memory eager torch needs for the same block (docs/runtime.md, "Memory"). So each step of
the function's body is followed by clearing the slots whose values no later op reads: a buffer's
memory goes back to torch's caching allocator when its last reference (the buffer, or a view of
it) is cleared, and the allocator hands it to a later allocation, also inside a CUDA graph's
capture, whose pool then holds what the run holds at its peak.

Only functions that run on one stream and do not communicate: the caching allocator reuses a
freed block for the next allocation on the stream it was allocated on, without waiting for work
that another stream (a pool stream, a collective's) may still have queued on it. Pipelined and
multi-device programs bound their memory by construction instead (a ring of buffers per stream).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from hir.dialects import hir
from hir.runtime.compiler import UNSET, CompileContext, CompiledBlock, Frame, Step

ONE_STREAM_HIR_OPS = (
    hir.AllocateOp,
    hir.DeallocateOp,
    hir.LaunchOp,
    hir.ForOp,
    hir.YieldOp,
    hir.AliasSelectOp,
    hir.AliasChunkOp,
    hir.NumStreamsOp,
    hir.DeviceIndexOp,
)
"""The hir ops a function may hold and still run on the caller's stream alone."""

VIEW_OPS = (hir.AliasSelectOp, hir.AliasChunkOp)
"""Ops whose result shares its operand's memory."""


def runs_on_one_stream(function: func.FuncOp) -> bool:
    """No stream switch, synchronization, communication or symmetric memory: all work on the caller's stream."""
    return all(op.dialect_name() != "hir" or isinstance(op, ONE_STREAM_HIR_OPS) for op in function.walk())


def release_after_last_use(function: func.FuncOp, body: CompiledBlock, compilation: CompileContext) -> CompiledBlock:
    """
    `body` (the function's top-level block, compiled) with each step followed by clearing the
    slots of the values it was the last to read; `body` itself where the function does not run on
    one stream or nothing is released before the end. The function's arguments and the values it
    returns are never cleared.
    """
    if not runs_on_one_stream(function):
        return body
    block = function.body.block
    last_use = _last_uses(body.ops)
    kept = set(block.args)
    if block.last_op is not None and block.last_op not in body.ops:  # the terminator: what the run returns
        kept.update(block.last_op.operands)
    released: list[list[int]] = [[] for _ in body.ops]
    for value, index in last_use.items():
        if value not in kept:
            released[index].append(compilation.slot(value))
    if not any(released):
        return body
    freed = _freed_allocations(body.ops, last_use, kept, compilation)
    steps = [
        _then_release(step, tuple(slots), tuple(freed.get(k, ()))) if slots else step
        for k, (step, slots) in enumerate(zip(body.steps, released, strict=True))
    ]
    return CompiledBlock(body.ops, steps)


def _last_uses(ops: list[Operation]) -> dict[SSAValue, int]:
    """
    Per value that one of `ops` defines, the index of the last of `ops` that reads it (an op
    nested in a loop or a launch counts as the top-level op it is in), or of the op that defines
    it when none does.
    """
    last: dict[SSAValue, int] = {}
    for index, op in enumerate(ops):
        for inner in op.walk():
            for operand in inner.operands:
                if operand in last:
                    last[operand] = index
        for result in op.results:
            last[result] = index
    return last


def _freed_allocations(
    ops: list[Operation], last_use: dict[SSAValue, int], kept: set[SSAValue], compilation: CompileContext
) -> dict[int, list[int]]:
    """
    Per step index, the `hir.allocate` slots whose memory that step's release frees: where the
    last of the buffer and its views is cleared (`--memory-stats` counts the buffer live until
    then). A buffer returned, or viewed by a returned value, stays.
    """
    members: dict[SSAValue, list[SSAValue]] = {}  # an allocation's buffer -> it and its views
    buffer_of: dict[SSAValue, SSAValue] = {}
    for op in ops:
        if isinstance(op, hir.AllocateOp):
            buffer_of[op.results[0]] = op.results[0]
            members[op.results[0]] = [op.results[0]]
        elif isinstance(op, VIEW_OPS) and op.operands[0] in buffer_of:
            buffer = buffer_of[op.results[0]] = buffer_of[op.operands[0]]
            members[buffer].append(op.results[0])
    freed: dict[int, list[int]] = {}
    for buffer, values in members.items():
        if not any(v in kept for v in values):
            freed.setdefault(max(last_use[v] for v in values), []).append(compilation.slot(buffer))
    return freed


def _then_release(step: Step, slots: tuple[int, ...], allocations: tuple[int, ...]) -> Step:
    """The step, then its values' slots cleared (and the allocations they free counted as freed)."""

    def step_then_release(frame: Frame) -> None:
        step(frame)
        env = frame.env
        for slot in slots:
            env[slot] = UNSET
        if allocations and frame.memory_stats is not None:
            for slot in allocations:
                frame.memory_stats.released(slot)

    return step_then_release
