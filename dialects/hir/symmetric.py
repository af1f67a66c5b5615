"""Symmetric memory: this device's mesh position, peers' copies of a buffer, and barriers (copy-engine transfers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, IndexType, IntegerAttr, MemRefType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import VarConstraint, base, irdl_op_definition, operand_def, opt_prop_def, result_def, traits_def
from xdsl.traits import EffectInstance, Pure
from xdsl.utils.exceptions import VerifyException

from hir.dialects.hir.base import READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE, HirEffects, MeshOp, write
from hir.dialects.hir.buffers import AllocateOp
from hir.dialects.syntax import IntList, int_array


@irdl_op_definition
class DeviceIndexOp(MeshOp):
    """
    This device's position in `mesh` (0 on a single device). A device outside `mesh` gets 0, or
    `outside` when given (a device that runs the program but whose result of it carries no
    meaning, e.g. the local slice of a scatter to a sub-mesh), and takes no part in the mesh's
    transfers, as with its collectives: its `hir.peer_view`s of the mesh are its own buffers and
    its `hir.barrier`s of the mesh return at once.

    Example:
        %me = hir.device_index mesh = [0, 1]
        %slot = hir.device_index mesh = [0, 1] outside 0
    """

    name = "hir.device_index"

    result = result_def(IndexType)
    outside = opt_prop_def(IntegerAttr[I64])

    traits = traits_def(Pure())
    custom_directives = (IntList,)
    assembly_format = "`mesh` `=` custom<IntList>($mesh) (`outside` $outside^)? attr-dict"

    def __init__(self, mesh: Sequence[int], outside: int | None = None):
        properties: dict[str, Attribute] = {"mesh": int_array(mesh)}
        if outside is not None:
            properties["outside"] = IntegerAttr(outside, i64)
        super().__init__(result_types=[IndexType()], properties=properties)


@irdl_op_definition
class PeerViewOp(MeshOp):
    """
    The copy held by mesh position `device` of a symmetric buffer (`hir.allocate symmetric`),
    mapped into this device's address space: reading it pulls the peer's data over NVLink with
    no kernel of the peer involved. Reads see what the peer wrote before the last `hir.barrier`.

    Verifies:
        When `buffer` comes from a `hir.allocate`, that allocation is `symmetric` (a function
        argument is taken on trust); the result has `buffer`'s type.

    Example:
        %buf = hir.allocate() symmetric : memref<2x8xf32>
        %v = hir.peer_view %buf device %peer mesh = [0, 1] : memref<2x8xf32>
    """

    name = "hir.peer_view"

    T: ClassVar = VarConstraint("T", base(MemRefType))
    buffer = operand_def(T)
    device = operand_def(IndexType)
    result = result_def(T)

    traits = traits_def(Pure())
    custom_directives = (IntList,)
    assembly_format = "$buffer `device` $device `mesh` `=` custom<IntList>($mesh) attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue, device: SSAValue, mesh: Sequence[int]):
        super().__init__(operands=[buffer, device], result_types=[buffer.type], properties={"mesh": int_array(mesh)})

    def verify_(self) -> None:
        super().verify_()
        owner = self.buffer.owner
        if isinstance(owner, AllocateOp) and owner.symmetric is None:
            raise VerifyException("hir.peer_view needs a buffer from `hir.allocate symmetric`")


@irdl_op_definition
class BarrierOp(MeshOp):
    """
    Every device of `mesh` reaches this point of its current stream before any goes on: writes to
    symmetric buffers before it are visible to peer views after it.

    Example:
        hir.barrier mesh = [0, 1]
    """

    name = "hir.barrier"

    traits = traits_def(HirEffects())
    custom_directives = (IntList,)
    assembly_format = "`mesh` `=` custom<IntList>($mesh) attr-dict"

    def __init__(self, mesh: Sequence[int]):
        super().__init__(properties={"mesh": int_array(mesh)})

    def effects(self) -> set[EffectInstance]:
        return {READS_CURRENT_STREAM, WRITES_DEVICE_QUEUE, write()}
