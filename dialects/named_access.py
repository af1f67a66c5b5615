"""
Named operands, results and regions (`op.buffer`, `loop.body`) read in one step.

xDSL's accessors reach a named operand through four Python calls: the construct's list is looked
up by a `match`, wrapped in an `OpOperands` view, indexed, and the index goes through
`SSAValues.__getitem__`; a segment-sized one (`hir.launch`'s `ins` and `outs`) also decodes the
`operandSegmentSizes` array on every access. The passes read these names tens of thousands of
times on a large module (a seventh of the compile time). These descriptors index the op's tuples
directly, and decode each segment array once (arrays are immutable). They return what xDSL's
return: the same value for a single operand, an equal `SSAValues` for a run of them.

xDSL is pinned to one version (pyproject.toml), whose `Operation` keeps its operands in
`_operands`, a tuple; tests/test_named_access.py compares every accessor of our dialects with
xDSL's own.
"""

from __future__ import annotations

from typing import Any, NoReturn

from xdsl.dialects.builtin import DenseArrayBase
from xdsl.ir import Dialect, Operation, SSAValues
from xdsl.irdl.operations import (
    AfterVariadicSingleAccessor,
    BeforeVariadicSingleAccessor,
    SingleAttrAccessor,
    UniqueVariadicAccessor,
    VariadicAttrAccessor,
    VarIRConstruct,
)

from hir.dialects.type_cache import cache_by_identity


def _constructs(op: Operation, construct: VarIRConstruct) -> tuple[Any, ...]:
    if construct is VarIRConstruct.OPERAND:
        return op._operands
    if construct is VarIRConstruct.RESULT:
        return op.results
    return op.regions


class _Accessor:
    """A read-only named construct; writing one is unsupported, as with xDSL's accessors."""

    def __set__(self, obj: Operation, value: object) -> NoReturn:
        raise NotImplementedError("Cannot write to named operands, regions, results, or successors.")


class _Single(_Accessor):
    """The construct at a fixed position from the start (or, negative, from the end)."""

    def __init__(self, construct: VarIRConstruct, position: int) -> None:
        self.construct = construct
        self.position = position

    def __get__(self, obj: Operation | None, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        return tuple.__getitem__(_constructs(obj, self.construct), self.position)


class _Run(_Accessor):
    """The only variadic construct: from `start` to `after` constructs before the end."""

    def __init__(self, construct: VarIRConstruct, start: int, after: int) -> None:
        self.construct = construct
        self.start = start
        self.after = after

    def __get__(self, obj: Operation | None, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        values = _constructs(obj, self.construct)
        run = tuple.__getitem__(values, slice(self.start, len(values) - self.after))
        return SSAValues(run) if self.construct is not VarIRConstruct.REGION else run


@cache_by_identity(maxsize=4096)
def _segments(sizes: DenseArrayBase) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The segment sizes, and where each segment starts (one more: where the last one ends)."""
    values = tuple(sizes.get_values())
    return values, tuple(sum(values[:k]) for k in range(len(values) + 1))


class _Segment(_Accessor):
    """Segment `index` of an op whose segment sizes are a property (`operandSegmentSizes`)."""

    def __init__(self, construct: VarIRConstruct, index: int, name: str, single: bool) -> None:
        self.construct = construct
        self.index = index
        self.name = name
        self.single = single

    def __get__(self, obj: Operation | None, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        sizes, starts = _segments(obj.properties[self.name])
        # As xDSL indexes, also when the sizes are malformed (too few, or not summing up).
        start = starts[min(self.index, len(sizes))]
        values = _constructs(obj, self.construct)
        if self.single:
            return tuple.__getitem__(values, start)
        return SSAValues(tuple.__getitem__(values, slice(start, start + sizes[self.index])))


def _fast(accessor: object) -> _Accessor | None:
    construct = getattr(accessor, "construct", None)
    if construct not in (VarIRConstruct.OPERAND, VarIRConstruct.RESULT, VarIRConstruct.REGION):
        return None
    if type(accessor) is BeforeVariadicSingleAccessor:
        return _Single(construct, accessor.idx)
    if type(accessor) is AfterVariadicSingleAccessor:
        return _Single(construct, accessor.idx - accessor.num_defs)
    if type(accessor) is UniqueVariadicAccessor:
        return _Run(construct, accessor.idx, accessor.num_defs - accessor.idx - 1)
    if construct is not VarIRConstruct.REGION and type(accessor) in (SingleAttrAccessor, VariadicAttrAccessor):
        option = accessor.option
        if not option.as_property:
            return None
        return _Segment(construct, accessor.idx, option.attribute_name, type(accessor) is SingleAttrAccessor)
    return None


def specialize_accessors(dialect: Dialect) -> None:
    """Replaces xDSL's named-construct accessors of `dialect`'s ops by the direct ones above."""
    for op_type in dialect.operations:
        for name, accessor in list(vars(op_type).items()):
            if (fast := _fast(accessor)) is not None:
                setattr(op_type, name, fast)
