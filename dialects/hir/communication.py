"""
Collectives and P2P transfers (`!hir.work` results) and `hir.wait`.

Every communication op shares one skeleton, `CommunicationOp`: a mesh, a `!hir.work` result, the
buffers it reads and writes (its *roles*, which give its effects and which must be contiguous),
and the syntax `[kind] OPERANDS mesh = [..] attr-dict : TYPES`. A subclass declares its operands
and properties, its roles, the OPERANDS and TYPES pieces of its syntax (`communication_format`),
and its shape rules (`verify_shapes`).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DYNAMIC_INDEX, I64, IndexType, IntegerAttr, MemRefType, NoneAttr, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import EffectInstance
from xdsl.utils.exceptions import VerifyException

from hir.dialects.hir.base import (
    READS_CURRENT_STREAM,
    WRITES_DEVICE_QUEUE,
    HirEffects,
    MeshOp,
    WorkType,
    constant_index,
    contiguous_strides,
    memref_strides,
    read,
    verify_buffer_types,
    write,
)
from hir.dialects.shape_rules import fmt
from hir.dialects.syntax import BareWord, IntList, int_array

REDUCTION_KINDS = ("sum", "max", "min")


def communication_format(operands: str, types: str, kind: bool = False) -> str:
    """The syntax of a communication op from its pieces: `[kind] OPERANDS mesh = [..] attr-dict : TYPES`."""
    prefix = "custom<BareWord>($kind) " if kind else ""
    return f"{prefix}{operands} `mesh` `=` custom<IntList>($mesh) attr-dict `:` {types}"


class CommunicationOp(MeshOp, ABC):
    """
    A collective or P2P transfer among the devices of `mesh`, enqueued on the current stream.

    Verifies:
        Every buffer it reads or writes is contiguous: a memref without a layout, or strides
        that are row-major on every axis of extent > 1.
    """

    result = result_def(WorkType)

    traits = traits_def(HirEffects())
    custom_directives = (IntList, BareWord)

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ()
    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, operands: Sequence[SSAValue], mesh: Sequence[int], **properties: Attribute):
        super().__init__(
            operands=operands, result_types=[WorkType()], properties={"mesh": int_array(mesh), **properties}
        )

    def writing_root(self) -> SSAValue | None:
        """The mesh position that alone writes the op's outputs (`hir.reduce`), or None: every device."""
        return None

    def effects(self) -> set[EffectInstance]:
        return (
            {read(getattr(self, n)) for n in self.READ_OPERANDS}
            | {write(getattr(self, n)) for n in self.WRITTEN_OPERANDS}
            | {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE}
        )

    def verify_(self) -> None:
        super().verify_()
        verify_buffer_types([o for o in self.operands if isinstance(o.type, MemRefType)], "buffer")
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


def _shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, MemRefType)
    return v.type.get_shape()


def _elt(v: SSAValue) -> Attribute:
    assert isinstance(v.type, MemRefType)
    return v.type.element_type


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


# -- collectives from `input` buffers into `output` buffers ---------------------------------------


class TransferOp(CommunicationOp, ABC):
    """
    A collective that reads `input` and writes `output` (`%in into %out`), same element type.

    Verifies:
        `input` and `output` have the same element type.
    """

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ("input",)
    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ("output",)

    def verify_shapes(self) -> None:
        if _elt(self.input) != _elt(self.output):
            raise VerifyException(f"element types differ: {_elt(self.input)} and {_elt(self.output)}")

    def verify_same_shape(self, what: str) -> None:
        if _shape(self.input) != _shape(self.output):
            raise VerifyException(f"{what} buffers differ in shape: {self.input.type} and {self.output.type}")


def transfer_format(middle: str = "", kind: bool = False) -> str:
    """`[kind] %in into %out MIDDLE mesh = [..] attr-dict : type(in), type(out)`"""
    operands = f"$input `into` $output {middle}".rstrip()
    return communication_format(operands, "type($input) `,` type($output)", kind)


