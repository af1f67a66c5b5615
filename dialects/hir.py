"""
The hir dialect: host programs over buffers (builtin memrefs) and CUDA streams.

Ops enqueue work on the *current stream*; `hir.set_current_stream` changes it. Side effects are
declared against two resources, the current-stream slot and the device queue, plus per-buffer
reads and writes, so that canonicalize, cse and dce never drop work or move it across a stream
switch (see `HirEffects`).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    EffectInstance,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    Pure,
    RecursiveMemoryEffect,
    Resource,
    SingleBlockImplicitTerminator,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException

from hir.dialects.parallel_encoding import local_shape
from hir.dialects.shape_rules import fmt
from hir.dialects.syntax import (
    BareWord,
    IntList,
    array_values,
    int_array,
    parse_type_list,
    print_assignments,
    print_types,
)

# -- types ----------------------------------------------------------------------------------------


@irdl_attr_definition
class StreamType(ParametrizedAttribute, TypeAttribute):
    """`!hir.stream`: a CUDA stream handle."""

    name = "hir.stream"


@irdl_attr_definition
class WorkType(ParametrizedAttribute, TypeAttribute):
    """`!hir.work`: a pending communication, consumed by `hir.wait`."""

    name = "hir.work"


# -- side effects ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CurrentStream(Resource):
    """The runtime's current-stream slot."""

    def name(self) -> str:
        return "hir.current_stream"


@dataclass(frozen=True)
class DeviceQueue(Resource):
    """Work enqueued on streams: kernels, event waits, communications."""

    def name(self) -> str:
        return "hir.device_queue"


def read(value: SSAValue | None = None, resource: Resource | None = None) -> EffectInstance:
    if resource is None:
        return EffectInstance(MemoryEffectKind.READ, value)
    return EffectInstance(MemoryEffectKind.READ, value, resource)


def write(value: SSAValue | None = None, resource: Resource | None = None) -> EffectInstance:
    if resource is None:
        return EffectInstance(MemoryEffectKind.WRITE, value)
    return EffectInstance(MemoryEffectKind.WRITE, value, resource)


READS_CURRENT_STREAM = read(resource=CurrentStream())
WRITES_DEVICE_QUEUE = write(resource=DeviceQueue())


class HirEffects(MemoryEffect):
    """Trait: the op's own `effects()` method lists its effects (they depend on its operands)."""

    @classmethod
    def get_effects(cls, op: Operation) -> set[EffectInstance]:
        return op.effects()  # type: ignore[attr-defined]


# -- buffers --------------------------------------------------------------------------------------


def contiguous_strides(shape: Sequence[int]) -> list[int | None]:
    """Row-major strides; `None` (`?`) once a dynamic extent is involved."""
    strides: list[int | None] = []
    running: int | None = 1
    for extent in reversed(shape):
        strides.append(running)
        running = None if running is None or extent == DYNAMIC_INDEX else running * extent
    return list(reversed(strides))


def memref_strides(t: MemRefType) -> list[int | None]:
    if isinstance(t.layout, NoneAttr):
        return contiguous_strides(t.get_shape())
    strides = t.layout.get_strides()
    if strides is None:
        raise VerifyException(f"{t} has a layout that is not strided")
    return list(strides)


def select_result_type(base: MemRefType, axis: int) -> MemRefType:
    """The type of `base` with `axis` fixed at a dynamic index: one rank less, dynamic offset."""
    shape = [d for i, d in enumerate(base.get_shape()) if i != axis]
    strides = [s for i, s in enumerate(memref_strides(base)) if i != axis]
    return MemRefType(base.element_type, shape, StridedLayoutAttr(strides, None))


def tensor_type_of(t: MemRefType) -> TensorType:
    """The tensor a launch region sees for a buffer: same shape and element type."""
    return TensorType(t.element_type, t.get_shape())


def tensor_fits_buffer(t: Attribute, buffer: Attribute) -> bool:
    """
    A region value fits a buffer when it has the buffer's shape and element type, or, for a
    resharding launch, when it is a #fusion.parallel-encoded global tensor whose local shape (the
    shard this device holds) is the buffer's shape.
    """
    if not isinstance(t, TensorType) or not isinstance(buffer, MemRefType):
        return False
    return t.element_type == buffer.element_type and tuple(local_shape(t)) == buffer.get_shape()


