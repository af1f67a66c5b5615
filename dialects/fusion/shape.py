"""
Shape fusion ops: `fusion.broadcast`, `fusion.permute` (transposes too), `fusion.reshape`,
`fusion.slice`, `fusion.concat`. Each result is a tensor of its own (value semantics); the runtime
computes it as a view where torch can and copies only into a launch's output buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import UNARY_FORMAT, AxesFusionOp, FusionOp, UnaryFusionOp, axes_format, shape_of
from hir.dialects.syntax import array_values, int_array


@irdl_op_definition
class ExpandOp(AxesFusionOp):
    """
    `fusion.broadcast`: unsqueeze + expand, `dims` are the new axes of the result. A shape op on
    one device (no communication: the collective broadcast is `hir.broadcast`).

    Verifies:
        `dims` are distinct axes of the result, and the result without them has the operand's
        shape.

    Example:
        %y = fusion.broadcast %x dims = [0] : tensor<8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.broadcast"
    AXES: ClassVar[str] = "dims"

    dims = prop_def(DenseArrayBase)
    assembly_format = axes_format("dims")

    def result_shape(self) -> rules.Shape:
        result = shape_of(self.result)
        dims = array_values(self.dims)
        rules.check_dims(dims, len(result), "broadcast dims")
        kept = rules.reduce_shape(result, dims)
        if not rules.shapes_match(kept, shape_of(self.x)):
            raise VerifyException(
                f"broadcast of {rules.fmt(shape_of(self.x))} with new dims {list(dims)} "
                f"cannot produce {rules.fmt(result)}"
            )
        return result

    def axis_map(self) -> rules.AxisMap:
        return rules.broadcast_map(len(shape_of(self.result)), array_values(self.dims))

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        if result_axis is None:
            return dict(self.properties)
        return {"dims": int_array(d - (d > result_axis) for d in array_values(self.dims) if d != result_axis)}


@irdl_op_definition
class PermuteOp(AxesFusionOp):
    """
    `x.permute(perm)`: result axis i is operand axis perm[i].

    Verifies:
        `perm` is a permutation of the operand's axes; the result's shape is the operand's,
        permuted.

    Example:
        %t = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    """

    name = "fusion.permute"
    AXES: ClassVar[str] = "perm"

    perm = prop_def(DenseArrayBase)
    assembly_format = axes_format("perm")

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        perm = array_values(self.perm)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"perm {list(perm)} is not a permutation of the {len(shape)} operand axes")
        return tuple(shape[p] for p in perm)

    def axis_map(self) -> rules.AxisMap:
        return rules.permute_map(array_values(self.perm))

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        if result_axis is None:
            return dict(self.properties)
        perm = array_values(self.perm)
        removed = perm[result_axis]
        return {"perm": int_array(p - (p > removed) for i, p in enumerate(perm) if i != result_axis)}


@irdl_op_definition
class ReshapeOp(UnaryFusionOp):
    """
    `x.reshape(shape)` (row-major, as `stablehlo.reshape`): the result type gives the shape. A
    `view` is a reshape too: value semantics leave no difference.

    Axis map: a result axis that the reshape keeps (the only non-1 axis of its group of axes with
    equal products on both sides, say the leading `4` of `4x6x8 -> 4x48`) maps to its operand
    axis, and a stream loop can slice both. A merged axis (`48 = 6x8`) or a part of a split one maps
    to nothing: result index i reads operand elements no single operand index selects.

    Slices (`slice_sources`): a stream loop over a merged axis or the outer factor of a split one
    takes its slices of the operand as `shape_rules.reshape_slicing` says: index i of the merged
    operand axes as one index (`4x8x16 -> 32x16`, stream on 32: operand index (i / 8, i mod 8)),
    or chunk i along the split operand axis (`32x16 -> 4x8x16`, stream on 4: chunk i of 4 of the
    32); each iteration reshapes its slice. An inner factor of a split is refused.

    Verifies:
        The element counts agree; a dynamic extent (`?`) stays one axis of its own, facing a `?`
        on the other side (in order, extent-1 axes aside).

    Example:
        %y = fusion.reshape %x : tensor<4x6x8xf32> -> tensor<4x48xf32>
    """

    name = "fusion.reshape"

    assembly_format = UNARY_FORMAT

    def __init__(self, x: SSAValue, result_type: Attribute):
        super().__init__(x, result_type)

    def result_shape(self) -> rules.Shape:
        rules.reshape_groups(shape_of(self.x), shape_of(self.result))
        return shape_of(self.result)

    def axis_map(self) -> rules.AxisMap:
        return rules.reshape_map(shape_of(self.x), shape_of(self.result))

    def slice_sources(self, result: rules.Slicing) -> list[rules.Slicing | None] | None:
        operand = rules.reshape_slicing(shape_of(self.x), shape_of(self.result), result)
        return None if operand is None else [operand]


