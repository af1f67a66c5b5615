"""
Which axis of each value a stream loop iterates, derived only from the ops' axis maps.

A *unit* is what one host loop (or one top-level launch) runs: a bare fusion op or a
`fusion.segment`. Starting from the stream axes of the unit's outputs, the slice each iteration
takes of every value (a `Slicing`: index i of an axis, or chunk i of N along it) is pushed back
from each result to the operand axes it comes from (`FusionOp.axis_map`), or, where a reshape
splits or merges the iterated axis, to the operand slice the op names (`FusionOp.slice_sources`:
chunk i of the split operand axis, index i of the merged operand axes read as one index).
Operands left without a slice are passed whole.

Cost: linear in the unit. `propagate_axes` visits each op once, in reverse, and each entry of its
axis map once; the checks visit each op's operands and results once (and each result's uses only
to word an error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from hir.diagnostics import located
from hir.dialects import fusion
from hir.dialects.parallel_encoding import layout_of
from hir.dialects.shape_rules import Slicing, SlicingError


@dataclass(frozen=True)
class Iteration:
    """How a unit's loop walks its outputs: one index per element of the axis, or N chunks."""

    chunks: int | None
    """N for `stream(N)`, None for `stream` (one iteration per index)."""
    extent: int
    """The static extent of the iterated output axis, or DYNAMIC_INDEX."""

    @property
    def trip_count(self) -> int:
        """
        Static number of iterations, or DYNAMIC_INDEX. Chunks past the end of a static extent are
        empty and left out: `stream(N)` with N above the extent runs one iteration per non-empty
        chunk, not N (N may be as large as int64).
        """
        if self.chunks is None:
            return self.extent
        if self.extent == DYNAMIC_INDEX:
            return self.chunks
        if self.extent == 0:
            return 0
        size = -(-self.extent // self.chunks)
        return min(self.chunks, -(-self.extent // size))


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


def propagate_axes(unit: Operation) -> dict[SSAValue, Slicing]:
    """For every value of the unit that the loop iterates, the slice each iteration takes of it."""
    axes: dict[SSAValue, Slicing] = {}
    for inner, result in zip(unit_outputs(unit), unit.results):
        layout = layout_of(result.type)
        assert layout.stream_axis is not None
        _assign(axes, inner, Slicing((layout.stream_axis,), layout.stream_chunks), unit)
    for op in reversed(unit_ops(unit)):
        result = op.results[0]
        if result not in axes and not result.uses and (declared := layout_of(result.type)).stream_axis is not None:
            # A dead value (a segment yields only what is used): the loop still runs its op, on its own axis.
            _assign(axes, result, Slicing((declared.stream_axis,), declared.stream_chunks), op)
        result_slicing = axes.get(result)
        if result_slicing is None:
            continue
        for operand, slicing in zip(op.operands, operand_slicings(op, result_slicing)):
            if slicing is not None:
                _assign(axes, operand, slicing, op)
    _check_declared_stream_axes(unit, axes)
    if isinstance(unit, fusion.SegmentOp):  # a bare op reads each operand position on its own
        _check_uses(unit, axes)
    return axes


def operand_slicings(op: fusion.FusionOp, result: Slicing) -> list[Slicing | None]:
    """
    The slice of each operand (None: whole) one iteration needs for its slice `result` of `op`'s
    result: the op's own answer (`slice_sources`, a split or merged reshape axis), else the axis
    map, axis by axis (a chunk of a result axis is a chunk of each source axis).
    """
    try:
        sources = op.slice_sources(result)
    except SlicingError as e:
        raise PassFailedException(located(op, f"cannot run slice by slice: {e}")) from None
    if sources is not None:
        return sources
    axis_map = op.axis_map()
    if len(result.axes) == 1:
        slicings: list[Slicing | None] = [None] * len(op.operands)
        for operand_index, operand_axis in axis_map[result.axis]:
            slicings[operand_index] = Slicing((operand_axis,), result.chunks)
        return slicings
    return _merged_sources(op, result)


def _merged_sources(op: fusion.FusionOp, result: Slicing) -> list[Slicing | None]:
    """
    Several result axes read as one index (a merging reshape downstream): each operand must have
    them all, consecutive and of the same extents (no broadcast), and the op must name no axes.
    """
    axis_map = op.axis_map()
    result_shape = op.results[0].type
    assert isinstance(result_shape, TensorType)
    slicings: list[Slicing | None] = []
    for k, operand in enumerate(op.operands):
        assert isinstance(operand.type, TensorType)
        found = [a for r in result.axes for kk, a in axis_map[r] if kk == k]
        extents = [operand.type.get_shape()[a] for a in found]
        if not found:
            slicings.append(None)
            continue
        consecutive = found == list(range(found[0], found[0] + len(result.axes)))
        if not consecutive or extents != [result_shape.get_shape()[r] for r in result.axes]:
            raise PassFailedException(
                located(
                    op,
                    f"cannot run slice by slice: its result's {result.describe()} (merged by a reshape that "
                    f"consumes it) are not the same consecutive axes of operand #{k}; stream an axis the reshape keeps",
                )
            )
        slicings.append(Slicing(tuple(found)))
    if type(op).properties_without_axes is not fusion.FusionOp.properties_without_axes:
        raise PassFailedException(
            located(
                op,
                f"cannot run slice by slice: its properties name axes, and its result's {result.describe()} "
                "(merged by a reshape that consumes it) cannot be renumbered; stream an axis the reshape keeps",
            )
        )
    return slicings


def _assign(axes: dict[SSAValue, Slicing], value: SSAValue, slicing: Slicing, where: Operation) -> None:
    previous = axes.setdefault(value, slicing)
    if previous != slicing:
        both = f"{previous.describe()} and {slicing.describe()}"
        raise PassFailedException(located(where, f"the stream loop would iterate {_name(value)} over both {both}"))


def _check_declared_stream_axes(unit: Operation, axes: dict[SSAValue, Slicing]) -> None:
    """A value computed inside the unit and declared stream-parallel must be iterated on that axis."""
    for op in unit_ops(unit):
        result = op.results[0]
        declared = layout_of(result.type).stream_axis
        slicing = axes.get(result)
        if declared is None or (slicing is not None and slicing.axes == (declared,)):
            continue
        consumers = ", ".join(sorted({use.operation.name for use in result.uses}))
        raise PassFailedException(
            located(
                op,
                f"stream axis {declared} of {_name(result)} maps to an axis that its consumer ({consumers}) "
                "reduces or does not iterate, so one loop cannot run both",
            )
        )


def _check_uses(unit: Operation, axes: dict[SSAValue, Slicing]) -> None:
    """
    A value is sliced once per iteration, so every use must read it as the loop slices it: not
    `matmul %x, %x` streamed on M, which needs %x sliced as the left operand and whole as the right.
    """
    for op in unit_ops(unit):
        wanted: list[Slicing | None] = [None] * len(op.operands)
        if (result_slicing := axes.get(op.results[0])) is not None:
            wanted = operand_slicings(op, result_slicing)
        for k, (operand, slicing) in enumerate(zip(op.operands, wanted)):
            if axes.get(operand) != slicing:
                raise PassFailedException(
                    located(
                        op,
                        f"reads {_name(operand)} as operand #{k} {_slicing(slicing)}, but another use has the loop "
                        f"read it {_slicing(axes.get(operand))}: copy it (fusion.set) for one of the uses",
                    )
                )


def _slicing(slicing: Slicing | None) -> str:
    return "whole" if slicing is None else f"sliced on {slicing.describe()}"


def is_broadcast_axis(value: SSAValue, slicing: Slicing, iteration: Iteration) -> bool:
    """An extent-1 operand axis under a larger iterated extent: read at index 0 (or whole, for chunks)."""
    assert isinstance(value.type, TensorType)
    return len(slicing.axes) == 1 and value.type.get_shape()[slicing.axis] == 1 and iteration.extent != 1


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"
