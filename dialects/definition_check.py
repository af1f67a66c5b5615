"""
The IRDL part of verifying an op, specialized once per op definition.

xDSL checks an op against its definition (`OpDef.verify`) by interpreting the definition on every
op: it looks up the size option, rebuilds tuples of definitions, reaches each operand through its
accessor and walks constraint objects. That is 25-80 us an op, most of the verification of a
lowered module of thousands of views, allocations and launches. The definitions of our dialects
use a few constraint forms (a base class, an equal attribute, integer attributes of one width,
ranges of one of those), so each definition is turned once into plain checks: counts and
`isinstance` tests on the op's flat operands, results, regions and properties.

The specialized check only accepts: when anything fails, or a definition uses a form it does not
know, xDSL's own `OpDef.verify` runs and reports the error in its own words. So the messages are
xDSL's, and an op passes only if xDSL's check would pass it too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute
from xdsl.irdl import (
    AnyAttr,
    AnyOf,
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    BaseAttr,
    EqAttrConstraint,
    EqIntConstraint,
    OpDef,
    OptionalDef,
    OptPropertyDef,
    ParamAttrConstraint,
    RangeLengthConstraint,
    RangeOf,
    SingleBlockRegionDef,
    VariadicDef,
)
from xdsl.irdl.constraints import AttrConstraint, RangeConstraint
from xdsl.irdl.operations import OptAttributeDef, RegionDef, VarIRConstruct, verify_variadic_size
from xdsl.utils.exceptions import VerifyException

AttrCheck = Callable[[Attribute], bool]
# A check of a list of values (operands or results); None when it cannot be specialized.
ListCheck = Callable[[Operation, Sequence[Attribute]], bool]


def _always(_: Attribute) -> bool:
    return True


def attribute_check(constraint: AttrConstraint) -> AttrCheck | None:
    """A predicate equivalent to `constraint.verify` passing, for the forms our dialects use."""
    if isinstance(constraint, AnyAttr):
        return _always
    if isinstance(constraint, BaseAttr):
        base = constraint.attr
        return lambda a: isinstance(a, base)
    if isinstance(constraint, EqAttrConstraint):
        expected = constraint.attr
        return lambda a: a == expected
    if isinstance(constraint, AnyOf):
        alternatives = [attribute_check(c) for c in constraint.attr_constrs]
        if any(c is None for c in alternatives):
            return None
        return lambda a: any(c(a) for c in alternatives)  # type: ignore[misc]
    if isinstance(constraint, ParamAttrConstraint):
        base = constraint.base_attr
        params = [attribute_check(c) for c in constraint.param_constrs]
        if any(c is None for c in params):
            return None

        def check(a: Attribute) -> bool:
            if not isinstance(a, base):
                return False
            assert isinstance(a, ParametrizedAttribute)
            values = a.parameters
            return len(values) == len(params) and all(c(v) for c, v in zip(params, values))  # type: ignore[misc]

        return check
    return None


@dataclass(frozen=True)
class _Piece:
    """One operand or result definition: a single value, or a variadic run of them."""

    variadic: bool
    element: AttrConstraint
    check: AttrCheck


def _piece(definition: object) -> _Piece | None:
    constraint: RangeConstraint = definition.constr  # type: ignore[attr-defined]
    if isinstance(definition, OptionalDef):
        return None
    if isinstance(definition, VariadicDef):
        if not isinstance(constraint, RangeOf):
            return None
        check = attribute_check(constraint.constr)
        return None if check is None else _Piece(True, constraint.constr, check)
    if (
        isinstance(constraint, RangeLengthConstraint)
        and isinstance(constraint.constraint, RangeOf)
        and constraint.length == EqIntConstraint(1)
    ):
        element = constraint.constraint.constr
        check = attribute_check(element)
        return None if check is None else _Piece(False, element, check)
    return None


def list_check(op_def: OpDef, construct: VarIRConstruct, definitions: Sequence[object]) -> ListCheck | None:
    """
    The count and type checks of an op's operands or results: single values and at most one
    variadic run, or any number of runs sized by a segment property when all of them take the
    same check (the segment sizes are then checked by xDSL's own code).
    """
    maybe_pieces = [_piece(d) for d in definitions]
    pieces = [p for p in maybe_pieces if p is not None]
    if len(pieces) < len(maybe_pieces):
        return None
    checks = [p.check for p in pieces]
    variadics = [i for i, p in enumerate(pieces) if p.variadic]
    segments = AttrSizedOperandSegments if construct == VarIRConstruct.OPERAND else AttrSizedResultSegments
    if any(isinstance(o, segments) for o in op_def.options):
        if any(p.element != pieces[0].element for p in pieces):
            return None
        only = checks[0] if checks else _always

        def by_segments(op: Operation, types: Sequence[Attribute]) -> bool:
            try:
                verify_variadic_size(op, op_def, construct)
            except VerifyException:
                return False
            return all(only(t) for t in types)

        return by_segments
    if not variadics:
        count = len(checks)
        return lambda _, types: len(types) == count and all(c(t) for c, t in zip(checks, types))
    if len(variadics) > 1:
        return None
    at = variadics[0]
    before, run, after = checks[:at], checks[at], checks[at + 1 :]

    def with_run(_: Operation, types: Sequence[Attribute]) -> bool:
        end = len(types) - len(after)
        if end < at:
            return False
        return (
            all(c(t) for c, t in zip(before, types))
            and all(run(t) for t in types[at:end])
            and all(c(t) for c, t in zip(after, types[end:]))
        )

    return with_run


def _region_check(regions: Sequence[tuple[str, RegionDef]]) -> Callable[[Operation], bool] | None:
    single_block: list[bool] = []
    for _, region in regions:
        if isinstance(region, VariadicDef) or region.entry_args != RangeOf(AnyAttr()):
            return None
        single_block.append(isinstance(region, SingleBlockRegionDef))
    count = len(single_block)
    return lambda op: (
        len(op.regions) == count
        and all(not single or len(r.blocks) == 1 for single, r in zip(single_block, op.regions))
    )


def _named_check(definitions: dict[str, object], optional_type: type) -> Callable[[dict[str, Attribute]], bool] | None:
    required: list[tuple[str, AttrCheck]] = []
    optional: list[tuple[str, AttrCheck]] = []
    for name, definition in definitions.items():
        check = attribute_check(definition.constr)  # type: ignore[attr-defined]
        if check is None:
            return None
        (optional if isinstance(definition, optional_type) else required).append((name, check))

    def named(values: dict[str, Attribute]) -> bool:
        for name, check in required:
            value = values.get(name)
            if value is None or not check(value):
                return False
        for name, check in optional:
            value = values.get(name)
            if value is not None and not check(value):
                return False
        return True

    return named


def definition_check(op_def: OpDef) -> Callable[[Operation], bool] | None:
    """
    True when `op` certainly satisfies `op_def` (xDSL's checks before the traits'); None when the
    definition uses a constraint form this module does not specialize.
    """
    operands = list_check(op_def, VarIRConstruct.OPERAND, [d for _, d in op_def.operands])
    results = list_check(op_def, VarIRConstruct.RESULT, [d for _, d in op_def.results])
    regions = _region_check(op_def.regions)
    properties = _named_check(dict(op_def.properties), OptPropertyDef)
    attributes = _named_check(dict(op_def.attributes), OptAttributeDef)
    if op_def.successors or None in (operands, results, regions, properties, attributes):
        return None
    known_properties = set(op_def.properties)

    def check(op: Operation) -> bool:
        return (
            operands(op, [v.type for v in op.operands])  # type: ignore[misc]
            and results(op, [r.type for r in op.results])  # type: ignore[misc]
            and regions(op)  # type: ignore[misc]
            and not op.successors
            and known_properties.issuperset(op.properties)
            and properties(op.properties)  # type: ignore[misc]
            and attributes(op.attributes)  # type: ignore[misc]
        )

    return check


def specialize_verification(dialect: Dialect) -> None:
    """
    Gives each op definition of `dialect` its specialized check: `OpDef.verify` runs it first and
    falls back to xDSL's generic check only when it does not pass. The traits run as before.
    """
    for op_type in dialect.operations:
        op_def = op_type.get_irdl_definition()  # type: ignore[attr-defined]
        check = definition_check(op_def)
        if check is None:
            continue
        generic = op_def.verify
        traits = tuple(op_def.traits)

        def verify(op: Operation, check: Callable[[Operation], bool] = check, generic=generic, traits=traits) -> None:
            if not check(op):
                generic(op)
                return
            for trait in traits:
                trait.verify(op)

        op_def.verify = verify  # type: ignore[method-assign]
