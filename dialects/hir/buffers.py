"""Buffers (builtin memrefs) and views of them: allocate, deallocate, alias_select, alias_chunk."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import EffectInstance, MemoryEffectKind, Pure
from xdsl.utils.exceptions import VerifyException

from hir.diagnostics import location_of
from hir.dialects.hir.base import HirEffects, build_directly, constant_index, memref_strides, verify_buffer_types
from hir.dialects.type_cache import cache_by_identity


# Types are immutable and a module repeats few of them: the views' verifiers, run after every
# stage of a pipeline, and the passes that build views ask for the same ones again and again.
@functools.lru_cache(maxsize=256)
def i64_attr(value: int) -> IntegerAttr:
    """`value : i64`, built once per value (IntegerAttr checks its range on every construction)."""
    return IntegerAttr(value, i64)


@cache_by_identity(maxsize=4096)
def select_result_type(base: MemRefType, axis: int) -> MemRefType:
    """The type of `base` with `axis` fixed at a dynamic index: one rank less, dynamic offset."""
    shape = [d for i, d in enumerate(base.get_shape()) if i != axis]
    strides = [s for i, s in enumerate(memref_strides(base)) if i != axis]
    return MemRefType(base.element_type, shape, StridedLayoutAttr(strides, None))


@irdl_op_definition
class AllocateOp(IRDLOperation):
    """
    A new buffer; dynamic extents are operands, one per `?`. When the caller passes a
    preallocated output for the returned buffer, the runtime uses it instead. `symmetric`
    asks for symmetric memory (peers can read it directly) where the runtime has it.

    Verifies:
        The result is a contiguous memref (no layout), with one `dynamic_sizes` operand per `?`
        extent.

    Example:
        %buf = hir.allocate(%n) : memref<?x8xf32>
    """

    name = "hir.allocate"

    dynamic_sizes = var_operand_def(IndexType)
    symmetric = opt_prop_def(UnitAttr)
    result = result_def(MemRefType)

    traits = traits_def(HirEffects())
    assembly_format = "`(` $dynamic_sizes `)` (`symmetric` $symmetric^)? attr-dict `:` type($result)"

    def __init__(self, result_type: MemRefType, dynamic_sizes: Sequence[SSAValue] = (), symmetric: bool = False):
        props: dict[str, Attribute] = {"symmetric": UnitAttr()} if symmetric else {}
        build_directly(self, dynamic_sizes, [result_type], props)

    def effects(self) -> set[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.ALLOC, self.result)}

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, MemRefType)
        verify_buffer_types([self.result], "result")
        if not isinstance(t.layout, NoneAttr):
            raise VerifyException(f"hir.allocate makes contiguous buffers; drop the layout of {t}")
        num_dynamic = sum(1 for d in t.get_shape() if d == DYNAMIC_INDEX)
        if num_dynamic != len(self.dynamic_sizes):
            raise VerifyException(
                f"{t} has {num_dynamic} dynamic extents but {len(self.dynamic_sizes)} sizes are given"
            )


@irdl_op_definition
class DeallocateOp(IRDLOperation):
    """
    Releases a buffer (its memory returns to the allocator once pending work is done).

    Verifies:
        No op after it uses the buffer (reads it, writes it, returns it or releases it again): no
        later op of its block, nor of the blocks around it up to the buffer's definition (after the
        loop that releases it).

    Example:
        hir.deallocate %buf : memref<4x8xf32>
    """

    name = "hir.deallocate"

    buffer = operand_def(MemRefType)

    traits = traits_def(HirEffects())
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])

    def effects(self) -> set[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.FREE, self.buffer)}

    def verify_(self) -> None:
        # After this op, or after an op that holds it (a loop), up to the buffer's definition.
        defined_in = self.buffer.owner if isinstance(self.buffer.owner, Block) else self.buffer.owner.parent_block()
        here: Operation | None = self
        while here is not None and (block := here.parent_block()) is not None:
            for use in self.buffer.uses:
                user = block.find_ancestor_op_in_block(use.operation)
                if user is not None and user is not here and here.is_before_in_block(user):
                    name = f"%{self.buffer.name_hint}" if self.buffer.name_hint else "the buffer"
                    where = location_of(use.operation)
                    raise VerifyException(
                        f"{name} is used after it is deallocated, by '{use.operation.name}'"
                        + (f" at {where}" if where else "")
                    )
            if block is defined_in:
                return
            here = block.parent_op()


@irdl_op_definition
class AliasSelectOp(IRDLOperation):
    """
    A view of `buffer` with `axis` fixed at `index` (rank-reducing, like `memref.subview` or
    nvFuser's HirAliasSelect). Writes through the view land in the buffer.

    Verifies:
        `axis` is an axis of `buffer`; the result type is `buffer`'s without that axis, with the
        remaining strides and a dynamic offset.

    Example:
        %row = hir.alias_select %buf[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    """

    name = "hir.alias_select"

    buffer = operand_def(MemRefType)
    index = operand_def(IndexType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(MemRefType)

    traits = traits_def(Pure())
    assembly_format = "$buffer `[` $index `]` `axis` $axis attr-dict `:` type($buffer) `->` type($result)"

    def __init__(self, buffer: SSAValue, index: SSAValue, axis: int):
        assert isinstance(buffer.type, MemRefType)
        build_directly(self, [buffer, index], [select_result_type(buffer.type, axis)], {"axis": i64_attr(axis)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        base = self.buffer.type
        assert isinstance(base, MemRefType)
        verify_buffer_types([self.buffer], "operand")
        verify_buffer_types([self.result], "result")
        rank = len(base.get_shape())
        if not 0 <= self.axis_value < rank:
            raise VerifyException(f"axis {self.axis_value} is out of range for {base} of rank {rank}")
        extent = base.get_shape()[self.axis_value]
        index = constant_index(self.index)
        if index is not None and not (0 <= index and (extent == DYNAMIC_INDEX or index < extent)):
            raise VerifyException(f"index {index} is out of range for axis {self.axis_value} of extent {extent}")
        expected = select_result_type(base, self.axis_value)
        if self.result.type != expected:
            raise VerifyException(f"result type must be {expected}, got {self.result.type}")


def chunk_extent(extent: int, chunks: int) -> int:
    """A chunk's static extent: extent/chunks when it divides, else dynamic (the chunks differ)."""
    if extent == DYNAMIC_INDEX or extent % chunks:
        return DYNAMIC_INDEX
    return extent // chunks


def chunk_bounds(extent: int, chunks: int, index: int) -> tuple[int, int]:
    """(start, length) of chunk `index`: ceil(extent/chunks) elements, the last ones clamped (maybe empty)."""
    size = -(-extent // chunks)
    start = min(index * size, extent)
    return start, min(size, extent - start)


@cache_by_identity(maxsize=4096)
def chunk_result_type(base: MemRefType, axis: int, chunks: int) -> MemRefType:
    """The type of one of `chunks` chunks of `base` along `axis`: same rank, dynamic offset."""
    shape = list(base.get_shape())
    if chunks >= 1:
        shape[axis] = chunk_extent(shape[axis], chunks)
    return MemRefType(base.element_type, shape, StridedLayoutAttr(memref_strides(base), None))


@irdl_op_definition
class AliasChunkOp(IRDLOperation):
    """
    A view of chunk `index` of `buffer` split into `chunks` parts along `axis` (the iteration of
    a `stream(N)` axis, like nvFuser's ShardByStream). Each chunk has ceil(extent/chunks)
    elements, the last ones fewer (clamped to the extent, possibly none) when `chunks` does not
    divide the extent.

    Verifies:
        `axis` is an axis of `buffer`; `chunks` >= 1; the result type is `buffer`'s with that
        extent divided by `chunks` (dynamic when it does not divide a static extent), the same
        strides and a dynamic offset; a constant `index` is below `chunks`.

    Example:
        %c = hir.alias_chunk %buf[%i] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    """

    name = "hir.alias_chunk"

    buffer = operand_def(MemRefType)
    index = operand_def(IndexType)
    axis = prop_def(IntegerAttr[I64])
    chunks = prop_def(IntegerAttr[I64])
    result = result_def(MemRefType)

    traits = traits_def(Pure())
    assembly_format = (
        "$buffer `[` $index `]` `axis` $axis `chunks` $chunks attr-dict `:` type($buffer) `->` type($result)"
    )

    def __init__(self, buffer: SSAValue, index: SSAValue, axis: int, chunks: int):
        assert isinstance(buffer.type, MemRefType)
        super().__init__(
            operands=[buffer, index],
            result_types=[chunk_result_type(buffer.type, axis, chunks)],
            properties={"axis": i64_attr(axis), "chunks": i64_attr(chunks)},
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def chunks_value(self) -> int:
        return self.chunks.value.data

    def verify_(self) -> None:
        base = self.buffer.type
        assert isinstance(base, MemRefType)
        verify_buffer_types([self.buffer], "operand")
        verify_buffer_types([self.result], "result")
        shape = base.get_shape()
        if not 0 <= self.axis_value < len(shape):
            raise VerifyException(f"axis {self.axis_value} is out of range for {base} of rank {len(shape)}")
        if self.chunks_value < 1:
            raise VerifyException(f"chunks must be >= 1, got {self.chunks_value}")
        index = constant_index(self.index)
        if index is not None and not 0 <= index < self.chunks_value:
            raise VerifyException(f"chunk index {index} is out of range for {self.chunks_value} chunks")
        expected = chunk_result_type(base, self.axis_value, self.chunks_value)
        if self.result.type != expected:
            raise VerifyException(f"result type must be {expected}, got {self.result.type}")
