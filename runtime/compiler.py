"""
The runtime's core: a function body is compiled once into a list of Python closures ("steps")
over a flat register file, then run as often as needed.

Why not xDSL's `Interpreter`: its per-op dispatch (scoped environment, listener loop, result
checks) costs tens of microseconds of host time per op, more than launching a small CUDA kernel,
and the host loop of a stream pipeline runs about 12 hir ops per chunk (4 in the fork loop, 8 in
the main loop). A step reads its operands from fixed slots and costs a tenth of a microsecond
(docs/runtime.md has the measurement). The structure still mirrors xDSL's: one module of
implementations per dialect (`std_ops`, `fusion_ops`, `hir_ops`), each with its own table of
step compilers filled by `@compiles(...)`; `executor` joins the tables it compiles with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from hir.diagnostics import LocatedError, location_of
from hir.runtime.communicator import Communicator
from hir.runtime.memory_stats import MemoryStats
from hir.runtime.streams import Streams


class _Unset:
    def __repr__(self) -> str:
        return "<never produced>"


UNSET: Any = _Unset()


@dataclass(slots=True)  # steps read its fields on every op: slots are faster to read than a dict
class Frame:
    """The state of one run: the register file and what the ops need from the outside."""

    env: list[Any]
    device: torch.device
    streams: Streams
    num_streams: int
    communicator: Communicator | None = None
    preallocated: dict[int, torch.Tensor] = field(default_factory=dict)
    """Allocate-result slot -> the caller's output buffer to use instead."""
    slots: dict[SSAValue, int] = field(default_factory=dict)
    """For error messages: which slot holds which value."""
    memory_stats: MemoryStats | None = None
    """Counts the bytes the run's `hir.allocate`s hold (`hir-run --memory-stats`)."""
    poison: bool = False
    """Fresh buffers start as NaN or a sentinel (runtime/poison.py)."""


Step = Callable[[Frame], None]
StepCompiler = Callable[[Any, "CompileContext"], Step]
"""Compiles one op (of the classes it is registered for) into a step."""


class StepCompilers(dict[type[Operation], StepCompiler]):
    """Which function compiles each op class: one table per dialect module (`COMPILERS` there)."""

    def compiles(self, *op_types: type[Operation]) -> Callable[[StepCompiler], StepCompiler]:
        """Registers the decorated function as the step compiler of ops of these types."""

        def register(fn: StepCompiler) -> StepCompiler:
            for t in op_types:
                self[t] = fn
            return fn

        return register


@dataclass
class CompiledBlock:
    ops: list[Operation]
    steps: list[Step]

    def run(self, frame: Frame) -> None:
        index = 0
        try:
            for index, step in enumerate(self.steps):  # noqa: B007 (index names the failing op)
                step(frame)
        except LocatedError:
            raise
        except Exception as err:
            raise LocatedError(self.ops[index], describe_failure(self.ops[index], frame, err)) from err


class CompileContext:
    """
    The compilation of one function: a slot for every SSA value (shared by nested regions), and
    the step compilers to compile its ops with. With `profile`, the step of every fusion and hir
    op runs inside a profiler range named after the op (`in_profiler_range`).
    """

    def __init__(self, compilers: Mapping[type[Operation], StepCompiler], *, profile: bool = False) -> None:
        self.compilers = compilers
        self.profile = profile
        self.slots: dict[SSAValue, int] = {}
        self.adopts_results = True
        """Whether a launch may take its kernel's result as a fresh destination (runtime/result_adoption.py)."""
        self.block_orders: dict[Block, Any] = {}
        """Result adoption's walk of each block (`BlockOrder`), made once per block, not per launch."""
        self.constant_storages: set[int] = set()
        """
        The storages of the constants a launch's body makes once per device and keeps
        (runtime/fusion_ops.py): no launch adopts one as its destination, which the caller or a
        later op could then write.
        """

    def slot(self, value: SSAValue) -> int:
        if (index := self.slots.get(value)) is None:
            index = self.slots[value] = len(self.slots)
        return index

    def slots_of(self, values: Sequence[SSAValue]) -> list[int]:
        return [self.slot(v) for v in values]

    def compile_block(self, block: Block, skip_terminator: bool = True) -> CompiledBlock:
        ops: list[Operation] = []
        steps: list[Step] = []
        for op in block.ops:
            if skip_terminator and op is block.last_op and op.has_trait(IsTerminator):
                break
            ops.append(op)
            steps.append(self.compile_op(op))
        return CompiledBlock(ops, steps)

    def compile_op(self, op: Operation) -> Step:
        step_compiler = self.compilers.get(type(op))
        if step_compiler is None:
            raise LocatedError(op, "the runtime cannot execute this op")
        try:
            step = step_compiler(op, self)
        except LocatedError:
            raise
        except (ValueError, NotImplementedError) as err:
            raise LocatedError(op, str(err)) from err
        if self.profile and op.dialect_name() in PROFILED_DIALECTS:
            return in_profiler_range(op, step)
        return step


