"""
The specialized IRDL checks (`hir.dialects.definition_check`) agree with xDSL's generic
`OpDef.verify`: on every op of the lit tests and examples, and on thousands of random, mostly
malformed ops of every definition of our dialects (wrong counts, types, properties, attributes,
regions). An op the specialized check accepts must pass xDSL's check; one it rejects goes to
xDSL's check, so the error message is xDSL's own.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from random_ops import OP_TYPES, SYNTHETIC_OP_TYPES, RunBetweenOp, corpus_ops, pools, random_op
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    i64,
)
from xdsl.ir import Operation
from xdsl.irdl import (
    IRDLOperation,
    OpDef,
)
from xdsl.utils.exceptions import VerifyException

from hir.dialects.definition_check import definition_check
from hir.dialects.hir import AliasSelectOp


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


def test_agrees_on_the_test_corpus() -> None:
    accepted: set[str] = set()
    for op in corpus_ops():
        check = definition_check(type(op).get_irdl_definition())
        if check is None:
            continue
        verdict = generic_verdict(op)
        assert installed_verdict(op) == verdict, op
        if check(op):
            assert verdict is None or _a_trait_rejects(op), verdict
            accepted.add(op.name)
    # Most of our op types pass the specialized check somewhere in the lit tests and examples.
    assert len(accepted) >= 40


@pytest.mark.parametrize("op_type", [*OP_TYPES, *SYNTHETIC_OP_TYPES], ids=lambda t: t.name)
def test_agrees_on_random_ops(op_type: type[IRDLOperation]) -> None:
    check = definition_check(op_type.get_irdl_definition())
    if check is None:
        pytest.skip("not specialized: xDSL's check runs")
    rng = random.Random(op_type.name)
    verdicts = {True: 0, False: 0}
    # 100 ops a definition (9,400 in all): every type sees both verdicts within its first 13, and a
    # count, region or property check left out of the specialized check fails dozens of types.
    for _ in range(100):
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
    values, _, _ = pools()
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


@pytest.mark.parametrize("count", range(5))
def test_a_variadic_run_between_single_operands(count: int) -> None:
    values, _, _ = pools()
    index = next(v for v in values if isinstance(v.type, IndexType))
    memref = next(v for v in values if isinstance(v.type, MemRefType))
    for operands in ([index] * count, [index, *[memref] * max(0, count - 2), index][:count]):
        op = RunBetweenOp.create(operands=operands)
        check = definition_check(RunBetweenOp.get_irdl_definition())
        assert check is not None
        assert check(op) == (generic_verdict(op) is None), operands
