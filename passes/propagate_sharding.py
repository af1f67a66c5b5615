"""
`fusion-propagate-sharding{traversal=forward|backward|forward-backward|backward-forward}`: annotate a
few tensors, infer the rest (nvFuser's PropagateShardingsPass, MLIR's `sharding-propagation`).

A value whose tensor type has no `#fusion.parallel` encoding is *unannotated*: nobody decided where
it lives. Every annotated type is a decision of the user (or of an earlier pass) and is never
changed. The pass gives unannotated values a *device sharding*, the `didx` axis and the mesh, taken
through the ops' axis maps (the maps the stream loops use), so that ops compute on the shards they
are given instead of gathering them:

- **Forward** (ops in program order): an op whose result is unannotated takes the sharding of its
  operands. The first operand (lowest index) whose `didx` axis maps to a result axis wins: the
  result is `didx` on that axis, on that operand's mesh. An operand whose `didx` axis the op
  reduces or contracts (a `fusion.sum` over it is a partial sum, a communication; a max over it
  or a contraction over a sharded K needs the operand gathered) gives nothing. Without such an
  operand, the first operand with a mesh makes the result replicated on that mesh.
- **Backward** (ops in reverse order): an unannotated value produced by an op takes the sharding its
  consumers' results imply through the inverse axis map: `didx` on the operand axis that feeds a
  consumer's `didx` result axis, else replicated on the consumer's mesh. The first consumer in
  program order that shards it wins over those that only replicate it; among those, the first.
- `forward-backward` (the default) runs forward, then backward on what forward left unannotated;
  `backward-forward` the reverse. Each value is given a sharding at most once.

Why forward first: the sharding decisions in a program are mostly on its inputs (the runtime
shards arguments by their declared types; `hir.compile`'s `in_layouts`), and forward keeps every
op computing locally on the shards it receives, with no communication to reach a value's
sharding. Backward then fills in what forward left open, for example values computed from
replicated inputs that feed a sharded result: sharding them early costs only a local slice and
saves each device the whole computation. (MLIR's default is `backward-forward`; there results are
as often annotated as arguments.)

Only `didx` and `mesh` are propagated: the other axes of a new type are `serial` (stream axes are
propagated by `convert-fusion-to-hir`, passes/stream_axes.py). A candidate `didx` axis must have
the extent of the axis it comes from (an uneven one of extent L is split into the same chunks of
ceil(L/D)) or the mesh size; an extent-1 broadcast axis is skipped, and so is an uneven axis that
the value's producer creates (a broadcast's new axis), which cannot differ between devices, and any
axis that the producer reads whole from an operand (a softmax's axis, the indexed axis of a
`fusion.index_add`), whose shards each depend on the whole axis. When operands or
consumers disagree, one is picked as above, never an error: `fusion-decompose-resharding` then
reshards what does not agree, as if the user had written the chosen sharding. A resharding that
the lowering does not support is reported there, at the op that needs it, as it would be had the
user written the type.

Left alone: function arguments and values returned by the function (the program's interface: the
runtime shards inputs and gathers outputs by the declared types, so the function type never
changes), values used by an op that is not a fusion op, and the insides of `fusion.segment`s.

The global semantics never change: the fusion module on global tensors is still the reference,
with the same results; only where the data lives changes, and so the communication the lowering
inserts.

Cost: linear in the module: each direction visits each top-level fusion op once, reading its axis
map and its operands (forward) or the uses of its result (backward) once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, NoneAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from hir.dialects import fusion
from hir.dialects.functions import is_fusion_function
from hir.dialects.parallel_encoding import DIDX, SERIAL, ParallelAttr, layout_of
from hir.dialects.shape_rules import operand_axis_to_result_axis
from hir.pipeline import one_of, require_one_of

TRAVERSALS = ("forward", "backward", "forward-backward", "backward-forward")


@dataclass(frozen=True)
class DeviceSharding:
    """Where a tensor lives: sharded on `didx_axis` over `mesh`, or replicated on it (no axis)."""

    didx_axis: int | None
    mesh: tuple[int, ...]

    def type_for(self, t: TensorType) -> TensorType:
        """`t` (unannotated) with this sharding; every other axis serial."""
        kinds = [DIDX if axis == self.didx_axis else SERIAL for axis in range(len(t.get_shape()))]
        return TensorType(t.element_type, t.get_shape(), ParallelAttr(kinds, None, self.mesh))


def is_unannotated(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and isinstance(value.type.encoding, NoneAttr)


def may_change(value: SSAValue) -> bool:
    """An unannotated value that only fusion ops read (not the function's return, not a segment)."""
    return is_unannotated(value) and all(isinstance(use.operation, fusion.FusionOp) for use in value.uses)


def _fits(t: TensorType, axis: int, mesh: tuple[int, ...], source: TensorType, source_axis: int) -> bool:
    """
    Axis `axis` of `t` can be sharded as `source_axis` of `source` is: it has the same extent, so
    the same chunks land on the same devices (one index per device, or uneven chunks of
    ceil(L/D)), or the mesh size, or a dynamic one. An extent-1 broadcast axis does not fit.
    """
    extent = t.get_shape()[axis]
    return extent in (DYNAMIC_INDEX, len(mesh), source.get_shape()[source_axis])


def _can_make(value: SSAValue, axis: int, mesh: tuple[int, ...]) -> bool:
    """
    Whether `value`'s producer can compute its shard of `axis` as a didx axis. With one index per
    device (the mesh size) the local extent is 1, static: any producer can. An uneven axis has a
    local extent that differs between devices, which a producer can only follow when it reads
    the axis from an operand: an axis it creates (a broadcast's new axis, a `fusion.full`) has one
    static extent. An axis it reads whole from an operand (no axis map, an extent map: a softmax's
    or a scan's axis, the indexed axis of a `fusion.index_add`) it cannot make sharded at all:
    each device's shard depends on the whole axis.
    """
    assert isinstance(value.type, TensorType)
    producer = value.owner
    if not isinstance(producer, fusion.FusionOp) or producer.axis_map()[axis]:
        return True
    return value.type.get_shape()[axis] == len(mesh) and not producer.extent_map()[axis]


def forward_sharding(op: fusion.FusionOp) -> DeviceSharding | None:
    """The sharding `op`'s result takes from its operands, None when they give none."""
    result = op.results[0].type
    assert isinstance(result, TensorType)
    axis_map = op.axis_map()
    replicated: DeviceSharding | None = None
    for k, operand in enumerate(op.operands):
        layout = layout_of(operand.type)
        if layout.didx_axis is not None:
            mapped = operand_axis_to_result_axis(axis_map, k, layout.didx_axis)
            assert isinstance(operand.type, TensorType)
            if mapped is not None and _fits(result, mapped, layout.mesh, operand.type, layout.didx_axis):
                return DeviceSharding(mapped, layout.mesh)
            continue  # reduced, contracted or broadcast away: no sharding to give
        if layout.mesh and replicated is None:
            replicated = DeviceSharding(None, layout.mesh)
    return replicated


def backward_sharding(value: SSAValue, position: dict[Operation, int]) -> DeviceSharding | None:
    """The sharding `value` takes from its consumers' results, None when they give none."""
    assert isinstance(value.type, TensorType)
    best: tuple[tuple[int, int, int], DeviceSharding] | None = None
    for use in value.uses:
        consumer = use.operation
        assert isinstance(consumer, fusion.FusionOp)
        layout = layout_of(consumer.results[0].type)
        if not layout.mesh:
            continue
        sharding = DeviceSharding(None, layout.mesh)
        if layout.didx_axis is not None:
            axes = [axis for k, axis in consumer.axis_map()[layout.didx_axis] if k == use.index]
            result = consumer.results[0].type
            assert isinstance(result, TensorType)
            fits = axes and _fits(value.type, axes[0], layout.mesh, result, layout.didx_axis)
            if fits and _can_make(value, axes[0], layout.mesh):
                sharding = DeviceSharding(axes[0], layout.mesh)
        key = (0 if sharding.didx_axis is not None else 1, position[consumer], use.index)
        if best is None or key < best[0]:
            best = (key, sharding)
    return best[1] if best is not None else None


def _propagate_forward(ops: list[fusion.FusionOp]) -> None:
    for op in ops:
        result = op.results[0]
        if may_change(result) and (sharding := forward_sharding(op)) is not None:
            assert isinstance(result.type, TensorType)
            Rewriter.replace_value_with_new_type(result, sharding.type_for(result.type))


def _propagate_backward(ops: list[fusion.FusionOp]) -> None:
    position = {op: k for k, op in enumerate(ops)}
    for op in reversed(ops):
        result = op.results[0]
        if may_change(result) and (sharding := backward_sharding(result, position)) is not None:
            assert isinstance(result.type, TensorType)
            Rewriter.replace_value_with_new_type(result, sharding.type_for(result.type))


def top_level_fusion_ops(function: func.FuncOp) -> list[fusion.FusionOp]:
    """The fusion ops directly in the function's body, in order (segments are left alone)."""
    return [op for block in function.body.blocks for op in block.ops if isinstance(op, fusion.FusionOp)]


def fusion_functions(module: ModuleOp) -> Iterable[func.FuncOp]:
    for op in module.walk():
        if is_fusion_function(op):
            assert isinstance(op, func.FuncOp)
            yield op


@dataclass(frozen=True)
class PropagateShardingPass(ModulePass):
    """
    Gives unannotated tensors the device sharding (didx axis, mesh) of their neighbours.

    Through the ops' axis maps; `traversal` says in which directions and in which order.
    """

    name = "fusion-propagate-sharding"

    traversal: str = one_of("forward-backward", TRAVERSALS)

    def __post_init__(self) -> None:
        # Checked when the pass is built, so a pipeline with a bad option fails before any input is read.
        require_one_of("traversal", self.traversal, TRAVERSALS)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        directions = {"forward": _propagate_forward, "backward": _propagate_backward}
        for function in fusion_functions(op):
            ops = top_level_fusion_ops(function)
            for direction in self.traversal.split("-"):
                directions[direction](ops)