# -- profiling ------------------------------------------------------------------------------------

PROFILED_DIALECTS = ("fusion", "hir")
"""Ops that get a profiler range; index arithmetic costs less than a range and would drown the trace."""


def profiler_active() -> bool:
    """
    Whether a torch profiler is recording: the flag torch.autograd.profiler sets while one is
    (torch.profiler.profile, emit_nvtx, emit_itt), a module attribute read. Programs read it once
    per run to pick their profiled or plain steps.
    """
    return torch.autograd.profiler._is_profiler_enabled


def range_name(op: Operation) -> str:
    """
    `hir.launch fusion.matmul @ f.mlir:12:5`: the op, the fusion ops a launch or segment runs (the
    first four), and where the op is written.
    """
    name = op.name
    if op.regions and op.name in ("hir.launch", "fusion.segment"):
        inner = [o.name for o in op.regions[0].walk() if o.dialect_name() == "fusion" and o.name != "fusion.yield"]
        name += " " + ", ".join(inner[:4]) + (f", +{len(inner) - 4} more" if len(inner) > 4 else "")
    where = location_of(op)
    return f"{name} @ {where}" if where else name


def in_profiler_range(op: Operation, step: Step) -> Step:
    """The step inside a profiler range named after the op (`profiler_range`)."""
    name = range_name(op)
    profiler_range = profiler_range_type()

    def step_in_range(frame: Frame) -> None:
        with profiler_range(name):
            step(frame)

    return step_in_range


def body_ending_in(
    compiler: CompileContext,
    args: Sequence[SSAValue],
    ins: Sequence[SSAValue],
    before: Sequence[Operation],
    last: Operation,
    step: Step,
) -> Step:
    """
    A launch's body as one step: its region arguments `args` bound to the values `ins`, the ops
    `before` compiled as usual, then `step` for the body's `last` op (which writes the launch's
    destination itself), in a profiler range when profiling; its failures are located at `last`.
    """
    arg_slots, in_slots = compiler.slots_of(args), compiler.slots_of(ins)
    compiled = CompiledBlock(list(before), [compiler.compile_op(o) for o in before])
    last_step = in_profiler_range(last, step) if compiler.profile else step

    def body(frame: Frame) -> None:
        env = frame.env
        for arg, src in zip(arg_slots, in_slots):
            env[arg] = env[src]
        compiled.run(frame)
        try:
            last_step(frame)
        except LocatedError:
            raise
        except Exception as err:
            raise LocatedError(last, describe_failure(last, frame, err)) from err

    return body


def profiler_range_type() -> Callable[[str], AbstractContextManager[Any]]:
    """
    A torch RecordFunction range: `torch.profiler.record_function`'s C++ fast path where torch has
    it (`_RecordFunctionFast`, which torch.compile's annotations use), since the Python context
    manager costs about 28 us a range on the CPU, 15 times as much, which would drown the ops it
    measures (docs/runtime.md, "Profiling").
    """
    return getattr(torch._C._profiler, "_RecordFunctionFast", None) or torch.profiler.record_function


def describe_failure(op: Operation, frame: Frame, err: Exception) -> str:
    """A runtime error message: an operand that was never produced, or what torch said."""
    for i, operand in enumerate(op.operands):
        slot = _slot_of(frame, operand)
        if slot is not None and frame.env[slot] is UNSET:
            return f"operand #{i} ({(operand.name_hint and '%' + operand.name_hint) or 'a value'}) was never produced"
    message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return f"failed at run time: {message}"


def _slot_of(frame: Frame, value: SSAValue) -> int | None:
    return frame.slots.get(value)
