"""
Attention written as its math, on heads of a mesh (frontend/sharded_heads.py): batched matmuls,
softmax, reductions, expands, slices, cats and slice assignments along a head's own axes.
Attention written by hand is this (`softmax(q @ k^T * scale) @ v`, rotary embeddings'
`rotate_half`), and so is torch's math attention, which a training step traces where the fused
op does not apply. Every op is local to a device's heads: no communication.

    q * scale, expand, view            [D, B*nh/D, T, hd]   heads merged with the batch (axis 0)
    bmm(q, k^T)                        [D, B*nh/D, T, T]    each device's (batch, head) pairs
    view, + mask, softmax(-1)          [D, B, nh/D, T, T]   the mask replicated [T, T]
    bmm(p, v), view                    [D, B, nh/D, T, hd]

An op that would mix the heads of different devices (a reduction or a contraction along the
sharded axis, an expand of it) is an error at the user's line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
from torch.fx import Node
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import out_element
from hir.frontend.aten_composite import _slice_scatter
from hir.frontend.aten_table import ATEN_TABLE
from hir.frontend.emitter import Emitter, element_of, shape_of
from hir.frontend.sharded import HEADS

if TYPE_CHECKING:
    from hir.frontend.sharded import Form, MeshMode
    from hir.frontend.sharded_heads import Heads

aten = torch.ops.aten

REDUCTIONS = (
    aten.sum.dim_IntList, aten.mean.dim, aten.amax.default, aten.amin.default, aten.all.dim, aten.any.dim,
)  # fmt: skip
SOFTMAX = (aten._softmax.default, aten.softmax.int, aten._log_softmax.default, aten.log_softmax.int)


def install_heads_math(mode: MeshMode, heads: Heads, only: Any = None) -> None:
    """
    Heads operands of these ops (or of those in `only`: ops a mode registered again) go to
    `HeadsMath`; others go where they went before.
    """
    math = HeadsMath(mode)
    routes = {
        **{op: math.matmul for op in (aten.bmm.default, aten.matmul.default)},
        **{op: math.softmax for op in SOFTMAX},
        **{op: math.reduction for op in REDUCTIONS},
        **{op: math.new_like for op in (aten.new_zeros.default, aten.new_ones.default, aten.new_empty.default)},
        aten.expand.default: math.expand,
        aten.slice.Tensor: math.slice,
        aten.slice_scatter.default: math.slice_scatter,
    }
    for op, handler in routes.items():
        if op in mode.overrides and (only is None or op in only):
            heads.route([op], handler)
    if only is None:  # a cat of heads: its first operand is a list
        previous = mode.overrides[aten.cat.default]

        def cat(e: Emitter, node: Node, xs: Any, *args: Any) -> Any:
            if xs and isinstance(xs[0], SSAValue) and mode.form(e, xs[0]).kind == HEADS:
                return math.cat(e, node, xs, *args)
            return previous(e, node, xs, *args)

        mode.overrides[aten.cat.default] = cat


class HeadsMath:
    """The ops above on heads: the fusion op on `[D, *local]`, the axes shifted by the device axis."""

    def __init__(self, mode: MeshMode):
        self.mode = mode

    def matmul(self, e: Emitter, node: Node, a: Any, b: Any) -> SSAValue:
        """
        A batched matmul (`bmm`, or `@` of two heads) of heads sharded alike along a batch axis:
        each device multiplies its own (batch, head) matrices.
        """
        fa, fb = self._form(e, node, a), self._form(e, node, b)
        rank = len(fa.logical)
        alike = (fb.axis, fb.merged, fb.merged_axis) == (fa.axis, fa.merged, fa.merged_axis)
        if not alike or rank < 3 or len(fb.logical) != rank or fa.axis >= rank - 2:
            raise e.error(
                f"{node.target}: on a mesh, a batched matmul takes heads sharded alike along a batch axis, got "
                f"{list(fa.logical)} (axis {fa.axis}) and {list(fb.logical)} (axis {fb.axis})"
            )
        shape = (*shape_of(a)[:-1], shape_of(b)[-1])
        result = e.typed(lambda t: fusion.MatmulOp(a, b, t), [a, b], shape, out_element(node))
        return self._keep(result, fa, node)

    def softmax(self, e: Emitter, node: Node, x: Any, dim: int, *args: Any) -> SSAValue:
        form = self._form(e, node, x)
        axis = self._unsharded(e, node, form, [dim])[0]
        return self._keep(ATEN_TABLE[node.target](e, node, x, axis + 1, *args), form, node)

    def reduction(self, e: Emitter, node: Node, x: Any, dims: Any = None, *args: Any, **kwargs: Any) -> Any:
        """A reduction along unsharded axes of heads (a softmax's row sums, its all-masked guard)."""
        form = self._form(e, node, x)
        if dims is None or dims == []:
            raise e.error(f"{node.target}: on a mesh, a reduction of heads names its axes (not the sharded one)")
        axes = self._unsharded(e, node, form, [dims] if isinstance(dims, int) else list(dims))
        keepdim = args[0] if args else kwargs.pop("keepdim", False)
        result = ATEN_TABLE[node.target](e, node, x, [a + 1 for a in axes], keepdim, *args[1:], **kwargs)
        dropped = 0 if keepdim else sum(a < form.axis for a in axes)
        return self._keep(result, form, node, axis=form.axis - dropped)

    def expand(self, e: Emitter, node: Node, x: Any, sizes: list[int], implicit: bool = False) -> SSAValue:
        """An expand along unsharded axes (grouped-query attention's repeat of key and value heads)."""
        form = self._form(e, node, x)
        target = tuple(int(n) for n in node.meta["val"].shape)
        if target == form.logical:
            return x
        lead = len(target) - len(form.logical)
        if lead or target[form.axis] != form.logical[form.axis]:
            raise e.error(
                f"{node.target}: on a mesh, an expand of heads {list(form.logical)} to {list(target)} keeps their "
                f"rank and their sharded axis {form.axis}"
            )
        local = tuple(shape_of(x)[1 + i] if i == form.axis else n for i, n in enumerate(target))
        result = e.broadcast_to(x, (shape_of(x)[0], *local))
        return self._keep(result, form, node)

    def slice(
        self, e: Emitter, node: Node, x: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
    ) -> SSAValue:
        """A slice along an unsharded axis (rotary embeddings' halves of the head dimension)."""
        form = self._form(e, node, x)
        (axis,) = self._unsharded(e, node, form, [dim])
        target = tuple(int(n) for n in node.meta["val"].shape)
        if target == form.logical:
            return x
        extent = form.logical[axis]
        begin = 0 if start is None else start
        begin = max(0, min(extent, begin + extent if begin < 0 else begin))
        shape = list(shape_of(x))
        shape[axis + 1] = target[axis]
        offsets = [begin if k == axis + 1 else 0 for k in range(len(shape))]
        strides = [step if k == axis + 1 else 1 for k in range(len(shape))]
        result = e.typed(lambda t: fusion.SliceOp(x, offsets, strides, t), [x], tuple(shape), element_of(x))
        return self._keep(result, form, node)

    def slice_scatter(
        self, e: Emitter, node: Node, x: Any, source: Any, dim: int = 0, start: Any = None, end: Any = None,
        step: int = 1,
    ) -> SSAValue:  # fmt: skip
        """`x[..., start:end] = source` along an unsharded axis (the backward of a slice)."""
        form, other = self._form(e, node, x), self._form(e, node, source)
        (axis,) = self._unsharded(e, node, form, [dim])
        if (other.axis, other.merged, other.merged_axis) != (form.axis, form.merged, form.merged_axis):
            raise e.error(f"{node.target}: on a mesh, a slice assignment takes heads sharded alike")
        result = _slice_scatter(e, node, x, source, axis + 1, start, end, step)
        return self._keep(result, form, node)

    def new_like(self, e: Emitter, node: Node, x: Any, size: Any, *args: Any, **kwargs: Any) -> SSAValue:
        """
        `x.new_zeros(size)` (a slice's backward pads with it): a constant laid out as the heads,
        of their rank and sharded extent (other extents may differ).
        """
        form = self._form(e, node, x)
        size = tuple(int(n) for n in size)
        if len(size) != len(form.logical) or size[form.axis] != form.logical[form.axis]:
            raise e.error(
                f"{node.target}: on a mesh, a new tensor from heads {list(form.logical)} keeps their rank and "
                f"their sharded axis {form.axis}, got {list(size)}"
            )
        shape = tuple(shape_of(x)[i + 1] if i == form.axis else n for i, n in enumerate(size))
        fill = 1 if node.target == aten.new_ones.default else 0
        result = e.broadcast_to(e.constant(fill, out_element(node)), (shape_of(x)[0], *shape), like=x)
        return self._keep(result, form, node)

    def cat(self, e: Emitter, node: Node, xs: list[Any], dim: int = 0) -> SSAValue:
        """Heads sharded alike, joined along an unsharded axis (`rotate_half`'s `cat((-x2, x1), -1)`)."""
        forms = [self._form(e, node, x) for x in xs]
        (axis,) = self._unsharded(e, node, forms[0], [dim])
        if len({(f.axis, f.merged, f.merged_axis) for f in forms}) != 1:
            raise e.error(f"{node.target}: on a mesh, a cat takes heads sharded alike")
        element = out_element(node)
        xs = [e.cast(x, element) for x in xs]
        shape = list(shape_of(xs[0]))
        shape[axis + 1] = sum(shape_of(x)[axis + 1] for x in xs)
        result = e.typed(lambda t: fusion.ConcatOp(xs, axis + 1, t), xs, tuple(shape), element)
        return self._keep(result, forms[0], node)

    # -- helpers ---------------------------------------------------------------------------------

    def _form(self, e: Emitter, node: Node, x: Any) -> Form:
        form = self.mode.form(e, x) if isinstance(x, SSAValue) else None
        if form is None or form.kind != HEADS:
            raise e.error(f"{node.target}: on a mesh, this op takes heads, not a {form.kind if form else 'constant'}")
        return form

    def _unsharded(self, e: Emitter, node: Node, form: Form, dims: list[int]) -> list[int]:
        rank = len(form.logical)
        axes = sorted({d % rank for d in dims})
        if form.axis in axes:
            raise e.error(
                f"{node.target} along axis {form.axis} of heads {list(form.logical)}, the axis the devices "
                "share out: each device holds only its own heads"
            )
        return axes

    def _keep(self, result: Any, form: Form, node: Node, axis: int | None = None) -> Any:
        logical = tuple(int(n) for n in node.meta["val"].shape)
        new = replace(form, logical=logical, axis=form.axis if axis is None else axis)
        for r in result if isinstance(result, tuple) else (result,):
            self.mode.forms[r] = new
        return result