def is_resharding_launch(op: LaunchOp) -> bool:
    """A launch whose region sees or yields global, encoded tensors: a communication to be lowered."""
    terminator = op.body.block.last_op
    values = [*op.body.block.args, *(terminator.operands if terminator is not None else ())]
    return any(isinstance(v.type, TensorType) and not isinstance(v.type.encoding, NoneAttr) for v in values)


@irdl_op_definition
class AllocateOp(IRDLOperation):
    """
    A new buffer; dynamic extents are operands, one per `?`. When the caller passes a
    preallocated output for the returned buffer, the runtime uses it instead. `symmetric`
    asks for symmetric memory (peers can read it directly) where the runtime has it.
    """

    name = "hir.allocate"

    dynamic_sizes = var_operand_def(IndexType)
    symmetric = opt_prop_def(UnitAttr)
    result = result_def(MemRefType)

    traits = traits_def(HirEffects())
    assembly_format = "`(` $dynamic_sizes `)` (`symmetric` $symmetric^)? attr-dict `:` type($result)"

    def __init__(self, result_type: MemRefType, dynamic_sizes: Sequence[SSAValue] = (), symmetric: bool = False):
        props: dict[str, Attribute] = {"symmetric": UnitAttr()} if symmetric else {}
        super().__init__(operands=[dynamic_sizes], result_types=[result_type], properties=props)

    def effects(self) -> set[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.ALLOC, self.result)}

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, MemRefType)
        if not isinstance(t.layout, NoneAttr):
            raise VerifyException(f"hir.allocate makes contiguous buffers; drop the layout of {t}")
        num_dynamic = sum(1 for d in t.get_shape() if d == DYNAMIC_INDEX)
        if num_dynamic != len(self.dynamic_sizes):
            raise VerifyException(
                f"{t} has {num_dynamic} dynamic extents but {len(self.dynamic_sizes)} sizes are given"
            )


@irdl_op_definition
class DeallocateOp(IRDLOperation):
    """Releases a buffer (its memory returns to the allocator once pending work is done)."""

    name = "hir.deallocate"

    buffer = operand_def(MemRefType)

    traits = traits_def(HirEffects())
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])

    def effects(self) -> set[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.FREE, self.buffer)}


@irdl_op_definition
class AliasSelectOp(IRDLOperation):
    """
    A view of `buffer` with `axis` fixed at `index` (rank-reducing, like `memref.subview` or
    nvFuser's HirAliasSelect). Writes through the view land in the buffer.
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
        super().__init__(
            operands=[buffer, index],
            result_types=[select_result_type(buffer.type, axis)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        base = self.buffer.type
        assert isinstance(base, MemRefType)
        rank = len(base.get_shape())
        if not 0 <= self.axis_value < rank:
            raise VerifyException(f"axis {self.axis_value} is out of range for {base} of rank {rank}")
        expected = select_result_type(base, self.axis_value)
        if self.result.type != expected:
            raise VerifyException(f"result type must be {expected}, got {self.result.type}")


def chunk_result_type(base: MemRefType, axis: int, chunks: int) -> MemRefType:
    """The type of one of `chunks` equal chunks of `base` along `axis`: same rank, dynamic offset."""
    shape = list(base.get_shape())
    if shape[axis] != DYNAMIC_INDEX:
        shape[axis] //= chunks
    return MemRefType(base.element_type, shape, StridedLayoutAttr(memref_strides(base), None))


@irdl_op_definition
class AliasChunkOp(IRDLOperation):
    """
    A view of chunk `index` of `buffer` split into `chunks` equal parts along `axis` (the
    iteration of a `stream(N)` axis, like nvFuser's ShardByStream). The extent must divide.
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
            properties={"axis": IntegerAttr(axis, i64), "chunks": IntegerAttr(chunks, i64)},
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
        shape = base.get_shape()
        if not 0 <= self.axis_value < len(shape):
            raise VerifyException(f"axis {self.axis_value} is out of range for {base} of rank {len(shape)}")
        if self.chunks_value < 1:
            raise VerifyException(f"chunks must be >= 1, got {self.chunks_value}")
        extent = shape[self.axis_value]
        if extent != DYNAMIC_INDEX and extent % self.chunks_value:
            raise VerifyException(
                f"{self.chunks_value} chunks do not divide the extent {extent} of axis {self.axis_value}"
            )
        expected = chunk_result_type(base, self.axis_value, self.chunks_value)
        if self.result.type != expected:
            raise VerifyException(f"result type must be {expected}, got {self.result.type}")


# -- loops and terminators ------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `hir.for` and `hir.stream_for` (no operands) and `hir.launch` (the values written to `outs`)."""

    name = "hir.yield"

    values = var_operand_def()

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp, StreamForOp, LaunchOp), Pure()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


