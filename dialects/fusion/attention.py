"""
Attention: `fusion.sdpa`, torch's `scaled_dot_product_attention` as one op, so that the runtime
calls torch's fused attention kernel (flash or memory-efficient attention on a GPU) instead of
the matmul, softmax and matmul it decomposes into, which would write the [L, S] scores out.

Attention is independent per batch index and per head: the leading (batch) axes of the result map
to those of every operand, so a stream loop or a mesh can split batches or heads with no
communication. The query, key and value axes (L, S, E, Ev) map to nothing: each output row reads
every key, and a causal mask depends on the absolute position of the query, so a loop slicing
them would compute something else. The verifier refuses a result streamed or sharded there; an
operand sharded there is gathered first (`fusion-decompose-resharding`), as for any op whose
operand's didx axis maps to no result axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerType, TensorType, UnitAttr, f32, f64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from hir.dialects import shape_rules as rules
from hir.dialects.fusion.ops import FusionOp, element_type_of, shape_of
from hir.dialects.parallel_encoding import DIDX, STREAM, layout_of


def attention_rule(q: rules.Shape, k: rules.Shape, v: rules.Shape, mask: rules.Shape | None) -> rules.Shape:
    """The result shape `[..., L, Ev]` of queries `[..., L, E]`, keys `[..., S, E]`, values `[..., S, Ev]`."""
    if len(q) < 2 or len(k) != len(q) or len(v) != len(q):
        raise VerifyException(
            f"query, key and value must have the same rank >= 2 ([..., L, E], [..., S, E], [..., S, Ev]), "
            f"got {rules.fmt(q)}, {rules.fmt(k)} and {rules.fmt(v)}"
        )
    batch = q[:-2]
    if not (rules.shapes_match(batch, k[:-2]) and rules.shapes_match(batch, v[:-2])):
        raise VerifyException(
            f"query, key and value must have the same batch axes, got {rules.fmt(q)}, {rules.fmt(k)} and {rules.fmt(v)}"
        )
    if not rules.extents_match(q[-1], k[-1]):
        raise VerifyException(f"query {rules.fmt(q)} and key {rules.fmt(k)} differ in their last (E) extent")
    if not rules.extents_match(k[-2], v[-2]):
        raise VerifyException(f"key {rules.fmt(k)} and value {rules.fmt(v)} differ in their sequence (S) extent")
    if mask is not None:
        scores = (*batch, q[-2], k[-2])
        lead = len(scores) - len(mask)
        if lead < 0 or any(m != 1 and not rules.extents_match(m, scores[lead + i]) for i, m in enumerate(mask)):
            raise VerifyException(f"mask {rules.fmt(mask)} does not broadcast to the scores {rules.fmt(scores)}")
    return (*batch, q[-2], v[-1])


def batch_sources(q: SSAValue, tensors: int, mask: SSAValue | None) -> list[rules.AxisSources]:
    """
    Per batch axis of the queries: that axis of each of the first `tensors` operands (all of the
    queries' shape there), and of the mask (operand `tensors`) where it has the axis; an extent-1
    mask axis is a broadcast: a loop reads its index 0.
    """
    rank = len(shape_of(q))
    mask_rank = len(shape_of(mask)) if mask is not None else 0
    batch: list[rules.AxisSources] = []
    for i in range(rank - 2):
        sources = [(k, i) for k in range(tensors)]
        if (j := i - (rank - mask_rank)) >= 0:
            sources.append((tensors, j))
        batch.append(tuple(sources))
    return batch


def verify_mask_and_scale(mask: rules.Shape | None, causal: bool, scale: float) -> None:
    if mask is not None and causal:
        raise VerifyException("a mask and causal exclude each other (torch refuses both): fold the mask into one")
    if not math.isfinite(scale):
        raise VerifyException(f"scale must be finite, got {scale}")


def verify_unsplit(op: FusionOp, axes: Sequence[int], why: str) -> None:
    """The result's `axes` are neither streamed nor sharded: `why` ends with "only", before what can be split."""
    kinds = layout_of(op.results[0].type).kinds
    for axis in axes:
        if kinds[axis] in (DIDX, STREAM):
            raise VerifyException(
                f"result axis {axis} is {kinds[axis]}: {why} the batch and head axes can be split over streams "
                "or devices"
            )


def verify_attention_elements(op: FusionOp, tensors: Sequence[SSAValue], mask: SSAValue | None) -> None:
    """The result's element type is a float, the tensors' too; the mask is i1 or that float."""
    result = element_type_of(op.results[0])
    if not isinstance(result, AnyFloat):
        raise VerifyException(f"{op.name} needs a floating-point element type, got {result}")
    for i, value in enumerate(tensors):
        if element_type_of(value) != result:
            raise VerifyException(f"operand #{i} has element type {element_type_of(value)}, the result {result}")
    if mask is not None:
        element = element_type_of(mask)
        if element != result and not (isinstance(element, IntegerType) and element.width.data == 1):
            raise VerifyException(f"the mask must be i1 or {result}, got {element}")


def attention_properties(causal: bool, scale: float) -> dict[str, Attribute]:
    """The `scale` and `causal` properties every attention op carries."""
    properties: dict[str, Attribute] = {"scale": FloatAttr(scale, f64)}
    if causal:
        properties["causal"] = UnitAttr()
    return properties


@irdl_op_definition
class ScaledDotProductAttentionOp(FusionOp):
    """
    `torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
    scale=scale)` with no dropout: `softmax(q @ k^T * scale + bias) @ v`, where `bias` is the mask
    (a boolean mask: 0 where true, -inf where false; a float mask: added) or, with `causal`, the
    top-left causal mask (`tril(ones(L, S))`). Queries `[..., L, E]`, keys `[..., S, E]`, values
    `[..., S, Ev]` -> `[..., L, Ev]`; the leading axes (batch, heads) are the same in all three.

    Verifies:
        The three have the same rank >= 2 and batch axes, queries and keys the same E, keys and
        values the same S; the mask broadcasts to `[..., L, S]` and is `i1` or the result's
        element type; a mask and `causal` are not both given; `scale` is finite; the element type
        is a float; the result is neither streamed nor sharded on its last two axes (L, Ev).

    Example:
        %o = fusion.sdpa %q, %k, %v causal scale = 1.250000e-01 : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32> -> tensor<2x4x16x64xf32>
    """  # noqa: E501 (MLIR as hir-opt prints it)

    name = "fusion.sdpa"

    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    causal = opt_prop_def(UnitAttr)
    scale = prop_def(FloatAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$q `,` $k `,` $v (`mask` $mask^)? (`causal` $causal^)? `scale` `=` custom<FloatLiteral>($scale) "
        "attr-dict `:` type($q) `,` type($k) `,` type($v) (`,` type($mask)^)? `->` type($result)"
    )

    def __init__(
        self,
        q: SSAValue,
        k: SSAValue,
        v: SSAValue,
        mask: SSAValue | None,
        causal: bool,
        scale: float,
        result_type: Attribute,
    ):
        properties = attention_properties(causal, scale)
        super().__init__(operands=[q, k, v, [mask] if mask else []], result_types=[result_type], properties=properties)

    @property
    def is_causal(self) -> bool:
        return self.causal is not None

    def result_shape(self) -> rules.Shape:
        mask = shape_of(self.mask) if self.mask is not None else None
        shape = attention_rule(shape_of(self.q), shape_of(self.k), shape_of(self.v), mask)
        verify_mask_and_scale(mask, self.is_causal, self.scale.value.data)
        rank = len(shape_of(self.result))
        verify_unsplit(self, (rank - 2, rank - 1), "attention reads the L, S and E axes whole, so only")
        return shape

    def verify_element_types(self) -> None:
        verify_attention_elements(self, (self.q, self.k, self.v), self.mask)

    def axis_map(self) -> rules.AxisMap:
        return (*batch_sources(self.q, 3, self.mask), (), ())

    def extent_map(self) -> rules.AxisMap:
        rank = len(shape_of(self.q))
        return (*self.axis_map()[:-2], ((0, rank - 2),), ((2, rank - 1),))

    def properties_without_axes(
        self, operand_axes: Sequence[int | None], result_axis: int | None
    ) -> dict[str, Attribute]:
        return dict(self.properties)  # no property names an axis: the batch axes are positional


@irdl_op_definition
class ScaledDotProductAttentionBackwardOp(FusionOp):
    """
    The gradients of `fusion.sdpa` with respect to its queries, keys and values, given the
    gradient `grad` of its result, stacked: `[3, ..., L, E]` (dq, dk, dv). One op, so that the
    runtime runs torch's fused attention backward kernel once for the three (it recomputes the
    forward's softmax statistics first: the forward returns only its result). Self-attention
    shapes: queries, keys, values and `grad` all `[..., L, E]`; `mask`, `causal` and `scale` as
    for `fusion.sdpa`.

    Verifies:
        `grad`, queries, keys and values have one shape of rank >= 2; the mask broadcasts to
        `[..., L, L]` and is `i1` or the element type; not both a mask and `causal`; `scale` is
        finite; the element type is a float; the result is `[3, ...]` of that shape, neither
        streamed nor sharded on its first axis or its last two (L, E).

    Example:
        %g = fusion.sdpa_backward %dy, %q, %k, %v causal scale = 1.250000e-01 : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32> -> tensor<3x2x4x16x64xf32>
    """  # noqa: E501 (MLIR as hir-opt prints it)

    name = "fusion.sdpa_backward"

    grad = operand_def(TensorType)
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    causal = opt_prop_def(UnitAttr)
    scale = prop_def(FloatAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$grad `,` $q `,` $k `,` $v (`mask` $mask^)? (`causal` $causal^)? `scale` `=` custom<FloatLiteral>($scale) "
        "attr-dict `:` type($grad) `,` type($q) `,` type($k) `,` type($v) (`,` type($mask)^)? `->` type($result)"
    )

    def __init__(
        self,
        grad: SSAValue,
        q: SSAValue,
        k: SSAValue,
        v: SSAValue,
        mask: SSAValue | None,
        causal: bool,
        scale: float,
        result_type: Attribute,
    ):
        properties = attention_properties(causal, scale)
        operands = [grad, q, k, v, [mask] if mask else []]
        super().__init__(operands=operands, result_types=[result_type], properties=properties)

    @property
    def is_causal(self) -> bool:
        return self.causal is not None

    def result_shape(self) -> rules.Shape:
        grad, q, k, v = (shape_of(x) for x in (self.grad, self.q, self.k, self.v))
        if not all(rules.shapes_match(q, other) for other in (grad, k, v)):
            raise VerifyException(
                f"the gradient, query, key and value must have one shape [..., L, E], got {rules.fmt(grad)}, "
                f"{rules.fmt(q)}, {rules.fmt(k)} and {rules.fmt(v)}"
            )
        mask = shape_of(self.mask) if self.mask is not None else None
        attention_rule(q, k, v, mask)
        verify_mask_and_scale(mask, self.is_causal, self.scale.value.data)
        rank = len(shape_of(self.result))
        verify_unsplit(self, (0, rank - 2, rank - 1), "only")
        return (3, *q)

    def verify_element_types(self) -> None:
        verify_attention_elements(self, (self.grad, self.q, self.k, self.v), self.mask)

    def axis_map(self) -> rules.AxisMap:
        return ((), *batch_sources(self.q, 4, self.mask), (), ())

    def extent_map(self) -> rules.AxisMap:
        rank = len(shape_of(self.q))
        return ((), *self.axis_map()[1:-2], ((1, rank - 2),), ((1, rank - 1),))


def _statistics_element(element: Attribute) -> Attribute:
    """The element type of attention's softmax statistics: f64 for f64 tensors, else f32 (torch's kernels)."""
    return element if element == f64 else f32


def verify_statistics(op: FusionOp, tensors: Sequence[SSAValue], statistics: SSAValue) -> None:
    """The tensors share one floating-point element type; the statistics have f32 (f64 for f64 tensors)."""
    element = element_type_of(tensors[0])
    if not isinstance(element, AnyFloat):
        raise VerifyException(f"{op.name} needs a floating-point element type, got {element}")
    for i, value in enumerate(tensors):
        if element_type_of(value) != element:
            raise VerifyException(f"operand #{i} has element type {element_type_of(value)}, operand #0 {element}")
    expected = _statistics_element(element)
    if element_type_of(statistics) != expected:
        raise VerifyException(
            f"the softmax statistics of {element} attention are {expected}, got {element_type_of(statistics)}"
        )


@irdl_op_definition
class ScaledDotProductAttentionLogsumexpOp(FusionOp):
    """
    The softmax statistics of the unmasked (or causal) `fusion.sdpa` of `q`, `k` and `v` whose
    result is `attention`: per query row, `logsumexp` over the keys of the scaled (causally masked)
    scores, `[..., L]` in f32 (f64 for f64 tensors), as torch's fused attention kernels keep them
    for their backward. A training step's forward saves them for `fusion.sdpa_backward_stats`,
    so that the backward does not run the attention again. Where `attention` is that `fusion.sdpa`'s
    result in the same launch (same operands, `causal` and `scale`), the runtime takes the
    statistics from the one kernel call that computes both; elsewhere it runs the fused kernel
    again for them (the scores where no fused kernel applies; `attention` itself is not read).

    Verifies:
        Queries, keys and values as for `fusion.sdpa` (no mask) and `attention` of the attention's
        result shape, all of one floating-point element type; the result is `[..., L]` of f32
        (f64 for f64 tensors), not streamed or sharded on L; `scale` is finite.

    Example:
        %s = fusion.sdpa_logsumexp %q, %k, %v, %o causal scale = 1.250000e-01 : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32> -> tensor<2x4x16xf32>
    """  # noqa: E501 (MLIR as hir-opt prints it)

    name = "fusion.sdpa_logsumexp"

    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    attention = operand_def(TensorType)
    result = result_def(TensorType)
    causal = opt_prop_def(UnitAttr)
    scale = prop_def(FloatAttr)

    assembly_format = (
        "$q `,` $k `,` $v `,` $attention (`causal` $causal^)? `scale` `=` custom<FloatLiteral>($scale) "
        "attr-dict `:` type($q) `,` type($k) `,` type($v) `,` type($attention) `->` type($result)"
    )

    def __init__(
        self,
        q: SSAValue,
        k: SSAValue,
        v: SSAValue,
        attention: SSAValue,
        causal: bool,
        scale: float,
        result_type: Attribute,
    ):
        properties = attention_properties(causal, scale)
        super().__init__(operands=[q, k, v, attention], result_types=[result_type], properties=properties)

    @property
    def is_causal(self) -> bool:
        return self.causal is not None

    def result_shape(self) -> rules.Shape:
        shape = attention_rule(shape_of(self.q), shape_of(self.k), shape_of(self.v), None)
        if not rules.shapes_match(shape, shape_of(self.attention)):
            raise VerifyException(
                f"the attention {rules.fmt(shape_of(self.attention))} is not the attention's result shape "
                f"{rules.fmt(shape)}"
            )
        verify_mask_and_scale(None, self.is_causal, self.scale.value.data)
        verify_unsplit(self, (len(shape) - 2,), "the statistics read the S and E axes whole, so only")
        return shape[:-1]

    def verify_element_types(self) -> None:
        verify_statistics(self, (self.q, self.k, self.v, self.attention), self.result)

    def axis_map(self) -> rules.AxisMap:
        return (*batch_sources(self.q, 4, None), ())

    def extent_map(self) -> rules.AxisMap:
        rank = len(shape_of(self.q))
        return (*self.axis_map()[:-1], ((0, rank - 2),))


@irdl_op_definition
class ScaledDotProductAttentionStatsBackwardOp(FusionOp):
    """
    `fusion.sdpa_backward` of the unmasked (or causal) attention given its forward's result `attention`
    and softmax statistics `lse` (`fusion.sdpa_logsumexp`): the runtime calls torch's fused
    backward kernel on them (flash attention's or memory-efficient attention's on a GPU, the
    flash kernel's on a CPU) without running the forward again; where no fused kernel takes the
    tensors, the forward runs again as for `fusion.sdpa_backward`. The three gradients stacked:
    `[3, ..., L, E]` (dq, dk, dv); a launch that only slices them apart reads each gradient as
    the kernel wrote it (no stacked copy).

    Verifies:
        `grad`, queries, keys, values and `attention` have one shape of rank >= 2 and one
        floating-point element type; `lse` is `[..., L]` of f32 (f64 for f64 tensors); `scale`
        is finite; the result is `[3, ...]` of that shape, neither streamed nor sharded on its
        first axis or its last two (L, E).

    Example:
        %g = fusion.sdpa_backward_stats %dy, %q, %k, %v, %o, %s causal scale = 1.250000e-01 : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16xf32> -> tensor<3x2x4x16x64xf32>
    """  # noqa: E501 (MLIR as hir-opt prints it)

    name = "fusion.sdpa_backward_stats"

    grad = operand_def(TensorType)
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    attention = operand_def(TensorType)
    lse = operand_def(TensorType)
    result = result_def(TensorType)
    causal = opt_prop_def(UnitAttr)
    scale = prop_def(FloatAttr)

    assembly_format = (
        "$grad `,` $q `,` $k `,` $v `,` $attention `,` $lse (`causal` $causal^)? "
        "`scale` `=` custom<FloatLiteral>($scale) attr-dict `:` type($grad) `,` type($q) `,` type($k) `,` "
        "type($v) `,` type($attention) `,` type($lse) `->` type($result)"
    )

    def __init__(
        self,
        grad: SSAValue,
        q: SSAValue,
        k: SSAValue,
        v: SSAValue,
        attention: SSAValue,
        lse: SSAValue,
        causal: bool,
        scale: float,
        result_type: Attribute,
    ):
        properties = attention_properties(causal, scale)
        operands = [grad, q, k, v, attention, lse]
        super().__init__(operands=operands, result_types=[result_type], properties=properties)

    @property
    def is_causal(self) -> bool:
        return self.causal is not None

    def result_shape(self) -> rules.Shape:
        grad, q, k, v, attention = (shape_of(x) for x in (self.grad, self.q, self.k, self.v, self.attention))
        if not all(rules.shapes_match(q, other) for other in (grad, k, v, attention)):
            raise VerifyException(
                "the gradient, query, key, value and attention result must have one shape [..., L, E], got "
                f"{rules.fmt(grad)}, "
                f"{rules.fmt(q)}, {rules.fmt(k)}, {rules.fmt(v)} and {rules.fmt(attention)}"
            )
        attention_rule(q, k, v, None)
        if not rules.shapes_match(q[:-1], shape_of(self.lse)):
            raise VerifyException(f"lse {rules.fmt(shape_of(self.lse))} must be [..., L] of {rules.fmt(q)}")
        verify_mask_and_scale(None, self.is_causal, self.scale.value.data)
        rank = len(shape_of(self.result))
        verify_unsplit(self, (0, rank - 2, rank - 1), "only")
        return (3, *q)

    def verify_element_types(self) -> None:
        tensors = (self.grad, self.q, self.k, self.v, self.attention)
        verify_statistics(self, tensors, self.lse)
        if element_type_of(self.result) != element_type_of(self.q):
            raise VerifyException(
                f"the result has element type {element_type_of(self.result)}, the queries {element_type_of(self.q)}"
            )

    def axis_map(self) -> rules.AxisMap:
        return ((), *batch_sources(self.q, 6, None), (), ())

    def extent_map(self) -> rules.AxisMap:
        rank = len(shape_of(self.q))
        return ((), *self.axis_map()[1:-2], ((1, rank - 2),), ((1, rank - 1),))
