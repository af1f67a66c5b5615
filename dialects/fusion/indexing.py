"""
Reading by index: `fusion.gather`, `fusion.index_select` (embeddings, `x[idx]`), `fusion.flip`,
and `fusion.iota`, the index itself; writing by index: `fusion.index_add` (an embedding's
backward, `index_put` with `accumulate=True`). Indices are signless integer tensors; they are in range (an
index out of range is torch's error at run time, as in eager torch).

An axis that an op reads by index maps to nothing in its axis map: a loop that slices it would
read the wrong elements, so the passes refuse to slice it (located, "cannot run slice by slice").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, IntegerType, Signedness, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import AxesFusionOp, FusionOp, axes_format, element_type_of, shape_of, without_operand_axis
from hir.dialects.parallel_encoding import layout_of
from hir.dialects.syntax import array_values


def verify_index(value: SSAValue, what: str) -> None:
    elt = element_type_of(value)
    if not isinstance(elt, IntegerType) or elt.width.data == 1:
        raise VerifyException(f"{what} must have an integer element type (not i1), got {elt}")
    if elt.signedness.data == Signedness.UNSIGNED:  # torch reads a uint8 index as a mask, and gathers by no uint8
        raise VerifyException(f"{what} must have a signless integer element type (i8 to i64), got {elt}")


def _dim(op: FusionOp) -> int:
    return op.dim.value.data  # type: ignore[attr-defined]


INDEXED_FORMAT = "$x `,` $index `dim` `=` $dim attr-dict `:` type($x) `,` type($index) `->` type($result)"


class _Indexed(FusionOp):
    """
    An op that reads `x` at the positions an integer `index` tensor gives along `dim`.

    Verifies:
        the index is a signless integer tensor (not i1, not ui8); the result has x's element type.
    """

    x = operand_def(TensorType)
    index = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = INDEXED_FORMAT

    def __init__(self, x: SSAValue, index: SSAValue, dim: int, result_type: Attribute):
        super().__init__(operands=[x, index], result_types=[result_type], properties={"dim": IntegerAttr(dim, i64)})

    def verify_element_types(self) -> None:
        verify_index(self.index, "the index")
        if element_type_of(self.x) != element_type_of(self.result):
            raise VerifyException(
                f"x has element type {element_type_of(self.x)}, the result {element_type_of(self.result)}"
            )


@irdl_op_definition
class GatherOp(_Indexed):
    """
    `torch.gather(x, dim, index)`: `result[..., i, ...] = x[..., index[..., i, ...], ...]` with
    `i` on axis `dim`. Off `dim` the operands have equal extents (torch allows a smaller index
    there; the frontend slices `x` to it first).

    Axis map: an axis off `dim` maps to that axis of both operands; `dim` maps to the index's
    (x is read whole along it).

    Verifies:
        The operands and the result have one rank; `dim` is an axis; the operands have equal
        extents off `dim`; the result has the index's shape.

    Example:
        %y = fusion.gather %x, %i dim = 1 : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32>
    """

    name = "fusion.gather"

    def result_shape(self) -> rules.Shape:
        x, index, dim = shape_of(self.x), shape_of(self.index), _dim(self)
        if len(x) != len(index):
            raise VerifyException(f"x has rank {len(x)}, the index {len(index)}: gather needs one rank")
        rules.check_dims([dim], len(x), "dim")
        for d, (a, b) in enumerate(zip(x, index)):
            if d != dim and not rules.shapes_match((a,), (b,)):
                raise VerifyException(f"x and the index differ on axis {d} ({rules.fmt(x)} and {rules.fmt(index)})")
        return index

    def axis_map(self) -> rules.AxisMap:
        dim = _dim(self)
        if len(shape_of(self.x)) != len(shape_of(self.index)):  # a loop's probe without the gathered axis
            raise VerifyException("x and the index need one rank")
        return tuple(((1, d),) if d == dim else ((0, d), (1, d)) for d in range(len(shape_of(self.index))))

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        dim = _dim(self)
        if result_axis is None or result_axis == dim:
            return dict(self.properties)
        return {"dim": IntegerAttr(dim - (result_axis < dim), i64)}


@irdl_op_definition
class IndexSelectOp(_Indexed):
    """
    `torch.index_select(x, dim, index)` for an index of any rank (an embedding lookup, `x[idx]`):
    the result's shape is `x.shape[:dim] + index.shape + x.shape[dim + 1:]`, each index element
    selecting one slice of `x` along `dim`.

    Axis map: x's axes before and after `dim` map to the result's; the index's axes to the
    result axes in their place; x's axis `dim` maps to nothing (read whole).

    Verifies:
        `dim` is an axis of x; the result has the shape above.

    Example:
        %e = fusion.index_select %w, %ids dim = 0 : tensor<10x16xf32>, tensor<2x4xi64> -> tensor<2x4x16xf32>
    """

    name = "fusion.index_select"

    def result_shape(self) -> rules.Shape:
        x, index, dim = shape_of(self.x), shape_of(self.index), _dim(self)
        rules.check_dims([dim], len(x), "dim")
        return (*x[:dim], *index, *x[dim + 1 :])

    def axis_map(self) -> rules.AxisMap:
        dim, rank, k = _dim(self), len(shape_of(self.x)), len(shape_of(self.index))
        before = tuple(((0, d),) for d in range(dim))
        within = tuple(((1, d),) for d in range(k))
        after = tuple(((0, d),) for d in range(dim + 1, rank))
        return (*before, *within, *after)

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        dim = _dim(self)
        if result_axis is None or result_axis >= dim:
            return dict(self.properties)
        return {"dim": IntegerAttr(dim - 1, i64)}


class _IndexScatterOp(FusionOp):
    """
    The shared form of `fusion.index_add` and `fusion.index_copy`: x with slices of `source`
    along `dim` placed at the positions the 1-D `index` names (`j` on axis `dim` of source goes to
    `index[j]`). `source` has x's shape but along `dim`, where it has the index's length.

    Axis map: an axis off `dim` maps to that axis of x and of source; `dim` maps to nothing (the
    result's slice there takes whichever source slices the index's values name), and the index
    is read whole.

    Verifies:
        `dim` is an axis of x, and not the result's didx axis; the index is 1-D; source has x's
        rank, x's extents off `dim` and the index's length along it; the result has x's shape.
        Element types: the index is a signless integer tensor (not i1, not ui8); x, source and the
        result share one.
    """

    PLACES: ClassVar[str] = "place"
    """How the op places a slice (`add`, `write`), for its messages."""

    x = operand_def(TensorType)
    index = operand_def(TensorType)
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = (
        "$x `,` $index `,` $source `dim` `=` $dim attr-dict "
        "`:` type($x) `,` type($index) `,` type($source) `->` type($result)"
    )

    def __init__(
        self, x: SSAValue, index: SSAValue, source: SSAValue, dim: int, result_type: Attribute | None = None
    ) -> None:
        super().__init__(
            operands=[x, index, source],
            result_types=[result_type or x.type],
            properties={"dim": IntegerAttr(dim, i64)},
        )

    def verify_element_types(self) -> None:
        verify_index(self.index, "the index")
        for what, value in (("source", self.source), ("the result", self.result)):
            if element_type_of(value) != element_type_of(self.x):
                raise VerifyException(f"x has element type {element_type_of(self.x)}, {what} {element_type_of(value)}")

    def result_shape(self) -> rules.Shape:
        x, index, source, dim = shape_of(self.x), shape_of(self.index), shape_of(self.source), _dim(self)
        rules.check_dims([dim], len(x), "dim")
        if len(index) != 1:
            raise VerifyException(f"the index must be 1-D, got shape {rules.fmt(index)}")
        expected = tuple(index[0] if d == dim else n for d, n in enumerate(x))
        if not rules.shapes_match(expected, source):
            raise VerifyException(
                f"source has shape {rules.fmt(source)}, expected {rules.fmt(expected)} (x's extents off "
                f"dim {dim}, the index's length along it)"
            )
        if layout_of(self.result.type).didx_axis == dim:
            raise VerifyException(
                f"the indexed axis {dim} cannot be the result's didx axis (each device would {self.PLACES} the "
                "slices of every device's positions): shard another axis, or reshard the result"
            )
        return x

    def axis_map(self) -> rules.AxisMap:
        dim = self._dim_of_one_rank()
        return tuple(() if d == dim else ((0, d), (2, d)) for d in range(len(shape_of(self.x))))

    def extent_map(self) -> rules.AxisMap:
        dim = self._dim_of_one_rank()
        return tuple(((0, d),) if d == dim else ((0, d), (2, d)) for d in range(len(shape_of(self.x))))

    def _dim_of_one_rank(self) -> int:
        # A loop's probe without the indexed axis has a result of lower rank: no axis map, which is
        # how the passes learn that the axis cannot be sliced.
        rank, dim = len(shape_of(self.x)), _dim(self)
        if len(shape_of(self.source)) != rank or len(shape_of(self.result)) != rank or not 0 <= dim < rank:
            raise VerifyException("x, source and the result need one rank, which `dim` is an axis of")
        return dim

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        removed, dim = (result_axis if result_axis is not None else operand_axes[0]), _dim(self)
        if removed is None or removed >= dim:
            return dict(self.properties)
        return {"dim": IntegerAttr(dim - 1, i64)}


@irdl_op_definition
class IndexAddOp(_IndexScatterOp):
    """
    `torch.index_add(x, dim, index, source)`: x with the slices of `source` along `dim` added at
    the positions the 1-D `index` names, `result[..., index[j], ...] += source[..., j, ...]`
    with `j` on axis `dim`; a position named several times gets each of its slices. `source` has
    x's shape but along `dim`, where it has the index's length. The scatter-add of an
    embedding's backward (`index_put` with `accumulate=True`), in memory linear in the operands.

    Axis map: an axis off `dim` maps to that axis of x and of source; `dim` maps to nothing (the
    result's slice there takes whichever source slices the index's values name), and the index
    is read whole.

    Verifies:
        `dim` is an axis of x, and not the result's didx axis (each device would add the slices
        every device's positions get); the index is 1-D; source has x's rank, x's extents off
        `dim` and the index's length along it; the result has x's shape. Element types: the
        index is a signless integer tensor (not i1, not ui8); x, source and the result share one.

    Example:
        %g = fusion.index_add %x, %i, %s dim = 0 : tensor<10x8xf32>, tensor<6xi64>, tensor<6x8xf32> -> tensor<10x8xf32>
    """

    name = "fusion.index_add"
    PLACES: ClassVar[str] = "add"


@irdl_op_definition
class IndexCopyOp(_IndexScatterOp):
    """
    `torch.index_copy(x, dim, index, source)`: x with the slices of `source` along `dim` written
    at the positions the 1-D `index` names, `result[..., index[j], ...] = source[..., j, ...]`;
    where the index names a position several times, the last such slice (as torch's CPU kernel
    writes them, in order). The functional form of a KV cache's `cache[:, :, pos] = k`: the
    runtime copies x and writes the named slices, in memory linear in the operands.

    Axis map: as `fusion.index_add`'s: an axis off `dim` maps to that axis of x and of source;
    `dim` maps to nothing, and the index is read whole.

    Verifies:
        As `fusion.index_add`: `dim` is an axis of x, and not the result's didx axis; the index
        is 1-D; source has x's rank, x's extents off `dim` and the index's length along it; the
        result has x's shape. Element types: the index is a signless integer tensor (not i1, not
        ui8); x, source and the result share one.

    Example:
        %c = fusion.index_copy %x, %i, %s dim = 1 : tensor<2x64xf32>, tensor<3xi64>, tensor<2x3xf32> -> tensor<2x64xf32>
    """

    name = "fusion.index_copy"
    PLACES: ClassVar[str] = "write"


@irdl_op_definition
class FlipOp(AxesFusionOp):
    """
    `torch.flip(x, dims)`: the axes `dims` reversed.

    Axis map: the flipped axes map to nothing (a slice of the result is another slice of x); the
    others to themselves.

    Verifies:
        `dims` are distinct axes; the result has the operand's shape and element type.

    Example:
        %y = fusion.flip %x dims = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "fusion.flip"
    AXES: ClassVar[str] = "dims"

    dims = prop_def(DenseArrayBase)
    assembly_format = axes_format("dims")

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.x)
        rules.check_dims(array_values(self.dims), len(shape), "dims")
        return shape

    def axis_map(self) -> rules.AxisMap:
        return rules.normalize_map(len(shape_of(self.x)), 1, array_values(self.dims))

    def extent_map(self) -> rules.AxisMap:
        return rules.elementwise_map(len(shape_of(self.x)), 1)

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        return without_operand_axis(self, operand_axes)