def print_loop_header(printer: Printer, iv: SSAValue, lb: SSAValue, ub: SSAValue, step: SSAValue) -> None:
    """` %i = %lb to %ub step %st`"""
    printer.print_string(" ")
    printer.print_ssa_value(iv)
    printer.print_string(" = ")
    printer.print_ssa_value(lb)
    printer.print_string(" to ")
    printer.print_ssa_value(ub)
    printer.print_string(" step ")
    printer.print_ssa_value(step)


def parse_loop_header(parser: Parser) -> tuple[Parser.UnresolvedArgument, SSAValue, SSAValue, SSAValue]:
    """`%i = %lb to %ub step %st`: the induction variable (unresolved) and the index bounds."""
    index = IndexType()
    iv = parser.parse_argument(expect_type=False)
    parser.parse_punctuation("=")
    lb = parser.parse_operand(index)
    parser.parse_keyword("to")
    ub = parser.parse_operand(index)
    parser.parse_keyword("step")
    step = parser.parse_operand(index)
    return iv, lb, ub, step


def verify_loop_body(op: Operation, body: Region, arg_types: Sequence[type[Attribute]], what: str) -> None:
    """The body's block arguments have these types, and its `hir.yield` carries no values."""
    args = body.block.args
    if len(args) != len(arg_types) or not all(isinstance(a.type, t) for a, t in zip(args, arg_types)):
        raise VerifyException(f"{op.name} body must have exactly {what}")
    if body.block.last_op is not None and body.block.last_op.operands:
        raise VerifyException(f"{op.name} carries no values: its hir.yield takes no operands")


def with_implicit_terminator(op: ForOp | StreamForOp) -> None:
    for trait in op.get_traits_of_type(SingleBlockImplicitTerminator):
        ensure_terminator(op, trait)


@irdl_op_definition
class ForOp(IRDLOperation):
    """A host loop `lb to ub step s` with an index block argument (no loop-carried values)."""

    name = "hir.for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(self, lb: SSAValue, ub: SSAValue, step: SSAValue, body: Region | Block):
        region = body if isinstance(body, Region) else Region(body)
        super().__init__(operands=[lb, ub, step], regions=[region])
        with_implicit_terminator(self)

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        verify_loop_body(self, self.body, (IndexType,), "one index block argument")

    def print(self, printer: Printer) -> None:
        print_loop_header(printer, self.induction_var, self.lb, self.ub, self.step)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv, lb, ub, step = parse_loop_header(parser)
        body = parser.parse_region((iv.resolve(IndexType()),))
        op = cls(lb, ub, step, body)
        op.attributes |= parser.parse_optional_attr_dict()
        with_implicit_terminator(op)
        return op


