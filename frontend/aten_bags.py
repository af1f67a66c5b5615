"""
`nn.EmbeddingBag` (`F.embedding_bag`: a fastText classifier's, a recommender's sparse features):
the sum or the mean of each bag's embedding rows, the bags given by their offsets into a 1-D list
of ids. Each id's bag is the count of bags starting at or before it (an index_add of ones at the
offsets, then a cumsum), so that one `fusion.index_add` of the rows (times their per-sample
weights) sums them per bag: memory linear in the ids. The backward is the same walk the other way:
each id's row of the gradient is its bag's, added into the weight's gradient at the id.
"""

from __future__ import annotations

from typing import Any

from torch.fx import Node
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import Builder, aten
from hir.frontend.aten_indexing import I64, index_add, index_select
from hir.frontend.emitter import Emitter, element_of, shape_of
from hir.frontend.types import element_type

_MODES = {0: "sum", 1: "mean", 2: "max"}


class _Bags:
    """Which bag each id is in, whether it counts (not the padding id), and how many count per bag."""

    def __init__(self, e: Emitter, node: Node, indices: SSAValue, offsets: SSAValue, mode: int, scale: bool,
                 include_last_offset: bool, padding_idx: int | None) -> None:  # fmt: skip
        if mode not in (0, 1):
            raise e.error(
                f"{node.target}: mode='{_MODES.get(mode, mode)}' is not supported (a maximum per bag scatters): "
                "use mode='sum' or 'mean'"
            )
        if scale:
            raise e.error(f"{node.target}: scale_grad_by_freq=True is not supported")
        if len(shape_of(indices)) != 1 or len(shape_of(offsets)) != 1:
            raise e.error(f"{node.target}: the ids and the offsets must be 1-D (torch passes a 2-D input flattened)")
        self.e, self.mode = e, mode
        (n,), (starts,) = shape_of(indices), shape_of(offsets)
        self.ids, self.count = e.cast(indices, I64), n
        self.bags = starts - 1 if include_last_offset else starts
        # marks[j]: the bags starting at id j (the one past the end takes offsets that equal n).
        zeros = e.broadcast_to(e.constant(0, I64), (n + 1,))
        ones = e.broadcast_to(e.constant(1, I64), (starts,))
        marks = index_add(e, zeros, 0, e.cast(offsets, I64), ones)
        marks = e.typed(lambda t: fusion.SliceOp(marks, [0], [1], t), [marks], (n,), I64)
        started = e.typed(lambda t: fusion.CumsumOp(marks, 0, t), [marks], (n,), I64)
        self.bag = e.binary(fusion.SubOp, started, 1, I64)
        self.valid: SSAValue | None = None
        if padding_idx is not None and padding_idx >= 0:
            pad = e.broadcast_to(e.constant(padding_idx, I64), (n,))
            ids = self.ids
            self.valid = e.typed(lambda t: fusion.CompareOp("ne", ids, pad, t), [ids, pad], (n,), IntegerType(1))

    def weights(self, per_sample: SSAValue | None, element: Attribute) -> SSAValue | None:
        """Each id's factor: its per-sample weight, 0 for the padding id; None where every id counts once."""
        e = self.e
        w = None if per_sample is None else e.cast(per_sample, element)
        if self.valid is not None:
            valid = e.cast(self.valid, element)
            w = valid if w is None else e.binary(fusion.MulOp, w, valid, element)
        return w

    def sizes(self) -> SSAValue:
        """`[B]` I64: the ids of each bag that count."""
        e = self.e
        ones = e.cast(self.valid, I64) if self.valid is not None else e.broadcast_to(e.constant(1, I64), (self.count,))
        zeros = e.broadcast_to(e.constant(0, I64), (self.bags,))
        return index_add(e, zeros, 0, self.bag, ones)

    def divisor(self, element: Attribute) -> SSAValue:
        """`[B, 1]`: the mean's divisor per bag (1 for an empty bag, whose mean torch makes 0)."""
        e = self.e
        sizes = e.cast(self.sizes(), element)
        return e.unsqueeze(e.binary(fusion.MaximumOp, sizes, 1.0, element), [1])


