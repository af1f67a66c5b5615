"""
Index arithmetic (`arith`) on Python integers, as host programs use it for loop bounds and stream
numbers. A value is held as the signed integer of its type's width (`index`: 64 bits), and each
op computes what MLIR's does: results wrap around modulo 2^width (`arith.addi` of the largest
index and 1 is the smallest), and the unsigned ops (`divui`, `remui`, `ceildivui`, `minui`,
`maxui`, `cmpi ult` ...) read their operands as unsigned.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Attribute

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
_UNSIGNED: frozenset[type] = frozenset({arith.DivUIOp, arith.CeilDivUIOp, arith.RemUIOp, arith.MinUIOp, arith.MaxUIOp})
"""The ops that read their operands as unsigned integers."""

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
_CMPI_UNSIGNED = 6
"""The first unsigned predicate (ult) in `_CMPI`."""
INDEX_WIDTH = 64
"""The bits of an `index` (MLIR's on a 64-bit host)."""


def width(t: Attribute) -> int | None:
    """The bits of an integer or index type; None for another type."""
    if isinstance(t, IndexType):
        return INDEX_WIDTH
    if isinstance(t, IntegerType):
        return t.width.data
    return None


def wrap(value: int, bits: int) -> int:
    """`value` modulo 2^bits, as the signed integer of that width (i1: False or True, MLIR's 0 and -1)."""
    value &= (1 << bits) - 1
    if bits == 1:
        return bool(value)
    return value - (1 << bits) if value >> (bits - 1) else value


def unsigned(value: int, bits: int) -> int:
    """The unsigned integer of width `bits` that `value`'s bits are."""
    return value & ((1 << bits) - 1)


@compiles(arith.ConstantOp)
def constant(op: arith.ConstantOp, compiler: CompileContext) -> Step:
    value = op.value
    if not isinstance(value, IntegerAttr | FloatAttr):
        raise ValueError(f"only integer and float constants are supported, got {value}")
    python_value = value.value.data
    bits = width(op.result.type)
    if bits is not None and isinstance(python_value, int):
        python_value = wrap(python_value, bits)
    out = compiler.slot(op.result)

    def step(frame: Frame) -> None:
        frame.env[out] = python_value

    return step


@compiles(*_BINARY)
def binary(op: arith.SignlessIntegerBinaryOperation, compiler: CompileContext) -> Step:
    fn = _BINARY[type(op)]
    lhs, rhs, out = compiler.slot(op.lhs), compiler.slot(op.rhs), compiler.slot(op.result)
    bits = width(op.result.type) or INDEX_WIDTH
    low, high = -(1 << (bits - 1)), 1 << (bits - 1)
    if bits == 1:
        low, high = 0, 2  # booleans (cmpi's results) stay booleans

    if type(op) in _UNSIGNED:

        def unsigned_step(frame: Frame) -> None:
            env = frame.env
            a, b = env[lhs], env[rhs]
            if a < 0 or b < 0:  # the bits of a negative value are a large unsigned one
                env[out] = wrap(fn(unsigned(a, bits), unsigned(b, bits)), bits)
            else:
                env[out] = fn(a, b)

        return unsigned_step

    def step(frame: Frame) -> None:
        env = frame.env
        result = fn(env[lhs], env[rhs])
        env[out] = result if low <= result < high else wrap(result, bits)

    return step


@compiles(arith.CmpiOp)
def cmpi(op: arith.CmpiOp, compiler: CompileContext) -> Step:
    predicate = op.predicate.value.data
    fn = _CMPI[predicate]
    lhs, rhs, out = compiler.slot(op.lhs), compiler.slot(op.rhs), compiler.slot(op.result)
    bits = width(op.lhs.type) or INDEX_WIDTH

    if predicate >= _CMPI_UNSIGNED:

        def unsigned_step(frame: Frame) -> None:
            env = frame.env
            env[out] = fn(unsigned(env[lhs], bits), unsigned(env[rhs], bits))

        return unsigned_step

    if bits == 1:  # i1 holds False or True, whose signed value is 0 or -1

        def boolean_step(frame: Frame) -> None:
            env = frame.env
            env[out] = fn(-env[lhs], -env[rhs])

        return boolean_step

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
    bits, source_bits = width(op.result.type) or INDEX_WIDTH, width(op.input.type) or INDEX_WIDTH
    if bits < source_bits:  # truncation, as MLIR's

        def truncating_step(frame: Frame) -> None:
            frame.env[out] = wrap(frame.env[src], bits)

        return truncating_step
    if source_bits == 1 < bits:  # sign extension: true is -1

        def extending_step(frame: Frame) -> None:
            frame.env[out] = -int(frame.env[src])

        return extending_step

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