@irdl_op_definition
class IotaOp(FusionOp):
    """
    The index along axis `dim`, at every element (`torch.arange(n)` for a 1-D result; the
    frontend scales and shifts it for `arange(start, end, step)`).

    Axis map: every axis is made, not read. The axes off `dim` are sliced freely; a slice of
    `dim` would restart its count, so an op without that axis is invalid (a loop over it is
    refused).

    Verifies:
        `dim` is an axis of the result, not its didx axis (each device would count from 0); the
        shape is static; the element type is an integer or a float.

    Example:
        %i = fusion.iota dim = 1 : tensor<4x8xi64>
    """

    name = "fusion.iota"

    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = "`dim` `=` $dim attr-dict `:` type($result)"

    def __init__(self, dim: int, result_type: Attribute):
        super().__init__(result_types=[result_type], properties={"dim": IntegerAttr(dim, i64)})

    def result_shape(self) -> rules.Shape:
        shape = shape_of(self.result)
        rules.check_dims([_dim(self)], len(shape), "dim")
        if layout_of(self.result.type).didx_axis == _dim(self):
            raise VerifyException(
                f"the counted axis {_dim(self)} cannot be a didx axis (each device would count from 0)"
            )
        if any(d < 0 for d in shape):
            raise VerifyException(f"the shape {rules.fmt(shape)} must be static")
        return shape

    def verify_element_types(self) -> None:
        if element_type_of(self.result) == IntegerType(1):
            raise VerifyException("an iota of i1 holds no index")

    def axis_map(self) -> rules.AxisMap:
        # Checked here too: a loop's probe of the op without the counted axis (dim -1, below) has
        # no axis map, which is how the passes learn that the axis cannot be sliced or chunked.
        rules.check_dims([_dim(self)], len(shape_of(self.result)), "dim")
        return rules.generated_map(len(shape_of(self.result)))

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        dim = _dim(self)
        if result_axis is None:
            return dict(self.properties)
        # A slice of the counted axis is no iota: an out-of-range dim makes that op invalid.
        return {"dim": IntegerAttr(-1 if result_axis == dim else dim - (result_axis < dim), i64)}
