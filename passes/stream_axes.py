"""
Which axis of each value a stream loop iterates, derived only from the ops' axis maps.

A *unit* is what one host loop (or one top-level launch) runs: a bare fusion op or a
`fusion.segment`. Starting from the stream axes of the unit's outputs, every result axis that a
loop iterates is pushed back to the operand axes it comes from (`FusionOp.axis_map`). Operands
left without an axis are passed whole.

Cost: linear in the unit. `propagate_axes` visits each op once, in reverse, and each entry of its
axis map once; the checks visit each op's operands and results once (and each result's uses only
to word an error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from hir.diagnostics import located
from hir.dialects import fusion
from hir.dialects.parallel_encoding import layout_of


@dataclass(frozen=True)
class Iteration:
    """How a unit's loop walks its outputs: one index per element of the axis, or N chunks."""

    chunks: int | None
    """N for `stream(N)`, None for `stream` (one iteration per index)."""
    extent: int
    """The static extent of the iterated output axis, or DYNAMIC_INDEX."""

    @property
    def trip_count(self) -> int:
        """Static number of iterations, or DYNAMIC_INDEX."""
        return self.chunks if self.chunks is not None else self.extent


def unit_ops(unit: Operation) -> list[fusion.FusionOp]:
    """The fusion ops a unit runs, in order."""
    if isinstance(unit, fusion.SegmentOp):
        return unit.inner_ops
    assert isinstance(unit, fusion.FusionOp)
    return [unit]


def unit_outputs(unit: Operation) -> Sequence[SSAValue]:
    """The values a unit produces inside itself for each of its results."""
    if isinstance(unit, fusion.SegmentOp):
        return unit.yield_op.values
    return unit.results


def unit_inputs(unit: Operation) -> Sequence[SSAValue]:
    """The values the unit's ops read from outside (segment block arguments, or the op's operands)."""
    if isinstance(unit, fusion.SegmentOp):
        return unit.body.block.args
    return unit.operands


def iteration_of(unit: Operation) -> Iteration | None:
    """The unit's stream iteration, None when no output is stream-parallel; errors when outputs disagree."""
    layouts = [(r, layout_of(r.type)) for r in unit.results]
    streamed = [(r, lay) for r, lay in layouts if lay.stream_axis is not None]
    if not streamed:
        _check_no_inner_stream_axis(unit)
        return None
    if len(streamed) != len(layouts):
        plain = next(r for r, lay in layouts if lay.stream_axis is None)
        raise PassFailedException(
            located(
                unit,
                f"result #{plain.index} is not stream-parallel but the unit runs in a stream loop: "
                "it cannot be written slice by slice",
            )
        )
    iterations = set()
    for r, lay in streamed:
        assert isinstance(r.type, TensorType)
        assert lay.stream_axis is not None
        iterations.add(Iteration(lay.stream_chunks, r.type.get_shape()[lay.stream_axis]))
    if len(iterations) > 1:
        raise PassFailedException(
            located(unit, "results are stream-parallel over different iteration spaces (two stream axes)")
        )
    return iterations.pop()


def _check_no_inner_stream_axis(unit: Operation) -> None:
    """
    A unit run whole (no stream loop) computes no stream-parallel value that its results depend
    on: that stream axis would be dropped. (A segment without results only holds dead values.)
    """
    if not unit.results:
        return
    for op in unit_ops(unit):
        axis = layout_of(op.results[0].type).stream_axis
        if axis is not None:
            raise PassFailedException(
                located(
                    op,
                    f"{_name(op.results[0])} is stream-parallel on axis {axis}, but no result of its "
                    "segment is, so no stream loop runs the segment: make the results stream-parallel "
                    "or move the op out of the segment",
                )
            )


def propagate_axes(unit: Operation) -> dict[SSAValue, int]:
    """For every value of the unit that the loop iterates, the iterated axis."""
    axes: dict[SSAValue, int] = {}
    for inner, result in zip(unit_outputs(unit), unit.results):
        axis = layout_of(result.type).stream_axis
        assert axis is not None
        _assign(axes, inner, axis, unit)
    for op in reversed(unit_ops(unit)):
        result = op.results[0]
        if result not in axes and not result.uses and (declared := layout_of(result.type).stream_axis) is not None:
            # A dead value (a segment yields only what is used): the loop still runs its op, on its own axis.
            _assign(axes, result, declared, op)
        result_axis = axes.get(result)
        if result_axis is None:
            continue
        for operand_index, operand_axis in op.axis_map()[result_axis]:
            _assign(axes, op.operands[operand_index], operand_axis, op)
    _check_declared_stream_axes(unit, axes)
    if isinstance(unit, fusion.SegmentOp):  # a bare op reads each operand position on its own
        _check_uses(unit, axes)
    return axes


def _assign(axes: dict[SSAValue, int], value: SSAValue, axis: int, where: Operation) -> None:
    previous = axes.setdefault(value, axis)
    if previous != axis:
        raise PassFailedException(
            located(where, f"the stream loop would iterate {_name(value)} over both axis {previous} and axis {axis}")
        )


def _check_declared_stream_axes(unit: Operation, axes: dict[SSAValue, int]) -> None:
    """A value computed inside the unit and declared stream-parallel must be iterated on that axis."""
    for op in unit_ops(unit):
        result = op.results[0]
        declared = layout_of(result.type).stream_axis
        if declared is None or axes.get(result) == declared:
            continue
        consumers = ", ".join(sorted({use.operation.name for use in result.uses}))
        raise PassFailedException(
            located(
                op,
                f"stream axis {declared} of {_name(result)} maps to an axis that its consumer ({consumers}) "
                "reduces or does not iterate, so one loop cannot run both",
            )
        )


def _check_uses(unit: Operation, axes: dict[SSAValue, int]) -> None:
    """
    A value is sliced once per iteration, so every use must read it as the loop slices it: not
    `matmul %x, %x` streamed on M, which needs %x sliced as the left operand and whole as the right.
    """
    for op in unit_ops(unit):
        wanted: list[int | None] = [None] * len(op.operands)
        if (result_axis := axes.get(op.results[0])) is not None:
            for operand_index, operand_axis in op.axis_map()[result_axis]:
                wanted[operand_index] = operand_axis
        for k, (operand, axis) in enumerate(zip(op.operands, wanted)):
            if axes.get(operand) != axis:
                raise PassFailedException(
                    located(
                        op,
                        f"reads {_name(operand)} as operand #{k} {_slicing(axis)}, but another use has the loop "
                        f"read it {_slicing(axes.get(operand))}: copy it (fusion.set) for one of the uses",
                    )
                )


def _slicing(axis: int | None) -> str:
    return "whole" if axis is None else f"sliced on axis {axis}"


def is_broadcast_axis(value: SSAValue, axis: int, iteration: Iteration) -> bool:
    """An extent-1 operand axis under a larger iterated extent: read at index 0 (or whole, for chunks)."""
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()[axis] == 1 and iteration.extent != 1


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"