class ReductionTransferOp(TransferOp, ABC):
    """
    A transfer that reduces the devices' inputs with `kind` (sum, max or min).

    Verifies:
        `kind` is `sum`, `max` or `min`.
    """

    kind = prop_def(StringAttr)

    def verify_shapes(self) -> None:
        if self.kind.data not in REDUCTION_KINDS:
            raise VerifyException(f"unknown reduction '{self.kind.data}', expected one of {', '.join(REDUCTION_KINDS)}")
        super().verify_shapes()


@irdl_op_definition
class AllgatherOp(TransferOp):
    """
    `output` = the `input`s of all mesh devices, concatenated along `axis` in mesh order.

    Verifies:
        `input` and `output` have the same rank, `axis` is one of their axes, and `output` is
        `input` with that extent multiplied by the mesh size (`?` matches any extent).

    Example:
        %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x64x256xf32>, memref<2x64x256xf32>
    """

    name = "hir.allgather"

    axis = prop_def(IntegerAttr[I64])

    assembly_format = transfer_format("`axis` $axis")

    def __init__(self, input: SSAValue, output: SSAValue, axis: int, mesh: Sequence[int]):
        super().__init__([input, output], mesh, axis=IntegerAttr(axis, i64))

    def verify_shapes(self) -> None:
        super().verify_shapes()
        _check_scaled_axis(self.input, self.output, self.axis.value.data, len(self.mesh_ids), "allgather")


@irdl_op_definition
class AllToAllOp(TransferOp):
    """
    Each mesh device splits its `input` into mesh-size chunks along `split_axis` and sends chunk
    k to mesh position k; `output` holds the received chunks concatenated along `concat_axis`, in
    mesh order (MLIR's `mesh.all_to_all`).

    Verifies:
        `input` and `output` have the same rank; both axes are among theirs and outermost in
        memory (only extents of 1 before the split axis in `input` and the concat axis in
        `output`: the chunks are contiguous); `output` is `input` with the `split_axis` extent
        divided by the mesh size and the `concat_axis` extent multiplied by it (`?` matches any
        extent).

    Example:
        %w = hir.all_to_all %a into %b split_axis 1 concat_axis 0 mesh = [0, 1] : memref<1x2x16xf32>, memref<2x1x16xf32>
    """

    name = "hir.all_to_all"

    split_axis = prop_def(IntegerAttr[I64])
    concat_axis = prop_def(IntegerAttr[I64])

    assembly_format = transfer_format("`split_axis` $split_axis `concat_axis` $concat_axis")

    def __init__(self, input: SSAValue, output: SSAValue, split_axis: int, concat_axis: int, mesh: Sequence[int]):
        super().__init__(
            [input, output],
            mesh,
            split_axis=IntegerAttr(split_axis, i64),
            concat_axis=IntegerAttr(concat_axis, i64),
        )

    def verify_shapes(self) -> None:
        super().verify_shapes()
        s, o = _shape(self.input), _shape(self.output)
        split, concat, devices = self.split_axis.value.data, self.concat_axis.value.data, len(self.mesh_ids)
        if len(s) != len(o):
            raise VerifyException(f"all_to_all: buffers must have the same rank, got {fmt(s)} and {fmt(o)}")
        for name, axis in (("split_axis", split), ("concat_axis", concat)):
            if not 0 <= axis < len(s):
                raise VerifyException(f"all_to_all: {name} {axis} is out of range for rank {len(s)}")
        for what, shape, axis in (("split", s, split), ("concat", o, concat)):
            if any(extent not in (1, DYNAMIC_INDEX) for extent in shape[:axis]):
                raise VerifyException(
                    f"all_to_all: the {what} axis {axis} must be outermost in memory (only extents of 1 before "
                    f"it), got {fmt(shape)}"
                )
        if s[split] != DYNAMIC_INDEX and s[split] % devices:
            raise VerifyException(
                f"all_to_all: split axis {split} has extent {s[split]}, not a multiple of the mesh size {devices}"
            )
        want = list(s)
        if want[split] != DYNAMIC_INDEX:
            want[split] //= devices
        if want[concat] != DYNAMIC_INDEX:
            want[concat] *= devices
        if any(DYNAMIC_INDEX not in (w, g) and w != g for w, g in zip(want, o)):
            raise VerifyException(
                f"all_to_all: {fmt(o)} must be {fmt(s)} with axis {split} divided and axis {concat} "
                f"multiplied by the mesh size {devices}"
            )