@irdl_op_definition
class StreamForOp(IRDLOperation):
    """
    A loop whose iterations run on pool streams, forked from and joined into the stream `main`:

        hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %num_streams from %main {
          ...   // iteration i: %s = pool stream (i mod num_streams), and it is the current stream
        }

    Before any iteration's work, every worker stream waits for `main` (the fork; all fork waits
    come first, since a fork inside iteration i+1 would also wait for what `main` waited for at
    the end of iteration i, the workers of iterations 0..i, serializing the pipeline). Iteration
    i makes its worker current, runs the body, makes `main` current again and has it wait for
    the worker (the join). So after the loop `main` is current (unchanged with no iteration) and
    has waited for all the work. The body may switch streams; the join waits for the worker only.

    `peel_first` asks `hir-expand-stream-loops` to emit the first iteration as straight-line code
    after the fork, when the bounds are constants: a schedule hint that never changes results.
    The op is executable as it is; `hir-expand-stream-loops` lowers it to the `hir.for` fork loop
    and main loop with explicit stream ops.
    """

    name = "hir.stream_for"

    lb = operand_def(IndexType)
    ub = operand_def(IndexType)
    step = operand_def(IndexType)
    num_streams = operand_def(IndexType)
    main = operand_def(StreamType)
    peel_first = opt_prop_def(UnitAttr)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), HirEffects(), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: SSAValue,
        ub: SSAValue,
        step: SSAValue,
        num_streams: SSAValue,
        main: SSAValue,
        body: Region | Block,
        peel_first: bool = False,
    ):
        region = body if isinstance(body, Region) else Region(body)
        props: dict[str, Attribute] = {"peel_first": UnitAttr()} if peel_first else {}
        super().__init__(operands=[lb, ub, step, num_streams, main], regions=[region], properties=props)
        with_implicit_terminator(self)

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    @property
    def worker(self) -> SSAValue:
        """The block argument holding iteration i's pool stream."""
        return self.body.block.args[1]

    def effects(self) -> set[EffectInstance]:
        # Besides its body's effects: it switches the current stream and enqueues the fork/join waits.
        return {write(resource=CurrentStream()), WRITES_DEVICE_QUEUE}

    def verify_(self) -> None:
        verify_loop_body(self, self.body, (IndexType, StreamType), "an index and a !hir.stream block argument")

    def print(self, printer: Printer) -> None:
        print_loop_header(printer, self.induction_var, self.lb, self.ub, self.step)
        printer.print_string(" streams(")
        printer.print_ssa_value(self.worker)
        printer.print_string(") of ")
        printer.print_ssa_value(self.num_streams)
        printer.print_string(" from ")
        printer.print_ssa_value(self.main)
        if self.peel_first is not None:
            printer.print_string(" peel_first")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> StreamForOp:
        iv, lb, ub, step = parse_loop_header(parser)
        parser.parse_keyword("streams")
        parser.parse_punctuation("(")
        worker = parser.parse_argument(expect_type=False)
        parser.parse_punctuation(")")
        parser.parse_keyword("of")
        num_streams = parser.parse_operand(IndexType())
        parser.parse_keyword("from")
        main = parser.parse_operand(StreamType())
        peel_first = parser.parse_optional_keyword("peel_first") is not None
        body = parser.parse_region((iv.resolve(IndexType()), worker.resolve(StreamType())))
        op = cls(lb, ub, step, num_streams, main, body, peel_first)
        op.attributes |= parser.parse_optional_attr_dict()
        with_implicit_terminator(op)
        return op