@irdl_op_definition
class SliceOp(FusionOp):
    """
    A strided slice with static offsets and strides, one per axis (as `tensor.extract_slice`; the
    result type gives the sizes): result axis k holds `x[offsets[k] + i * strides[k]]` for
    `i < size_k`. `torch.narrow(x, d, start, n)` and `x[..., a:b:s, ...]` have offset 0, stride 1
    and the full extent on the other axes.

    Axis map: an axis kept whole (offset 0, stride 1, full extent) maps to the operand's; a sliced
    axis maps to nothing (a loop cannot slice it).

    Verifies:
        One offset and one stride per axis; offsets >= 0, strides >= 1; the slice stays inside
        each axis; an axis of dynamic extent is kept whole (`?` to `?`).

    Example:
        %y = fusion.slice %x offsets = [0, 2] strides = [1, 2] : tensor<4x8xf32> -> tensor<4x3xf32>
    """

    name = "fusion.slice"

    x = operand_def(TensorType)
    offsets = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    assembly_format = (
        "$x `offsets` `=` custom<IntList>($offsets) `strides` `=` custom<IntList>($strides) attr-dict "
        "`:` type($x) `->` type($result)"
    )

    def __init__(self, x: SSAValue, offsets: Sequence[int], strides: Sequence[int], result_type: Attribute):
        super().__init__(
            operands=[x],
            result_types=[result_type],
            properties={"offsets": int_array(offsets), "strides": int_array(strides)},
        )

    def _rule(self) -> rules.AxisMap:
        return rules.slice_rule(
            shape_of(self.x), array_values(self.offsets), array_values(self.strides), shape_of(self.result)
        )

    def result_shape(self) -> rules.Shape:
        self._rule()
        return shape_of(self.result)

    def axis_map(self) -> rules.AxisMap:
        return self._rule()

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        removed = operand_axes[0]
        if removed is None:
            return dict(self.properties)
        return {
            name: int_array(v for k, v in enumerate(array_values(self.properties[name])) if k != removed)
            for name in ("offsets", "strides")
        }


@irdl_op_definition
class ConcatOp(FusionOp):
    """
    `torch.cat(xs, dim)`: the operands one after the other along `dim`.

    Axis map: every axis but `dim` maps to that axis of every operand; `dim` maps to nothing
    (a loop cannot slice it).

    Verifies:
        At least one operand; the operands have one rank, the result's element type and equal
        extents off `dim`; `dim` is an axis; the result's extent along `dim` is their sum.

    Example:
        %y = fusion.concat %a, %b dim = 1 : tensor<4x2xf32>, tensor<4x6xf32> -> tensor<4x8xf32>
    """

    name = "fusion.concat"

    xs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = "$xs `dim` `=` $dim attr-dict `:` type($xs) `->` type($result)"

    def __init__(self, xs: Sequence[SSAValue], dim: int, result_type: Attribute):
        super().__init__(operands=[xs], result_types=[result_type], properties={"dim": IntegerAttr(dim, i64)})

    def _rule(self) -> tuple[rules.Shape, rules.AxisMap]:
        return rules.concat_rule([shape_of(x) for x in self.xs], self.dim.value.data)

    def result_shape(self) -> rules.Shape:
        return self._rule()[0]

    def axis_map(self) -> rules.AxisMap:
        return self._rule()[1]

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        dim = self.dim.value.data
        if result_axis is None or result_axis == dim:
            return dict(self.properties)
        return {"dim": IntegerAttr(dim - (result_axis < dim), i64)}
