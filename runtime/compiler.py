"""
The runtime's core: a function body is compiled once into a list of Python closures ("steps")
over a flat register file, then run as often as needed.

Why not xDSL's `Interpreter`: its per-op dispatch (scoped environment, listener loop, result
checks) costs several microseconds per op, comparable to launching a small CUDA kernel, and the
host loop of a stream pipeline runs ~8 ops per chunk. A step reads its operands from fixed slots
and costs a fraction of that (docs/runtime.md has the measurement). The structure still mirrors
xDSL's: one module of implementations per dialect (`std_ops`, `fusion_ops`, `hir_ops`), each
registering a compile function per op class with `@compiles(...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from hir.diagnostics import LocatedError
from hir.runtime.communicator import Communicator
from hir.runtime.streams import Streams


class _Unset:
    def __repr__(self) -> str:
        return "<never produced>"


UNSET: Any = _Unset()


@dataclass
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


Step = Callable[[Frame], None]
Compiler = Callable[[Any, "CompileContext"], Step]

COMPILERS: dict[type[Operation], Compiler] = {}


def compiles(*op_types: type[Operation]) -> Callable[[Compiler], Compiler]:
    """Registers how to compile ops of these types into a step."""

    def register(fn: Compiler) -> Compiler:
        for t in op_types:
            COMPILERS[t] = fn
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
    """Slot assignment for every SSA value of one function, shared by nested regions."""

    def __init__(self) -> None:
        self.slots: dict[SSAValue, int] = {}

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
        compiler = COMPILERS.get(type(op))
        if compiler is None:
            raise LocatedError(op, "the runtime cannot execute this op")
        try:
            return compiler(op, self)
        except LocatedError:
            raise
        except (ValueError, NotImplementedError) as err:
            raise LocatedError(op, str(err)) from err


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