# -- compute --------------------------------------------------------------------------------------


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """
    Runs a fusion computation on the current stream, destination-passing: the region receives
    one tensor per `ins` buffer and yields one tensor per `outs` buffer, which is written there.

        hir.launch ins(%x = %a : memref<8xf32>) outs(%c : memref<8xf32>) {
          %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
          hir.yield %y : tensor<8xf32>
        }
    """

    name = "hir.launch"

    ins = var_operand_def(MemRefType)
    outs = var_operand_def(MemRefType)
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(HirEffects(), IsolatedFromAbove())

    def __init__(self, ins: Sequence[SSAValue], outs: Sequence[SSAValue], body: Region):
        super().__init__(operands=[ins, outs], regions=[body])

    def effects(self) -> set[EffectInstance]:
        return {read(v) for v in self.ins} | {write(v) for v in self.outs} | {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE}

    def verify_(self) -> None:
        from hir.dialects.fusion import FusionOp

        block = self.body.block
        if len(block.args) != len(self.ins):
            raise VerifyException(f"the region takes {len(block.args)} arguments for {len(self.ins)} ins buffers")
        for i, (arg, buffer) in enumerate(zip(block.args, self.ins)):
            if not tensor_fits_buffer(arg.type, buffer.type):
                raise VerifyException(
                    f"region argument #{i} of type {arg.type} does not fit ins #{i}: {buffer.type} "
                    f"(expected {tensor_type_of(buffer.type)} or an encoded tensor whose local shape fits)"
                )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("the region must end with hir.yield")
        if len(terminator.values) != len(self.outs):
            raise VerifyException(f"hir.yield gives {len(terminator.values)} values for {len(self.outs)} outs buffers")
        for i, (value, buffer) in enumerate(zip(terminator.values, self.outs)):
            if not tensor_fits_buffer(value.type, buffer.type):
                raise VerifyException(f"yielded value #{i} of type {value.type} does not fit outs #{i}: {buffer.type}")
        for op in block.ops:
            if op is not terminator and not isinstance(op, FusionOp):
                raise VerifyException(f"a launch region holds fusion ops only, found {op.name}")

    def print(self, printer: Printer) -> None:
        args = self.body.block.args
        printer.print_string(" ins(")
        print_assignments(printer, args, self.ins)
        if self.ins:
            printer.print_string(" : ")
            printer.print_list(zip(self.ins, args), lambda pair: self._print_in_type(printer, *pair))
        printer.print_string(") outs(")
        printer.print_list(self.outs, printer.print_operand)
        if self.outs:
            printer.print_string(" : ")
            print_types(printer, [v.type for v in self.outs])
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=True)

    @staticmethod
    def _print_in_type(printer: Printer, buffer: SSAValue, arg: SSAValue) -> None:
        printer.print_attribute(buffer.type)
        assert isinstance(buffer.type, MemRefType)
        if arg.type != tensor_type_of(buffer.type):  # a resharding launch sees the global tensor
            printer.print_string(" as ")
            printer.print_attribute(arg.type)

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        pos = parser.pos
        parser.parse_keyword("ins")
        parser.parse_punctuation("(")
        pairs: list[tuple[Parser.UnresolvedArgument, UnresolvedOperand]] = []
        ins_types: list[Attribute] = []
        region_types: list[Attribute | None] = []
        if not parser.parse_optional_punctuation(")"):

            def pair() -> tuple[Parser.UnresolvedArgument, UnresolvedOperand]:
                arg = parser.parse_argument(expect_type=False)
                parser.parse_punctuation("=")
                return arg, parser.parse_unresolved_operand()

            def in_type() -> tuple[Attribute, Attribute | None]:
                t = parser.parse_type()
                return t, parser.parse_type() if parser.parse_optional_keyword("as") else None

            pairs = [pair()]
            while parser.parse_optional_punctuation(","):
                pairs.append(pair())
            parser.parse_punctuation(":")
            typed = [in_type()]
            while parser.parse_optional_punctuation(","):
                typed.append(in_type())
            ins_types = [t for t, _ in typed]
            region_types = [seen for _, seen in typed]
            parser.parse_punctuation(")")
        parser.parse_keyword("outs")
        parser.parse_punctuation("(")
        outs: list[UnresolvedOperand] = []
        outs_types: list[Attribute] = []
        if not parser.parse_optional_punctuation(")"):
            outs = [parser.parse_unresolved_operand()]
            while parser.parse_optional_punctuation(","):
                outs.append(parser.parse_unresolved_operand())
            parser.parse_punctuation(":")
            outs_types = parse_type_list(parser)
            parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        ins = parser.resolve_operands([u for _, u in pairs], ins_types, pos)
        resolved_outs = parser.resolve_operands(outs, outs_types, pos)
        block_args = []
        for (arg, _), t, seen in zip(pairs, ins_types, region_types):
            if not isinstance(t, MemRefType):
                parser.raise_error(f"ins buffers must be memrefs, got {t}", pos)
            block_args.append(arg.resolve(seen or tensor_type_of(t)))
        body = parser.parse_region(block_args)
        op = cls(ins, resolved_outs, body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op


# -- streams --------------------------------------------------------------------------------------


@irdl_op_definition
class GetCurrentStreamOp(IRDLOperation):
    """The stream currently in use (the caller's stream at the start of the program)."""

    name = "hir.get_current_stream"

    result = result_def(StreamType)

    traits = traits_def(HirEffects())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[StreamType()])

    def effects(self) -> set[EffectInstance]:
        return {READS_CURRENT_STREAM}


@irdl_op_definition
class StreamOp(IRDLOperation):
    """Pool stream number `index`: the same CUDA stream for the same number, across runs."""

    name = "hir.stream"

    index = operand_def(IndexType)
    result = result_def(StreamType)

    traits = traits_def(Pure())
    assembly_format = "$index attr-dict"

    def __init__(self, index: SSAValue):
        super().__init__(operands=[index], result_types=[StreamType()])


@irdl_op_definition
class NumStreamsOp(IRDLOperation):
    """The runtime's number of streams (a run parameter, default 4)."""

    name = "hir.num_streams"

    result = result_def(IndexType)

    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class SetCurrentStreamOp(IRDLOperation):
    """Makes `stream` current for what follows."""

    name = "hir.set_current_stream"

    stream = operand_def(StreamType)

    traits = traits_def(HirEffects())
    assembly_format = "$stream attr-dict"

    def __init__(self, stream: SSAValue):
        super().__init__(operands=[stream])

    def effects(self) -> set[EffectInstance]:
        return {write(resource=CurrentStream())}


