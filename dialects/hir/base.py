"""
Types, side effects and buffer-type rules shared by the hir ops.

Ops enqueue work on the *current stream*; `hir.set_current_stream` changes it. Side effects are
declared against two resources, the current-stream slot and the device queue, plus per-buffer
reads and writes, so that canonicalize, cse and dce never drop work or move it across a stream
switch (see `HirEffects`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, IntegerAttr, MemRefType, NoneAttr, TensorType, i32
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import IRDLOperation, irdl_attr_definition, prop_def
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind, Resource
from xdsl.utils.exceptions import VerifyException

from hir.dialects.parallel_encoding import local_shape
from hir.dialects.shaped_types import verify_shaped_type
from hir.dialects.syntax import array_values
from hir.dialects.type_cache import cache_by_identity

# -- types ----------------------------------------------------------------------------------------


@irdl_attr_definition
class StreamType(ParametrizedAttribute, TypeAttribute):
    """
    `!hir.stream`: a CUDA stream handle (on CPU, a token: streams there are no-ops).

    Example:
        func.func @on_stream(%s: !hir.stream) {
          hir.set_current_stream %s
          func.return
        }
    """

    name = "hir.stream"


@irdl_attr_definition
class WorkType(ParametrizedAttribute, TypeAttribute):
    """
    `!hir.work`: a pending communication, consumed by `hir.wait`.

    Example:
        func.func @post(%a: memref<4xf32>, %peer: index) -> !hir.work {
          %w = hir.send %a to %peer mesh = [0, 1] : memref<4xf32>
          func.return %w : !hir.work
        }
    """

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


# -- construction ---------------------------------------------------------------------------------


def build_directly(
    op: IRDLOperation,
    operands: Sequence[SSAValue] = (),
    result_types: Sequence[Attribute] = (),
    properties: dict[str, Attribute] | None = None,
    regions: Sequence[Region] = (),
) -> None:
    """
    Initializes `op` from flat operands, results, properties and regions, the way the parser does
    (`Operation.create`), instead of through IRDL's generic builder. That builder normalizes and
    checks every argument against the op definition, about 30 us an op (a quarter of building it):
    the lowering builds a loop, views, an allocation and a launch per unit of a module, thousands
    of them, and the verifier checks every one anyway. An op with more than one variadic operand
    passes its `operandSegmentSizes` in `properties`.
    """
    Operation.__init__(op, operands=operands, result_types=result_types, properties=properties or {}, regions=regions)


@functools.lru_cache(maxsize=256)  # attributes are immutable: ops with the same sizes share one
def operand_segments(*sizes: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, sizes)


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


@cache_by_identity(maxsize=4096)  # parsing, printing and verifying a launch ask again and again
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


def constant_index(value: SSAValue) -> int | None:
    """The value of an index defined by `arith.constant`, else None (known only at run time)."""
    owner = value.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def verify_buffer_types(values: Sequence[SSAValue], role: str) -> None:
    """The buffers' types are ones the runtime can run (`role #k has type ...: why not`)."""
    for k, value in enumerate(values):
        verify_shaped_type(value.type, f"{role} #{k}")


def verify_mesh(mesh: tuple[int, ...]) -> None:
    if not mesh or len(set(mesh)) != len(mesh) or min(mesh) < 0:
        raise VerifyException(f"mesh must list distinct non-negative device ids, got {list(mesh)}")


class MeshOp(IRDLOperation):
    """
    An op about the devices of `mesh` (device ids, written `mesh = [0, 1]`).

    Verifies:
        `mesh` lists at least one device id, all distinct and non-negative.
    """

    mesh = prop_def(DenseArrayBase)

    @property
    def mesh_ids(self) -> tuple[int, ...]:
        return array_values(self.mesh)

    def verify_(self) -> None:
        verify_mesh(self.mesh_ids)
