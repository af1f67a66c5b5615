"""Index arithmetic (`arith`) on Python integers, as host programs use it for loop bounds and stream numbers."""

from __future__ import annotations

import operator
from collections.abc import Callable

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr

from hir.runtime.compiler import CompileContext, Frame, Step, StepCompilers

COMPILERS = StepCompilers()
compiles = COMPILERS.compiles


def _floordiv(a: int, b: int) -> int:
    return a // b


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _truncrem(a: int, b: int) -> int:
    return a - b * _truncdiv(a, b)


def _ceildiv(a: int, b: int) -> int:
    return -((-a) // b)


_BINARY: dict[type, Callable[[int, int], int]] = {
    arith.AddiOp: operator.add,
    arith.SubiOp: operator.sub,
    arith.MuliOp: operator.mul,
    arith.DivUIOp: _floordiv,
    arith.DivSIOp: _truncdiv,
    arith.FloorDivSIOp: _floordiv,
    arith.CeilDivSIOp: _ceildiv,
    arith.CeilDivUIOp: _ceildiv,
    arith.RemUIOp: operator.mod,
    arith.RemSIOp: _truncrem,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.MinUIOp: min,
    arith.MaxUIOp: max,
    arith.AndIOp: operator.and_,
    arith.OrIOp: operator.or_,
    arith.XOrIOp: operator.xor,
}

# arith.cmpi predicates: eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge
_CMPI: tuple[Callable[[int, int], bool], ...] = (
    operator.eq,
    operator.ne,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
)


@compiles(arith.ConstantOp)
def constant(op: arith.ConstantOp, compiler: CompileContext) -> Step:
    value = op.value
    if not isinstance(value, IntegerAttr | FloatAttr):
        raise ValueError(f"only integer and float constants are supported, got {value}")
    python_value = value.value.data
    out = compiler.slot(op.result)

    def step(frame: Frame) -> None:
        frame.env[out] = python_value

    return step


@compiles(*_BINARY)
def binary(op: arith.SignlessIntegerBinaryOperation, compiler: CompileContext) -> Step:
    fn = _BINARY[type(op)]
    lhs, rhs, out = compiler.slot(op.lhs), compiler.slot(op.rhs), compiler.slot(op.result)

    def step(frame: Frame) -> None:
        env = frame.env
        env[out] = fn(env[lhs], env[rhs])

    return step


@compiles(arith.CmpiOp)
def cmpi(op: arith.CmpiOp, compiler: CompileContext) -> Step:
    fn = _CMPI[op.predicate.value.data]
    lhs, rhs, out = compiler.slot(op.lhs), compiler.slot(op.rhs), compiler.slot(op.result)

    def step(frame: Frame) -> None:
        env = frame.env
        env[out] = fn(env[lhs], env[rhs])

    return step


@compiles(arith.SelectOp)
def select(op: arith.SelectOp, compiler: CompileContext) -> Step:
    cond, lhs, rhs, out = compiler.slot(op.cond), compiler.slot(op.lhs), compiler.slot(op.rhs), compiler.slot(op.result)

    def step(frame: Frame) -> None:
        env = frame.env
        env[out] = env[lhs] if env[cond] else env[rhs]

    return step


@compiles(arith.IndexCastOp)
def index_cast(op: arith.IndexCastOp, compiler: CompileContext) -> Step:
    src, out = compiler.slot(op.input), compiler.slot(op.result)

    def step(frame: Frame) -> None:
        frame.env[out] = frame.env[src]

    return step


@compiles(memref.DimOp)
def dim(op: memref.DimOp, compiler: CompileContext) -> Step:
    source, index, out = compiler.slot(op.source), compiler.slot(op.index), compiler.slot(op.result)

    def step(frame: Frame) -> None:
        env = frame.env
        env[out] = env[source].shape[env[index]]

    return step


@compiles(scf.IfOp)
def if_then_else(op: scf.IfOp, compiler: CompileContext) -> Step:
    if op.results:
        raise ValueError("scf.if with results is not supported by the runtime")
    cond = compiler.slot(op.cond)
    then_body = compiler.compile_block(op.true_region.block)
    else_body = compiler.compile_block(op.false_region.block) if op.false_region.blocks else None

    def step(frame: Frame) -> None:
        if frame.env[cond]:
            then_body.run(frame)
        elif else_body is not None:
            else_body.run(frame)

    return step