@irdl_op_definition
class SynchronizeOp(IRDLOperation):
    """
    The current stream waits for everything enqueued so far on `stream` (an event record on
    `stream` plus a wait on the current one; the host never blocks).
    """

    name = "hir.synchronize"

    stream = operand_def(StreamType)

    traits = traits_def(HirEffects())
    assembly_format = "$stream attr-dict"

    def __init__(self, stream: SSAValue):
        super().__init__(operands=[stream])

    def effects(self) -> set[EffectInstance]:
        return {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE}


# -- communication --------------------------------------------------------------------------------

REDUCTION_KINDS = ("sum", "max", "min")


class CommunicationOp(IRDLOperation, ABC):
    """A collective or P2P transfer among the devices of `mesh`, enqueued on the current stream."""

    mesh = prop_def(DenseArrayBase)
    result = result_def(WorkType)

    traits = traits_def(HirEffects())

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ()
    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ()

    @property
    def mesh_ids(self) -> tuple[int, ...]:
        return array_values(self.mesh)

    def effects(self) -> set[EffectInstance]:
        return (
            {read(getattr(self, n)) for n in self.READ_OPERANDS}
            | {write(getattr(self, n)) for n in self.WRITTEN_OPERANDS}
            | {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE}
        )

    def verify_(self) -> None:
        verify_mesh(self.mesh_ids)
        for name in (*self.READ_OPERANDS, *self.WRITTEN_OPERANDS):
            t = getattr(self, name).type
            if isinstance(t, MemRefType) and not isinstance(t.layout, NoneAttr):
                # Contiguous in memory: row-major strides on every axis longer than 1 (the stride of
                # an extent-1 axis never matters).
                long_axes = [i for i, extent in enumerate(t.get_shape()) if extent != 1]
                strides = [memref_strides(t)[i] for i in long_axes]
                expected = [contiguous_strides(t.get_shape())[i] for i in long_axes]
                if strides != expected or None in strides:
                    raise VerifyException(
                        f"{self.name} needs contiguous buffers (the communicated axis outermost in memory), got {t}"
                    )
        self.verify_shapes()

    def verify_shapes(self) -> None:
        pass


def verify_mesh(mesh: tuple[int, ...]) -> None:
    if not mesh or len(set(mesh)) != len(mesh) or min(mesh) < 0:
        raise VerifyException(f"mesh must list distinct non-negative device ids, got {list(mesh)}")


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, MemRefType)
    return v.type.get_shape()


def _elt(v: SSAValue) -> Attribute:
    assert isinstance(v.type, MemRefType)
    return v.type.element_type


def _check_same_elt(a: SSAValue, b: SSAValue) -> None:
    if _elt(a) != _elt(b):
        raise VerifyException(f"element types differ: {_elt(a)} and {_elt(b)}")


def _check_scaled_axis(small: SSAValue, large: SSAValue, axis: int, factor: int, what: str) -> None:
    s, g = _shape(small), _shape(large)
    if len(s) != len(g):
        raise VerifyException(f"{what}: buffers must have the same rank, got {fmt(s)} and {fmt(g)}")
    if not 0 <= axis < len(s):
        raise VerifyException(f"{what}: axis {axis} is out of range for rank {len(s)}")
    for i, (a, b) in enumerate(zip(s, g)):
        want = a * factor if i == axis and a != DYNAMIC_INDEX else a
        if DYNAMIC_INDEX not in (a, b) and want != b:
            raise VerifyException(
                f"{what}: {fmt(g)} must be {fmt(s)} with axis {axis} scaled by the mesh size {factor}"
            )


@irdl_op_definition
class AllgatherOp(CommunicationOp):
    """`output` = the `input`s of all mesh devices, concatenated along `axis` in mesh order."""

    name = "hir.allgather"

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    axis = prop_def(IntegerAttr[I64])

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ("input",)
    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ("output",)
    custom_directives = (IntList,)
    assembly_format = (
        "$input `into` $output `axis` $axis `mesh` `=` custom<IntList>($mesh) attr-dict "
        "`:` type($input) `,` type($output)"
    )

    def __init__(self, input: SSAValue, output: SSAValue, axis: int, mesh: Sequence[int]):
        super().__init__(
            operands=[input, output],
            result_types=[WorkType()],
            properties={"axis": IntegerAttr(axis, i64), "mesh": int_array(mesh)},
        )

    def verify_shapes(self) -> None:
        _check_same_elt(self.input, self.output)
        _check_scaled_axis(self.input, self.output, self.axis.value.data, len(self.mesh_ids), "allgather")