@irdl_op_definition
class ReduceScatterOp(ReductionTransferOp):
    """
    Reduces the `input`s of all devices; device k of the mesh gets chunk k along `axis`.

    Verifies:
        `input` and `output` have the same rank, `axis` is one of their axes, and `input` is
        `output` with that extent multiplied by the mesh size (`?` matches any extent).

    Example:
        %w = hir.reduce_scatter sum %a into %r axis 0 mesh = [0, 1] : memref<8x16xf32>, memref<4x16xf32>
    """

    name = "hir.reduce_scatter"

    axis = prop_def(IntegerAttr[I64])

    assembly_format = transfer_format("`axis` $axis", kind=True)

    def __init__(self, input: SSAValue, output: SSAValue, axis: int, mesh: Sequence[int], kind: str = "sum"):
        super().__init__([input, output], mesh, axis=IntegerAttr(axis, i64), kind=StringAttr(kind))

    def verify_shapes(self) -> None:
        super().verify_shapes()
        _check_scaled_axis(self.output, self.input, self.axis.value.data, len(self.mesh_ids), "reduce_scatter")


@irdl_op_definition
class AllreduceOp(ReductionTransferOp):
    """
    `output` = the reduction of the `input`s of all mesh devices (may be the same buffer).

    Verifies:
        `input` and `output` have the same shape.

    Example:
        %w = hir.allreduce sum %a into %b mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
    """

    name = "hir.allreduce"

    assembly_format = transfer_format(kind=True)

    def __init__(self, input: SSAValue, output: SSAValue, mesh: Sequence[int], kind: str = "sum"):
        super().__init__([input, output], mesh, kind=StringAttr(kind))

    def verify_shapes(self) -> None:
        super().verify_shapes()
        self.verify_same_shape("allreduce")


def verify_constant_root(op: ReduceOp | BroadcastOp, what: str) -> None:
    """A root known at compile time is a position in the mesh (at run time the communicator checks it)."""
    root, devices = constant_index(op.root), len(op.mesh_ids)
    if root is not None and not 0 <= root < devices:
        raise VerifyException(
            f"{what}: root {root} is out of range for a mesh of {devices} devices (a position in the mesh, "
            f"0 to {devices - 1})"
        )


@irdl_op_definition
class ReduceOp(ReductionTransferOp):
    """
    Reduces the `input`s of all mesh devices into the `output` of mesh position `root` (NCCL's
    reduce). Only the root's `output` is written; the other devices' `output`s are left as they
    are (and `input` is never written, unless it is the root's `output`).

    Verifies:
        `input` and `output` have the same shape; a constant `root` is a position in the mesh.

    Example:
        %w = hir.reduce sum %a into %b root %root mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
    """

    name = "hir.reduce"

    # Operands in this order (IRDL lists a subclass's fields before its bases').
    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    root = operand_def(IndexType)

    assembly_format = transfer_format("`root` $root", kind=True)

    def __init__(self, input: SSAValue, output: SSAValue, root: SSAValue, mesh: Sequence[int], kind: str = "sum"):
        super().__init__([input, output, root], mesh, kind=StringAttr(kind))

    def writing_root(self) -> SSAValue | None:
        return self.root

    def verify_shapes(self) -> None:
        super().verify_shapes()
        self.verify_same_shape("reduce")
        verify_constant_root(self, "reduce")


@irdl_op_definition
class BroadcastOp(TransferOp):
    """
    Every mesh device's `output` receives the `input` of mesh position `root` (a collective).

    Verifies:
        `input` and `output` have the same shape; a constant `root` is a position in the mesh.

    Example:
        %w = hir.broadcast %a into %b root %root mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
    """

    name = "hir.broadcast"

    # Operands in this order (IRDL lists a subclass's fields before its bases').
    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    root = operand_def(IndexType)

    assembly_format = transfer_format("`root` $root")

    def __init__(self, input: SSAValue, output: SSAValue, root: SSAValue, mesh: Sequence[int]):
        super().__init__([input, output, root], mesh)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        self.verify_same_shape("broadcast")
        verify_constant_root(self, "broadcast")


