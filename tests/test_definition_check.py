"""
The specialized IRDL checks (`hir.dialects.definition_check`) agree with xDSL's generic
`OpDef.verify`: on every op of the lit tests and examples, and on thousands of random, mostly
malformed ops of every definition of our dialects (wrong counts, types, properties, attributes,
regions). An op the specialized check accepts must pass xDSL's check; one it rejects goes to
xDSL's check, so the error message is xDSL's own.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pytest
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
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    OpDef,
    RangeLengthConstraint,
    RangeOf,
    VariadicDef,
    irdl_op_definition,
    operand_def,
    var_operand_def,
)
from xdsl.irdl.constraints import AttrConstraint, VerificationContext
from xdsl.utils.exceptions import VerifyException

from hir.api import make_context
from hir.diagnostics import LocatedParser
from hir.dialects.definition_check import definition_check
from hir.dialects.fusion import Fusion
from hir.dialects.hir import AliasSelectOp, Hir, StreamType, WorkType
from hir.dialects.parallel_encoding import ParallelAttr

ROOT = Path(__file__).resolve().parent.parent
OP_TYPES = [*Hir.operations, *Fusion.operations]
T = TypeVar("T")


def _verdict(verify: Callable[[Operation], None], op: Operation) -> str | None:
    try:
        verify(op)
    except VerifyException as e:
        return str(e)
    return None


def generic_verdict(op: Operation) -> str | None:
    """xDSL's own check of `op` against its definition, traits included: None, or its message."""
    return _verdict(lambda o: OpDef.verify(type(o).get_irdl_definition(), o), op)  # type: ignore[attr-defined]


def installed_verdict(op: Operation) -> str | None:
    """The check the dialect installed: the specialized one, xDSL's when it does not pass."""
    return _verdict(type(op).get_irdl_definition().verify, op)  # type: ignore[attr-defined]


def _a_trait_rejects(op: Operation) -> bool:
    """The specialized check covers all but the traits, which run after it as in xDSL."""
    traits = type(op).get_irdl_definition().traits  # type: ignore[attr-defined]
    return any(_verdict(t.verify, op) is not None for t in traits)


def test_the_hot_ops_are_specialized() -> None:
    specialized = {t.name for t in OP_TYPES if definition_check(t.get_irdl_definition()) is not None}
    hot = {"hir.launch", "hir.alias_select", "hir.allocate", "hir.yield", "hir.stream_for", "fusion.add", "fusion.exp"}
    assert hot <= specialized
    # Forms it does not know (constraint variables, optional operands) keep xDSL's check.
    assert len(specialized) >= len(OP_TYPES) * 3 // 4


def corpus_ops() -> Iterator[Operation]:
    ctx = make_context()
    for path in sorted([*(ROOT / "tests" / "lit").rglob("*.mlir"), *(ROOT / "examples").rglob("*.mlir")]):
        text = path.read_text()
        # Files with several modules (split-input-file) or expected errors are parsed piece by piece.
        for piece in text.split("// -----"):
            try:
                module = LocatedParser(ctx, piece, str(path)).parse_module()
            except Exception:
                continue
            for op in module.walk():
                if isinstance(op, IRDLOperation) and type(op) in OP_TYPES:
                    yield op


def test_agrees_on_the_test_corpus() -> None:
    accepted = 0
    for op in corpus_ops():
        check = definition_check(type(op).get_irdl_definition())
        if check is None:
            continue
        verdict = generic_verdict(op)
        assert installed_verdict(op) == verdict, op
        if check(op):
            assert verdict is None or _a_trait_rejects(op), verdict
            accepted += 1
    assert accepted > 2000


def _pools() -> tuple[list[SSAValue], list[Attribute], list[Attribute]]:
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


def _draw(rng: random.Random, pool: Sequence[T], fits: Callable[[T], bool]) -> T:
    """Mostly a member of `pool` that fits, sometimes any."""
    fitting = [x for x in pool if fits(x)]
    return rng.choice(fitting) if fitting and rng.random() < 0.9 else rng.choice(pool)