@irdl_op_definition
class ReduceScatterOp(CommunicationOp):
    """Reduces the `input`s of all devices; device k of the mesh gets chunk k along `axis`."""

    name = "hir.reduce_scatter"

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    axis = prop_def(IntegerAttr[I64])
    kind = prop_def(StringAttr)

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ("input",)
    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ("output",)
    custom_directives = (IntList, BareWord)
    assembly_format = (
        "custom<BareWord>($kind) $input `into` $output `axis` $axis `mesh` `=` custom<IntList>($mesh) "
        "attr-dict `:` type($input) `,` type($output)"
    )

    def __init__(self, input: SSAValue, output: SSAValue, axis: int, mesh: Sequence[int], kind: str = "sum"):
        super().__init__(
            operands=[input, output],
            result_types=[WorkType()],
            properties={"axis": IntegerAttr(axis, i64), "mesh": int_array(mesh), "kind": StringAttr(kind)},
        )

    def verify_shapes(self) -> None:
        _check_kind(self.kind)
        _check_same_elt(self.input, self.output)
        _check_scaled_axis(self.output, self.input, self.axis.value.data, len(self.mesh_ids), "reduce_scatter")


@irdl_op_definition
class AllreduceOp(CommunicationOp):
    """`output` = the reduction of the `input`s of all mesh devices (may be the same buffer)."""

    name = "hir.allreduce"

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    kind = prop_def(StringAttr)

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ("input",)
    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ("output",)
    custom_directives = (IntList, BareWord)
    assembly_format = (
        "custom<BareWord>($kind) $input `into` $output `mesh` `=` custom<IntList>($mesh) attr-dict "
        "`:` type($input) `,` type($output)"
    )

    def __init__(self, input: SSAValue, output: SSAValue, mesh: Sequence[int], kind: str = "sum"):
        super().__init__(
            operands=[input, output],
            result_types=[WorkType()],
            properties={"mesh": int_array(mesh), "kind": StringAttr(kind)},
        )

    def verify_shapes(self) -> None:
        _check_kind(self.kind)
        _check_same_elt(self.input, self.output)
        if _shape(self.input) != _shape(self.output):
            raise VerifyException(f"allreduce buffers differ in shape: {self.input.type} and {self.output.type}")


def _check_kind(kind: StringAttr) -> None:
    if kind.data not in REDUCTION_KINDS:
        raise VerifyException(f"unknown reduction '{kind.data}', expected one of {', '.join(REDUCTION_KINDS)}")


@irdl_op_definition
class BroadcastOp(CommunicationOp):
    """Every mesh device's `output` receives the `input` of mesh position `root`."""

    name = "hir.broadcast"

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    root = operand_def(IndexType)

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ("input",)
    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ("output",)
    custom_directives = (IntList,)
    assembly_format = (
        "$input `into` $output `root` $root `mesh` `=` custom<IntList>($mesh) attr-dict "
        "`:` type($input) `,` type($output)"
    )

    def __init__(self, input: SSAValue, output: SSAValue, root: SSAValue, mesh: Sequence[int]):
        super().__init__(
            operands=[input, output, root], result_types=[WorkType()], properties={"mesh": int_array(mesh)}
        )

    def verify_shapes(self) -> None:
        _check_same_elt(self.input, self.output)
        if _shape(self.input) != _shape(self.output):
            raise VerifyException(f"broadcast buffers differ in shape: {self.input.type} and {self.output.type}")


@irdl_op_definition
class SendOp(CommunicationOp):
    """Sends `buffer` to mesh position `peer`."""

    name = "hir.send"

    buffer = operand_def(MemRefType)
    peer = operand_def(IndexType)

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ("buffer",)
    custom_directives = (IntList,)
    assembly_format = "$buffer `to` $peer `mesh` `=` custom<IntList>($mesh) attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue, peer: SSAValue, mesh: Sequence[int]):
        super().__init__(operands=[buffer, peer], result_types=[WorkType()], properties={"mesh": int_array(mesh)})


