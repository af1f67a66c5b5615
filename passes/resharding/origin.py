"""
Which op the user wrote for a resharding: `fusion-decompose-resharding` inserts a `fusion.set`
before the op that needs its operand resharded, at that op's location, so a diagnostic about the
set names that op and the operand rather than a set the user never wrote.
"""

from __future__ import annotations

from xdsl.ir import Operation

from hir.diagnostics import located
from hir.dialects import fusion


def inserted_for(op: Operation) -> tuple[Operation, int] | None:
    """(the op, operand index) a set was inserted for: its only user, at the same location."""
    uses = list(op.result.uses) if isinstance(op, fusion.SetOp) else []
    if len(uses) != 1:
        return None
    use = uses[0]
    if use.operation.location != op.location or isinstance(use.operation, fusion.SetOp):
        return None
    return use.operation, use.index


def located_at_origin(op: Operation, message: str) -> str:
    """`located`, naming the op the user wrote (and its operand) when `op` is an inserted set."""
    if (origin := inserted_for(op)) is None:
        return located(op, message)
    user, index = origin
    return located(user, f"operand #{index} needs a resharding that is not supported: {message}")
