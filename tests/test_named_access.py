"""
The direct accessors of named operands, results and regions (`hir.dialects.named_access`) return
what xDSL's own accessors return, on every op of the lit tests and examples and on random ops of
every definition of our dialects (with wrong counts and segment sizes too): the same object for a
single construct, an equal sequence of the same type for a run, the same kind of error otherwise.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from random_ops import OP_TYPES, SYNTHETIC_OP_TYPES, corpus_ops, random_op
from xdsl.ir import Operation
from xdsl.irdl import (
    IRDLOperation,
)
from xdsl.irdl.operations import get_accessors_from_op_def

from hir.dialects.named_access import _Accessor


def xdsl_accessors(op_type: type[IRDLOperation]) -> dict[str, Any]:
    """xDSL's accessors for the definition, built afresh as `irdl_op_definition` builds them."""
    built = get_accessors_from_op_def(op_type.get_irdl_definition(), None)
    return {name: built[name] for name, value in vars(op_type).items() if isinstance(value, _Accessor)}


def outcome(read: Any) -> tuple[str, Any]:
    try:
        return ("value", read())
    except Exception as e:
        return ("error", type(e))


def assert_same_reads(op: Operation, accessors: dict[str, Any]) -> int:
    for name, xdsl in accessors.items():
        ours = outcome(lambda name=name: getattr(op, name))
        theirs = outcome(lambda xdsl=xdsl: xdsl.__get__(op, type(op)))
        assert ours[0] == theirs[0], (op.name, name, ours, theirs)
        if ours[0] == "value":
            if isinstance(theirs[1], tuple):
                assert type(ours[1]) is type(theirs[1]), (op.name, name)
                assert len(ours[1]) == len(theirs[1])
                assert all(a is b for a, b in zip(ours[1], theirs[1])), (op.name, name)
            else:
                assert ours[1] is theirs[1], (op.name, name)
        else:
            assert ours[1] is theirs[1], (op.name, name)
    return len(accessors)


def test_every_op_type_with_named_constructs_is_specialized() -> None:
    specialized = [t for t in OP_TYPES if xdsl_accessors(t)]
    assert len(specialized) >= len(OP_TYPES) * 3 // 4


def test_agrees_on_the_test_corpus() -> None:
    kinds: set[str] = set()
    for op in corpus_ops():
        if assert_same_reads(op, xdsl_accessors(type(op))):
            kinds.add(op.name)
    # Most of our op types, as the lit tests and examples write them (the count depends on which
    # files parse where the tests run, not on this check).
    assert len(kinds) >= 40


@pytest.mark.parametrize("op_type", [*OP_TYPES, *SYNTHETIC_OP_TYPES], ids=lambda t: t.name)
def test_agrees_on_random_ops(op_type: type[IRDLOperation]) -> None:
    accessors = xdsl_accessors(op_type)
    if not accessors:
        pytest.skip("no named operands, results or regions")
    rng = random.Random(op_type.name)
    for _ in range(200):
        assert_same_reads(random_op(rng, op_type), accessors)


def test_writing_a_named_operand_is_refused() -> None:
    op = next(op for op in corpus_ops() if op.name == "hir.alias_select")
    with pytest.raises(NotImplementedError):
        op.buffer = op.index  # type: ignore[misc]
