"""
Attention written as its math, on heads of a mesh (frontend/sharded_heads.py): batched matmuls,
softmax, reductions and expands along a head's own axes. Torch's math attention is this (the
training programs trace `F.scaled_dot_product_attention` as it), and so is attention written by
hand (`softmax(q @ k^T * scale) @ v`). Every op is local to a device's heads: no communication.

    q * scale, expand, view            [D, B*nh/D, T, hd]   heads merged with the batch (axis 0)
    bmm(q, k^T)                        [D, B*nh/D, T, T]    each device's (batch, head) pairs
    view, + mask, softmax(-1)          [D, B, nh/D, T, T]   the mask replicated [T, T]
    bmm(p, v), view                    [D, B, nh/D, T, hd]

An op that would mix the heads of different devices (a reduction or a contraction along the
sharded axis, an expand of it) is an error at the user's line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.fx import Node
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.frontend.aten_common import out_element
from hir.frontend.aten_table import ATEN_TABLE
from hir.frontend.emitter import Emitter, shape_of
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
        aten.expand.default: math.expand,
    }
    for op, handler in routes.items():
        if op in mode.overrides and (only is None or op in only):
            heads.route([op], handler)


class HeadsMath:
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
        from dataclasses import replace

        logical = tuple(int(n) for n in node.meta["val"].shape)
        new = replace(form, logical=logical, axis=form.axis if axis is None else axis)
        for r in result if isinstance(result, tuple) else (result,):
            self.mode.forms[r] = new
        return result
