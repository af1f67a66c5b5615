"""
Ops of every definition of our dialects (and of a few synthetic ones) for tests that compare a specialized piece of the
dialects with xDSL's generic one: those of the lit tests and examples, and random ones that are
close to their definition, mostly valid, sometimes not (a wrong count, type, property, region).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    RangeLengthConstraint,
    RangeOf,
    VariadicDef,
    irdl_op_definition,
    operand_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.constraints import AttrConstraint, VerificationContext
from xdsl.utils.exceptions import VerifyException

from hir.api import make_context
from hir.diagnostics import LocatedParser
from hir.dialects.definition_check import specialize_verification
from hir.dialects.fusion import Fusion
from hir.dialects.hir import Hir, StreamType, WorkType
from hir.dialects.named_access import specialize_accessors
from hir.dialects.parallel_encoding import ParallelAttr

ROOT = Path(__file__).resolve().parent.parent
OP_TYPES = [*Hir.operations, *Fusion.operations]


# Forms of definition none of our ops has yet, specialized as our dialects are.


@irdl_op_definition
class RunBetweenOp(IRDLOperation):
    """A variadic run between single operands."""

    name = "test.run_between"
    first = operand_def(IndexType)
    run = var_operand_def(MemRefType)
    last = operand_def(IndexType)


@irdl_op_definition
class RunFirstOp(IRDLOperation):
    """Singles after a variadic run, of operands and of results."""

    name = "test.run_first"
    run = var_operand_def(MemRefType)
    middle = operand_def(IndexType)
    last = operand_def(IndexType)
    results_run = var_result_def(IndexType)
    result = result_def(MemRefType)


@irdl_op_definition
class SegmentsOp(IRDLOperation):
    """Singles between segment-sized runs."""

    name = "test.segments"
    first = operand_def(IndexType)
    run = var_operand_def(MemRefType)
    last = operand_def(IndexType)
    tail = var_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class SameSegmentsOp(IRDLOperation):
    """Segment-sized runs that all take the same type, as `hir.launch`'s, and a single one among them."""

    name = "test.same_segments"
    first = var_operand_def(MemRefType)
    single = operand_def(MemRefType)
    last = var_operand_def(MemRefType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


SYNTHETIC_OP_TYPES = [RunBetweenOp, RunFirstOp, SegmentsOp, SameSegmentsOp]
_SYNTHETIC = Dialect("test", SYNTHETIC_OP_TYPES)
specialize_verification(_SYNTHETIC)
specialize_accessors(_SYNTHETIC)


def corpus_ops() -> Iterator[Operation]:
    return iter(_corpus())


@functools.cache  # parsed once per process: the tests only read these ops
def _corpus() -> tuple[Operation, ...]:
    ops: list[Operation] = []
    ctx = make_context()
    for path in sorted([*(ROOT / "tests" / "lit").rglob("*.mlir"), *(ROOT / "examples").rglob("*.mlir")]):
        text = path.read_text()
        # Files with several modules (split-input-file) or expected errors are parsed piece by piece.
        for piece in text.split("// -----"):
            try:
                module = LocatedParser(ctx, piece, str(path)).parse_module()
            except Exception:
                continue
            ops += [op for op in module.walk() if isinstance(op, IRDLOperation) and type(op) in OP_TYPES]
    return tuple(ops)


@functools.cache  # the same values, types and attributes for every op drawn
def pools() -> tuple[list[SSAValue], list[Attribute], list[Attribute]]:
    types: list[Attribute] = [
        IndexType(),
        i64,
        f32,
        TensorType(f32, [4, 8]),
        TensorType(f32, [4, 8], ParallelAttr(["stream", "serial"])),
        MemRefType(f32, [4, 8]),
        MemRefType(f32, [-1, 8]),
        TensorType(i32, [4]),
        StreamType(),
        WorkType(),
    ]
    block = Block(arg_types=types)
    attrs: list[Attribute] = [
        IntegerAttr(0, i64),
        IntegerAttr(3, i64),
        IntegerAttr(1, i32),
        IntegerAttr(2, IndexType()),
        FloatAttr(1.0, f32),
        StringAttr("x"),
        UnitAttr(),
        NoneAttr(),
        DenseArrayBase.from_list(i32, [1, 1]),
        DenseArrayBase.from_list(i32, [2, 0]),
        DenseArrayBase.from_list(i64, [1]),
        *types,
    ]
    return list(block.args), types, attrs


def _element(constraint: object) -> AttrConstraint | None:
    """The per-value constraint of an operand or result definition."""
    if isinstance(constraint, RangeLengthConstraint):
        constraint = constraint.constraint
    return constraint.constr if isinstance(constraint, RangeOf) else None


def _satisfies(constraint: AttrConstraint | None, attr: Attribute) -> bool:
    try:
        if constraint is not None:
            constraint.verify(attr, VerificationContext())
    except VerifyException:
        return False
    return True


@functools.cache
def _fitting(pool: str, constraint: AttrConstraint | None) -> tuple[object, ...]:
    """The members of pool `values`, `types` or `attrs` that satisfy `constraint` (a value by its type)."""
    values, types, attrs = pools()
    if pool == "values":
        return tuple(v for v in values if _satisfies(constraint, v.type))
    return tuple(a for a in (types if pool == "types" else attrs) if _satisfies(constraint, a))


def _draw(rng: random.Random, pool: str, constraint: AttrConstraint | None) -> Any:
    """Mostly a member of the pool that fits `constraint`, sometimes any."""
    fitting = _fitting(pool, constraint)
    everything = dict(zip(("values", "types", "attrs"), pools()))[pool]
    return rng.choice(fitting) if fitting and rng.random() < 0.9 else rng.choice(everything)


def random_op(rng: random.Random, op_type: type[IRDLOperation]) -> Operation:
    """
    An op of `op_type` that is close to its definition: each operand, result, property and
    region drawn to fit it most of the time, counts right most of the time, strays now and then.
    """
    values, types, attrs = pools()
    op_def = op_type.get_irdl_definition()

    def counts(definitions: Sequence[object]) -> list[int]:
        return [rng.randint(0, 2) if isinstance(d, VariadicDef) else 1 for d in definitions]

    operand_counts = counts([d for _, d in op_def.operands])
    operands: list[SSAValue] = []
    for (_, d), n in zip(op_def.operands, operand_counts):
        element = _element(d.constr)
        operands += [_draw(rng, "values", element) for _ in range(n)]
    result_types: list[Attribute] = []
    for (_, d), n in zip(op_def.results, counts([d for _, d in op_def.results])):
        element = _element(d.constr)
        result_types += [_draw(rng, "types", element) for _ in range(n)]
    if rng.random() < 0.1:
        operands = operands[:-1] if operands and rng.random() < 0.5 else [*operands, rng.choice(values)]
    if rng.random() < 0.1:
        result_types = [*result_types, rng.choice(types)]

    properties: dict[str, Attribute] = {}
    for name, d in op_def.properties.items():
        if rng.random() < 0.9:
            properties[name] = _draw(rng, "attrs", d.constr)
    if "operandSegmentSizes" in op_def.properties and rng.random() < 0.8:
        properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, operand_counts)
    if rng.random() < 0.05:
        properties["stray"] = rng.choice(attrs)
    attributes: dict[str, Attribute] = {}
    for name, d in op_def.attributes.items():
        if rng.random() < 0.9:
            attributes[name] = _draw(rng, "attrs", d.constr)

    n_regions = len(op_def.regions) + (rng.choice([-1, 1]) if rng.random() < 0.1 else 0)
    regions = [
        Region([Block(arg_types=rng.sample(types, rng.randint(0, 2))) for _ in range(1 if rng.random() < 0.9 else 2)])
        for _ in range(max(0, n_regions))
    ]
    return op_type.create(
        operands=operands, result_types=result_types, properties=properties, attributes=attributes, regions=regions
    )