@irdl_op_definition
class RecvOp(CommunicationOp):
    """Receives into `buffer` from mesh position `peer`."""

    name = "hir.recv"

    buffer = operand_def(MemRefType)
    peer = operand_def(IndexType)

    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ("buffer",)
    custom_directives = (IntList,)
    assembly_format = "$buffer `from` $peer `mesh` `=` custom<IntList>($mesh) attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue, peer: SSAValue, mesh: Sequence[int]):
        super().__init__(operands=[buffer, peer], result_types=[WorkType()], properties={"mesh": int_array(mesh)})


@irdl_op_definition
class WaitOp(IRDLOperation):
    """The current stream waits for the communication `work` (the host does not block)."""

    name = "hir.wait"

    work = operand_def(WorkType)

    traits = traits_def(HirEffects())
    assembly_format = "$work attr-dict"

    def __init__(self, work: SSAValue):
        super().__init__(operands=[work])

    def effects(self) -> set[EffectInstance]:
        return {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE}


# -- symmetric memory (peer-to-peer copies over the copy engines) ---------------------------------


@irdl_op_definition
class DeviceIndexOp(IRDLOperation):
    """This device's position in `mesh` (0 on a single device)."""

    name = "hir.device_index"

    mesh = prop_def(DenseArrayBase)
    result = result_def(IndexType)

    traits = traits_def(Pure())
    custom_directives = (IntList,)
    assembly_format = "`mesh` `=` custom<IntList>($mesh) attr-dict"

    def __init__(self, mesh: Sequence[int]):
        super().__init__(result_types=[IndexType()], properties={"mesh": int_array(mesh)})

    @property
    def mesh_ids(self) -> tuple[int, ...]:
        return array_values(self.mesh)

    def verify_(self) -> None:
        verify_mesh(self.mesh_ids)


@irdl_op_definition
class PeerViewOp(IRDLOperation):
    """
    The copy held by mesh position `device` of a symmetric buffer (`hir.allocate symmetric`),
    mapped into this device's address space: reading it pulls the peer's data over NVLink with
    no kernel of the peer involved. Reads see what the peer wrote before the last `hir.barrier`.
    """

    name = "hir.peer_view"

    T: ClassVar = VarConstraint("T", base(MemRefType))
    buffer = operand_def(T)
    device = operand_def(IndexType)
    mesh = prop_def(DenseArrayBase)
    result = result_def(T)

    traits = traits_def(Pure())
    custom_directives = (IntList,)
    assembly_format = "$buffer `device` $device `mesh` `=` custom<IntList>($mesh) attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue, device: SSAValue, mesh: Sequence[int]):
        super().__init__(operands=[buffer, device], result_types=[buffer.type], properties={"mesh": int_array(mesh)})

    @property
    def mesh_ids(self) -> tuple[int, ...]:
        return array_values(self.mesh)

    def verify_(self) -> None:
        verify_mesh(self.mesh_ids)
        owner = self.buffer.owner
        if isinstance(owner, AllocateOp) and owner.symmetric is None:
            raise VerifyException("hir.peer_view needs a buffer from `hir.allocate symmetric`")


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """
    Every device of `mesh` reaches this point of its current stream before any goes on: writes to
    symmetric buffers before it are visible to peer views after it.
    """

    name = "hir.barrier"

    mesh = prop_def(DenseArrayBase)

    traits = traits_def(HirEffects())
    custom_directives = (IntList,)
    assembly_format = "`mesh` `=` custom<IntList>($mesh) attr-dict"

    def __init__(self, mesh: Sequence[int]):
        super().__init__(properties={"mesh": int_array(mesh)})

    @property
    def mesh_ids(self) -> tuple[int, ...]:
        return array_values(self.mesh)

    def effects(self) -> set[EffectInstance]:
        return {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE, write()}

    def verify_(self) -> None:
        verify_mesh(self.mesh_ids)


HIR_OPS = (
    AllocateOp,
    DeallocateOp,
    AliasSelectOp,
    AliasChunkOp,
    LaunchOp,
    ForOp,
    YieldOp,
    GetCurrentStreamOp,
    StreamOp,
    NumStreamsOp,
    SetCurrentStreamOp,
    SynchronizeOp,
    StreamForOp,
    AllgatherOp,
    AllreduceOp,
    ReduceScatterOp,
    BroadcastOp,
    SendOp,
    RecvOp,
    WaitOp,
    DeviceIndexOp,
    PeerViewOp,
    BarrierOp,
)

Hir = Dialect("hir", list(HIR_OPS), [StreamType, WorkType])