def _embedding_bag(
    e: Emitter,
    node: Node,
    weight: SSAValue,
    indices: SSAValue,
    offsets: SSAValue,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: SSAValue | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = -1,
) -> tuple[SSAValue, ...]:
    """`_embedding_bag`: (the bags' sums or means, each id's bag, each bag's size, zeros for max's indices)."""
    bags = _Bags(e, node, indices, offsets, mode, scale_grad_by_freq, include_last_offset, padding_idx)
    element = element_of(weight)
    dim = shape_of(weight)[1]
    rows = index_select(e, weight, 0, bags.ids)  # [N, D]
    if (w := bags.weights(per_sample_weights, element)) is not None:
        rows = e.binary(fusion.MulOp, rows, e.unsqueeze(w, [1]), element)
    zeros = e.broadcast_to(e.constant(0, element), (bags.bags, dim))
    out = index_add(e, zeros, 0, bags.bag, rows)
    if mode == 1:
        out = e.binary(fusion.DivOp, out, bags.divisor(element), element)
    values = node.meta["val"]
    extra = [bags.bag, bags.sizes()]
    results = [out]
    for k, value in enumerate(values[1:]):  # what the backward reads, in the shapes torch gives them
        shape, dtype = tuple(value.shape), element_type(value.dtype, node)
        if k < len(extra) and shape_of(extra[k]) == shape:
            results.append(e.cast(extra[k], dtype))
        else:
            results.append(e.emit(fusion.FullOp(0, TensorType(dtype, shape))))
    return tuple(results)


def _embedding_bag_backward(
    e: Emitter,
    node: Node,
    grad: SSAValue,
    indices: SSAValue,
    offsets: SSAValue,
    offset2bag: Any,
    bag_size: Any,
    maximum_indices: Any,
    num_weights: int,
    scale_grad_by_freq: bool,
    mode: int,
    sparse: bool,
    per_sample_weights: SSAValue | None,
    padding_idx: int | None = -1,
) -> SSAValue:
    """The weight's gradient: each id's bag's gradient row (over its size, for a mean; times its weight), at the id."""
    include_last_offset = shape_of(offsets)[0] == shape_of(grad)[0] + 1
    bags = _Bags(e, node, indices, offsets, mode, scale_grad_by_freq, include_last_offset, padding_idx)
    element = element_of(grad)
    if mode == 1:
        grad = e.binary(fusion.DivOp, grad, bags.divisor(element), element)
    rows = index_select(e, grad, 0, bags.bag)  # [N, D]
    if (w := bags.weights(per_sample_weights, element)) is not None:
        rows = e.binary(fusion.MulOp, rows, e.unsqueeze(w, [1]), element)
    zeros = e.broadcast_to(e.constant(0, element), (num_weights, shape_of(grad)[1]))
    return index_add(e, zeros, 0, bags.ids, rows)


def _per_sample_weights_backward(
    e: Emitter,
    node: Node,
    grad: SSAValue,
    weight: SSAValue,
    indices: SSAValue,
    offsets: SSAValue,
    offset2bag: Any,
    mode: int,
    padding_idx: int | None = -1,
) -> SSAValue:
    """The per-sample weights' gradient: each id's row of the weight dotted with its bag's gradient (0 for padding)."""
    include_last_offset = shape_of(offsets)[0] == shape_of(grad)[0] + 1
    bags = _Bags(e, node, indices, offsets, mode, False, include_last_offset, padding_idx)
    element = element_of(grad)
    rows = index_select(e, e.cast(weight, element), 0, bags.ids)
    grads = index_select(e, grad, 0, bags.bag)
    dots = e.reduce(fusion.SumOp, e.binary(fusion.MulOp, rows, grads, element), [1], keepdim=False)
    w = bags.weights(None, element)
    return dots if w is None else e.binary(fusion.MulOp, dots, w, element)


BAG_TABLE: dict[object, Builder] = {
    aten._embedding_bag.default: _embedding_bag,
    aten._embedding_bag_forward_only.default: _embedding_bag,
    aten._embedding_bag_backward.default: _embedding_bag_backward,
    aten._embedding_bag_per_sample_weights_backward.default: _per_sample_weights_backward,
}