@irdl_op_definition
class CollectivePermuteOp(CommunicationOp):
    """
    Every mesh device sends `send` to the device `offset` positions later on the mesh (cyclically)
    and receives into `recv` from the device `offset` positions earlier: one step of a ring
    (XLA's `collective-permute`, MLIR's `shard.shift` with rotation). `send` and `recv` are
    distinct buffers.

    Verifies:
        `send` and `recv` have the same element type, rank and extents (`?` matches any extent);
        0 < `offset` < the mesh size.

    Example:
        %w = hir.collective_permute %a into %b offset 1 mesh = [0, 1, 2, 3] : memref<16x64xf32>, memref<16x64xf32>
    """

    name = "hir.collective_permute"

    send = operand_def(MemRefType)
    recv = operand_def(MemRefType)
    offset = prop_def(IntegerAttr[I64])

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ("send",)
    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ("recv",)
    assembly_format = communication_format("$send `into` $recv `offset` $offset", "type($send) `,` type($recv)")

    def __init__(self, send: SSAValue, recv: SSAValue, offset: int, mesh: Sequence[int]):
        super().__init__([send, recv], mesh, offset=IntegerAttr(offset, i64))

    def verify_shapes(self) -> None:
        if _elt(self.send) != _elt(self.recv):
            raise VerifyException(f"element types differ: {_elt(self.send)} and {_elt(self.recv)}")
        s, r = _shape(self.send), _shape(self.recv)
        if len(s) != len(r) or any(DYNAMIC_INDEX not in (a, b) and a != b for a, b in zip(s, r)):
            raise VerifyException(f"collective_permute: send and recv differ in shape: {fmt(s)} and {fmt(r)}")
        offset, devices = self.offset.value.data, len(self.mesh_ids)
        if not 0 < offset < devices:
            raise VerifyException(
                f"collective_permute: offset {offset} is out of range for a mesh of {devices} "
                f"device{'s' if devices > 1 else ''} (expected 0 < offset < {devices})"
            )


# -- point to point ---------------------------------------------------------------------------------


class PeerToPeerOp(CommunicationOp, ABC):
    """A transfer of `buffer` with mesh position `peer`."""

    buffer = operand_def(MemRefType)
    peer = operand_def(IndexType)

    def __init__(self, buffer: SSAValue, peer: SSAValue, mesh: Sequence[int]):
        super().__init__([buffer, peer], mesh)


def peer_to_peer_format(direction: str) -> str:
    """`%buffer to|from %peer mesh = [..] attr-dict : type(buffer)`"""
    return communication_format(f"$buffer `{direction}` $peer", "type($buffer)")


@irdl_op_definition
class SendOp(PeerToPeerOp):
    """
    Sends `buffer` to mesh position `peer`.

    Example:
        %w = hir.send %a to %peer mesh = [0, 1] : memref<4x8xf32>
    """

    name = "hir.send"

    READ_OPERANDS: ClassVar[tuple[str, ...]] = ("buffer",)
    assembly_format = peer_to_peer_format("to")


@irdl_op_definition
class RecvOp(PeerToPeerOp):
    """
    Receives into `buffer` from mesh position `peer`.

    Example:
        %w = hir.recv %a from %peer mesh = [0, 1] : memref<4x8xf32>
    """

    name = "hir.recv"

    WRITTEN_OPERANDS: ClassVar[tuple[str, ...]] = ("buffer",)
    assembly_format = peer_to_peer_format("from")


@irdl_op_definition
class WaitOp(IRDLOperation):
    """
    The current stream waits for the communication `work` (the host does not block).

    Example:
        %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf32>
        hir.wait %w
    """

    name = "hir.wait"

    work = operand_def(WorkType)

    traits = traits_def(HirEffects())
    assembly_format = "$work attr-dict"

    def __init__(self, work: SSAValue):
        super().__init__(operands=[work])

    def effects(self) -> set[EffectInstance]:
        return {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE}