def random_op(rng: random.Random, op_type: type[IRDLOperation]) -> Operation:
    """
    An op of `op_type` that is close to its definition: each operand, result, property and
    region drawn to fit it most of the time, counts right most of the time, strays now and then.
    """
    values, types, attrs = _pools()
    op_def = op_type.get_irdl_definition()

    def counts(definitions: Sequence[object]) -> list[int]:
        return [rng.randint(0, 2) if isinstance(d, VariadicDef) else 1 for d in definitions]

    operand_counts = counts([d for _, d in op_def.operands])
    operands: list[SSAValue] = []
    for (_, d), n in zip(op_def.operands, operand_counts):
        element = _element(d.constr)
        operands += [_draw(rng, values, lambda v, e=element: _satisfies(e, v.type)) for _ in range(n)]
    result_types: list[Attribute] = []
    for (_, d), n in zip(op_def.results, counts([d for _, d in op_def.results])):
        element = _element(d.constr)
        result_types += [_draw(rng, types, lambda t, e=element: _satisfies(e, t)) for _ in range(n)]
    if rng.random() < 0.1:
        operands = operands[:-1] if operands and rng.random() < 0.5 else [*operands, rng.choice(values)]
    if rng.random() < 0.1:
        result_types = [*result_types, rng.choice(types)]

    properties: dict[str, Attribute] = {}
    for name, d in op_def.properties.items():
        if rng.random() < 0.9:
            properties[name] = _draw(rng, attrs, lambda a, c=d.constr: _satisfies(c, a))
    if "operandSegmentSizes" in op_def.properties and rng.random() < 0.8:
        properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, operand_counts)
    if rng.random() < 0.05:
        properties["stray"] = rng.choice(attrs)
    attributes: dict[str, Attribute] = {}
    for name, d in op_def.attributes.items():
        if rng.random() < 0.9:
            attributes[name] = _draw(rng, attrs, lambda a, c=d.constr: _satisfies(c, a))

    n_regions = len(op_def.regions) + (rng.choice([-1, 1]) if rng.random() < 0.1 else 0)
    regions = [
        Region([Block(arg_types=rng.sample(types, rng.randint(0, 2))) for _ in range(1 if rng.random() < 0.9 else 2)])
        for _ in range(max(0, n_regions))
    ]
    return op_type.create(
        operands=operands, result_types=result_types, properties=properties, attributes=attributes, regions=regions
    )


@pytest.mark.parametrize("op_type", OP_TYPES, ids=lambda t: t.name)
def test_agrees_on_random_ops(op_type: type[IRDLOperation]) -> None:
    check = definition_check(op_type.get_irdl_definition())
    if check is None:
        pytest.skip("not specialized: xDSL's check runs")
    rng = random.Random(op_type.name)
    verdicts = {True: 0, False: 0}
    for _ in range(300):
        op = random_op(rng, op_type)
        verdict = generic_verdict(op)
        assert installed_verdict(op) == verdict, op
        accepted = check(op)
        if accepted:
            assert verdict is None or _a_trait_rejects(op), verdict
        verdicts[accepted] += 1
    # Both ways: the specialized check accepts some and leaves others to xDSL.
    assert verdicts[True] > 0
    assert verdicts[False] > 0


def test_a_rejected_op_reports_xdsls_message() -> None:
    values, _, _ = _pools()
    memref = next(v for v in values if isinstance(v.type, MemRefType))
    bad = AliasSelectOp.create(
        operands=[memref, memref], result_types=[memref.type], properties={"axis": IntegerAttr(0, i64)}
    )
    expected = generic_verdict(bad)
    assert expected is not None
    assert "operand 'index'" in expected
    with pytest.raises(VerifyException) as error:
        bad.verify_()
    assert str(error.value) == expected


@irdl_op_definition
class _RunBetweenOp(IRDLOperation):
    """A variadic run between single operands, a form none of our ops has yet."""

    name = "test.run_between"
    first = operand_def(IndexType)
    run = var_operand_def(MemRefType)
    last = operand_def(IndexType)


@pytest.mark.parametrize("count", range(5))
def test_a_variadic_run_between_single_operands(count: int) -> None:
    values, _, _ = _pools()
    index = next(v for v in values if isinstance(v.type, IndexType))
    memref = next(v for v in values if isinstance(v.type, MemRefType))
    for operands in ([index] * count, [index, *[memref] * max(0, count - 2), index][:count]):
        op = _RunBetweenOp.create(operands=operands)
        check = definition_check(_RunBetweenOp.get_irdl_definition())
        assert check is not None
        assert check(op) == (generic_verdict(op) is None), operands
