"""
Attention on a mesh (Megatron's tensor-parallel attention): the column-parallel projections' outputs
viewed as heads, each device attending with its own heads, and viewed back for the row-parallel
output projection. No communication: attention is independent per batch and per head.

A *heads* value is a logical tensor (the shape the user's code sees) whose `axis` is cut into D
blocks, one per device: its fusion type is `[D, *local]` (axis 0 `didx`), `local` the logical shape
with `axis` divided by D. The S stream chunks of the rows stay on the batch axis (logical axis 0):
chunk s is batches `[s*B/S, (s+1)*B/S)`, so each chunk holds whole sequences.

    q = self.q(h)                        [D, S, D, R, N/D]      columns (N = heads * head_dim)
    q = q.view(B, T, nh, hd)             [D, B, T, nh/D, hd]    heads, axis 2
    q = q.transpose(1, 2)                [D, B, nh/D, T, hd]    heads, axis 1
    y = F.scaled_dot_product_attention   [D, B, nh/D, T, hd]    per device, per chunk of batches
    y.transpose(1, 2).reshape(B*T, N)    [D, S, D, R, N/D]      columns: the row-parallel input

Norms (LayerNorm, RMSNorm) take rows (sequence parallel) or replicated rows: they normalize the
columns, which every device holds whole.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.dialects.parallel_encoding import DIDX, SERIAL, STREAM, ParallelAttr
from hir.frontend.aten_attention import (
    attention_backward_with_statistics,
    logsumexp_of,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)
from hir.frontend.aten_table import ATEN_TABLE, TRAINING_OPS_TABLE
from hir.frontend.emitter import Emitter, element_of, shape_of
from hir.frontend.sharded import ACTIVATIONS, COLUMN_BIAS, COLUMNS, HEADS, REPLICATED, WHOLE, Form

if TYPE_CHECKING:
    from hir.frontend.sharded import MeshMode

aten = torch.ops.aten


VIEWS = (aten.view.default, aten.reshape.default, aten._unsafe_view.default)


def install_heads(mode: MeshMode) -> Heads:
    """Registers the views, transposes, attention, its math and norms of the mesh mode."""
    from hir.frontend.sharded_heads_math import install_heads_math

    heads = Heads(mode)
    for op in VIEWS:
        mode.overrides[op] = heads.view
    mode.overrides[aten.transpose.int] = heads.transpose
    mode.overrides[aten.permute.default] = heads.permute
    mode.overrides[aten.scaled_dot_product_attention.default] = heads.attention
    mode.overrides[torch.ops.hir.attention.default] = heads.attention  # a training step's (training_ops.py)
    mode.overrides[torch.ops.hir.attention_backward.default] = heads.attention_backward
    mode.overrides[torch.ops.hir.attention_stats.default] = heads.attention_with_statistics
    mode.overrides[torch.ops.hir.attention_stats_backward.default] = heads.attention_backward_with_statistics
    mode.overrides[aten.layer_norm.default] = heads.norm(ATEN_TABLE[aten.layer_norm.default])
    mode.overrides[aten.rms_norm.default] = heads.norm(ATEN_TABLE[aten.rms_norm.default])
    for norm in (torch.ops.hir.layer_norm, torch.ops.hir.rms_norm):  # a training step's (training_ops.py)
        mode.overrides[norm.default] = heads.norm(TRAINING_OPS_TABLE[norm.default])
    for backward in (torch.ops.hir.layer_norm_backward, torch.ops.hir.rms_norm_backward):
        mode.overrides[backward.default] = heads.norm_backward(TRAINING_OPS_TABLE[backward.default])
    install_heads_math(mode, heads)
    # Unit axes added or dropped (repeat_kv's `x[:, :, None]`): views of heads like any other.
    heads.route([aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims], heads.view, (HEADS, COLUMN_BIAS))
    return heads


class Heads:
    def __init__(self, mode: MeshMode):
        self.mode = mode

    def route(self, ops: Any, handler: Any, kinds: tuple[str, ...] = (HEADS,)) -> None:
        """`ops` whose first operand is of a form in `kinds` go to `handler`, others where they went."""
        for op in ops:
            previous = self.mode.overrides[op]

            def routed(e: Emitter, node: Node, x: Any, *args: Any, _previous: Any = previous, **kwargs: Any) -> Any:
                if isinstance(x, SSAValue) and self.mode.form(e, x).kind in kinds:
                    return handler(e, node, x, *args, **kwargs)
                return _previous(e, node, x, *args, **kwargs)

            self.mode.overrides[op] = routed

    # -- views -----------------------------------------------------------------------------------

    def view(self, e: Emitter, node: Node, x: SSAValue, *args: Any) -> SSAValue:
        mode = self.mode
        x = mode._reduced(e, x)
        form = mode.form(e, x)
        target = tuple(int(d) for d in node.meta["val"].shape)
        if form.kind in ACTIVATIONS and target == _logical_rows(x):
            return x
        if form.kind == COLUMN_BIAS and target[-1:] == (shape_of(x)[-1] * mode.devices,) and set(target[:-1]) <= {1}:
            return x  # `scale[None, :]`: a "[didx]" vector as [1, F] still goes along the columns
        if form.kind == COLUMNS:
            return self._columns_to_heads(e, x, form, target)
        if form.kind == HEADS:
            if target == form.logical:
                return x
            axis, logical = form.axis, form.logical
            if axis >= 2 and not form.merged and target == (math.prod(logical[:axis]), math.prod(logical[axis:])):
                # Back to [rows, columns]; with a unit axis among the rows ([B, 1, heads, hd] of a
                # one-token sequence) it would also read as a merge of that unit axis with the heads.
                return self._heads_to_columns(e, x, form, target)
            if form.merged:
                regrouped = self._split(e, x, form, target)
            else:
                regrouped = self._merged(e, x, form, target) or self._split_outer(e, x, form, target)
            return regrouped if regrouped is not None else self._heads_to_columns(e, x, form, target)
        raise e.error(
            f"{node.target}: on a mesh, views take the output of a column-parallel linear to heads "
            f"([rows, columns] -> [batch, seq, heads, head_dim]) and back, not a {form.kind} tensor"
        )

    def _columns_to_heads(self, e: Emitter, x: SSAValue, form: Form, target: tuple[int, ...]) -> SSAValue:
        """[M, N] (fusion [D, S, D, R, N/D]) -> [rows..., columns...] with the first column axis sharded."""
        D, S, _, R, local_n = shape_of(x)
        M, N = S * D * R, local_n * D
        if target == (M, N):
            return x
        # The cuts whose leading axes hold the M rows; where a unit axis makes two of them ([B, 1,
        # heads, hd] of one-token sequences), the heads are the first column axis that is not a
        # unit axis and leaves the head dimension behind it ([B, T, 1, hd] stays one head).
        cuts = [i for i in range(1, len(target)) if math.prod(target[:i]) == M]
        split = next((i for i in cuts if target[i] != 1 and i < len(target) - 1), cuts[0] if cuts else None)
        if split is None or split == len(target) or math.prod(target[split:]) != N or len(target) < 3:
            raise e.error(
                f"a view of the column-parallel output [{M}, {N}] to {list(target)}: on a mesh, the rows split into "
                "leading axes (batch, sequence) and the columns into trailing ones (heads, head_dim)"
            )
        columns = target[split]
        if columns % D:
            fix = (
                f"use a mesh of at most {columns} devices, or repeat each head in the projection's weight (a copy "
                "of each key and value head per device, for grouped-query attention)"
                if columns < D
                else f"use a mesh whose size divides {columns}"
            )
            raise e.error(
                f"{columns} heads (axis {split} of {list(target)}) do not split over {D} devices: each device "
                f"holds whole heads; {fix}"
            )
        if target[0] % S:
            raise e.error(
                f"the rows are in {S} stream chunks, which must hold whole sequences: the batch {target[0]} "
                f"(axis 0 of {list(target)}) is not a multiple of {S}"
            )
        local = (*target[:split], columns // D, *target[split + 1 :])
        result = e.emit(fusion.ReshapeOp(x, self._heads_type(x, local, S)))
        self.mode.forms[result] = replace(form, kind=HEADS, logical=target, axis=split)
        return result

    def _merged(self, e: Emitter, x: SSAValue, form: Form, target: tuple[int, ...]) -> SSAValue | None:
        """
        Heads with the sharded axis merged with its neighbours (`[B, nh, T, hd]` -> `[B*nh, T, hd]`,
        as a batched matmul views them): device d's part of the merged axis is its `B * nh/D`
        (batch, head) pairs, in that order. None when `target` is no such merge.
        """
        logical, axis = form.logical, form.axis
        if [n for n in target if n != 1] == [n for n in logical if n != 1]:  # unit axes added or dropped
            position = sum(1 for n in logical[:axis] if n != 1)
            kept = [i for i, n in enumerate(target) if n != 1]
            if logical[axis] != 1:
                return self._regrouped(e, x, replace(form, logical=target, axis=kept[position]))
            # The sharded axis is a unit axis itself (one key/value head per device): it stays the
            # first unit axis after the same leading axes (`x[:, :, None]` adds one behind it).
            after = kept[position - 1] + 1 if position else 0
            unit = next((i for i in range(after, len(target)) if target[i] == 1), None)
            if unit is not None:
                return self._regrouped(e, x, replace(form, logical=target, axis=unit))
        for first in (axis, *range(axis)):  # the sharded axis leading the merge first: a block per device
            for last in range(axis, len(logical)):
                merged = (*logical[:first], math.prod(logical[first : last + 1]), *logical[last + 1 :])
                if last > first and merged == target:
                    if first == axis:  # the sharded axis outermost: each device holds a block, as heads do
                        return self._regrouped(e, x, replace(form, logical=target, axis=first))
                    factors = logical[first : last + 1]
                    new = replace(form, logical=target, axis=first, merged=factors, merged_axis=axis - first)
                    return self._regrouped(e, x, new)
        return None

    def _split_outer(self, e: Emitter, x: SSAValue, form: Form, target: tuple[int, ...]) -> SSAValue | None:
        """
        The sharded axis split into factors whose outermost the devices divide (heads into key
        and value heads and their groups, as grouped-query attention's gradient sums them):
        each device's block of the heads is a block of that factor. None when `target` is not that.
        """
        logical, axis = form.logical, form.axis
        count = len(target) - len(logical) + 1
        if count < 2 or target[:axis] != logical[:axis] or target[axis + count :] != logical[axis + 1 :]:
            return None
        factors = target[axis : axis + count]
        if math.prod(factors) != logical[axis] or factors[0] % self.mode.devices:
            return None
        return self._regrouped(e, x, replace(form, logical=target))

    def _split(self, e: Emitter, x: SSAValue, form: Form, target: tuple[int, ...]) -> SSAValue | None:
        """Merged heads split back into the axes they merged; None when `target` is not that."""
        logical, axis = form.logical, form.axis
        if target != (*logical[:axis], *form.merged, *logical[axis + 1 :]):
            return None
        return self._regrouped(e, x, replace(form, logical=target, axis=axis + form.merged_axis, merged=()))

    def _regrouped(self, e: Emitter, x: SSAValue, form: Form) -> SSAValue:
        D, S = self.mode.devices, self.mode.chunks or 1
        if form.logical[0] % S:
            raise e.error(
                f"a view of heads to {list(form.logical)}: the rows' {S} stream chunks must stay on its first axis"
            )
        local = tuple(n // D if i == form.axis else n for i, n in enumerate(form.logical))
        result = e.emit(fusion.ReshapeOp(x, self._heads_type(x, local, S)))
        self.mode.forms[result] = form
        return result

    def elementwise_form(self, e: Emitter, node: Node, tensors: list[SSAValue]) -> Form:
        """
        The form of an elementwise op of heads: heads sharded alike (broadcasting along their
        unsharded axes, as a row's sum does) and replicated tensors (a mask) broadcast along
        their trailing axes, with extent 1 along the sharded axis.
        """
        forms = [self.mode.form(e, a) for a in tensors]
        first = next(f for f in forms if f.kind == HEADS)
        out = tuple(int(n) for n in node.meta["val"].shape)
        for a, f in zip(tensors, forms):
            if f.kind == HEADS:
                alike = (f.axis, f.merged, f.merged_axis) == (first.axis, first.merged, first.merged_axis)
                if not alike or len(f.logical) != len(out) or f.logical[f.axis] != out[f.axis]:
                    raise e.error(
                        f"{node.target}: its operands are heads sharded differently ({list(f.logical)} along axis "
                        f"{f.axis} and {list(first.logical)} along axis {first.axis})"
                    )
                continue
            shape = shape_of(a)
            aligned = first.axis - (len(out) - len(shape))  # the operand's axis along the sharded one
            if f.kind != WHOLE or len(shape) > len(out) or (0 <= aligned and shape[aligned] != 1):
                raise e.error(
                    f"{node.target}: its operands are sharded differently: heads {list(out)} (axis {first.axis} "
                    f"sharded) and a {f.kind} tensor {list(shape)}; a replicated operand broadcasts along the "
                    "heads' other axes only"
                )
        return replace(first, logical=out)

    def _heads_to_columns(self, e: Emitter, x: SSAValue, form: Form, target: tuple[int, ...]) -> SSAValue:
        """[rows..., columns...] with the first column axis sharded -> [M, N] (fusion [D, S, D, R, N/D])."""
        mode, logical, axis = self.mode, form.logical, form.axis
        D, S = mode.devices, mode.chunks or 1
        M, N = math.prod(logical[:axis]), math.prod(logical[axis:])
        if len(target) != 2 or target != (M, N) or axis == 0 or M % (S * D) or form.merged:
            raise e.error(
                f"a view of heads {list(logical)} (axis {axis} sharded) to {list(target)}: on a mesh, heads go back to "
                f"[rows, columns] = [{M}, {N}] with the sharded axis leading the columns (transpose it back first)"
            )
        element = element_of(x)
        kinds = [DIDX, STREAM if S > 1 else SERIAL, SERIAL, SERIAL, SERIAL]  # see _heads_type
        t = TensorType(element, (D, S, D, M // (S * D), N // D), ParallelAttr(kinds, mesh=mode.mesh))
        result = e.emit(fusion.ReshapeOp(x, t))
        mode.forms[result] = replace(form, kind=COLUMNS, logical=(), axis=0)
        return result

    def _heads_type(self, x: SSAValue, local: tuple[int, ...], chunks: int) -> TensorType:
        """
        `[D, *local]`, didx on 0, the stream chunks on the batch axis (1). One chunk is no stream:
        the rows' extent-1 chunk axis belongs to no axis of a view, so a loop could not follow it.
        """
        mode = self.mode
        kinds = [DIDX, *[SERIAL] * len(local)]
        counts = [0] * (len(local) + 1)
        if chunks > 1:
            kinds[1] = STREAM
            counts[1] = chunks
        encoding = ParallelAttr(kinds, counts, mode.mesh)
        return TensorType(element_of(x), (mode.devices, *local), encoding)

    # -- transposes ------------------------------------------------------------------------------

    def transpose(self, e: Emitter, node: Node, x: SSAValue, dim0: int, dim1: int) -> SSAValue:
        rank = len(self._heads_form(e, node, x).logical)
        perm = list(range(rank))
        perm[dim0 % rank], perm[dim1 % rank] = perm[dim1 % rank], perm[dim0 % rank]
        return self._permute(e, node, x, perm)

    def permute(self, e: Emitter, node: Node, x: SSAValue, dims: Any) -> SSAValue:
        rank = len(self._heads_form(e, node, x).logical)
        return self._permute(e, node, x, [d % rank for d in dims])

    def _permute(self, e: Emitter, node: Node, x: SSAValue, perm: list[int]) -> SSAValue:
        form = self._heads_form(e, node, x)
        if perm[0] != 0:
            raise e.error(
                f"{node.target}: on a mesh, the batch axis of heads stays first (it carries the stream chunks)"
            )
        result = e.permute(x, [0, *(p + 1 for p in perm)])
        logical = tuple(form.logical[p] for p in perm)
        self.mode.forms[result] = replace(form, logical=logical, axis=perm.index(form.axis))
        return result

    def _heads_form(self, e: Emitter, node: Node, x: SSAValue) -> Form:
        form = self.mode.form(e, x)
        if form.kind != HEADS:
            raise e.error(
                f"{node.target}: on a mesh, transposes take heads (a column-parallel output viewed as "
                f"[batch, seq, heads, head_dim]), not a {form.kind} tensor"
            )
        return form

    # -- attention and norms ---------------------------------------------------------------------

    def attention(
        self, e: Emitter, node: Node, q: SSAValue, k: SSAValue, v: SSAValue, *args: Any, **kwargs: Any
    ) -> SSAValue:
        forms = [self.mode.form(e, t) for t in (q, k, v)]
        if any(f.kind != HEADS for f in forms):
            kinds = ", ".join(f.kind for f in forms)
            raise e.error(
                f"{node.target}: on a mesh, attention takes heads of column-parallel projections, got {kinds}"
            )
        form = forms[0]
        rank = len(form.logical)
        grouped = bool(kwargs.get("enable_gqa", args[4] if len(args) > 4 else False))
        if grouped and rank >= 3:  # key and value may have fewer heads: compare the axes before them
            self._check_groups(e, node, forms)
        elif len({(f.axis, f.logical[:-2]) for f in forms}) != 1 or form.axis >= rank - 2:
            raise e.error(
                f"{node.target}: on a mesh, query, key and value must be sharded along the same batch or head axis "
                f"(not their sequence or embedding axes), got axes {[f.axis for f in forms]} of "
                f"{[list(f.logical) for f in forms]}"
            )
        mask = args[0] if args else kwargs.get("attn_mask")
        if isinstance(mask, SSAValue) and self.mode.form(e, mask).kind == REPLICATED:
            # A [L, S] argument with no layout whose rows split over the mesh reads as replicated
            # rows ([S, D, R, C], every axis serial): the whole tensor, viewed back as the user's.
            whole = _logical_shape(node, 3, "attn_mask", shape_of(mask))
            mask = e.emit(fusion.ReshapeOp(mask, TensorType(element_of(mask), tuple(whole))))
            self.mode.forms[mask] = Form(WHOLE)
            args = (mask, *args[1:]) if args else args
            kwargs = kwargs if args else {**kwargs, "attn_mask": mask}
        if isinstance(mask, SSAValue):
            # A replicated mask broadcasts along the heads' other axes, as an elementwise operand
            # does (a padding mask [B, 1, L, S] or [B, 1, 1, S]): each device reads its heads' rows
            # of it. One that varies along the sharded axis (a per-head bias) would need its block.
            shape = shape_of(mask)
            aligned = form.axis - (rank - len(shape))
            if (
                self.mode.form(e, mask).kind != WHOLE
                or len(shape) > rank
                or (0 <= aligned and shape[aligned] != 1)
                or form.merged
            ):
                raise e.error(
                    f"{node.target}: on a mesh, a mask is a replicated tensor (a buffer, a constant or an argument "
                    f"with no layout) that broadcasts along the sharded axis {form.axis} of the heads "
                    f"{list(form.logical)}, such as [L, S], [B, 1, L, S] or [B, 1, 1, S]; got a "
                    f"{self.mode.form(e, mask).kind} tensor {_logical_shape(node, 3, 'attn_mask', shape)}"
                )
        result = scaled_dot_product_attention(e, node, q, k, v, *args, **kwargs)
        logical = (*form.logical[:-1], forms[2].logical[-1])
        self.mode.forms[result] = replace(form, logical=logical)
        return result

    def attention_backward(
        self, e: Emitter, node: Node, grad: SSAValue, q: SSAValue, k: SSAValue, v: SSAValue, *args: Any
    ) -> tuple[SSAValue, ...]:
        """The gradients of attention with respect to heads: each device's own, as the forward."""
        forms = [self.mode.form(e, t) for t in (grad, q, k, v)]
        if any(f.kind != HEADS for f in forms) or len({(f.axis, f.logical, f.merged) for f in forms}) != 1:
            raise e.error(
                f"{node.target}: on a mesh, the gradient of attention takes heads of one shape sharded alike, got "
                f"{', '.join(f'{f.kind} {list(f.logical)}' for f in forms)}"
            )
        results = scaled_dot_product_attention_backward(e, node, grad, q, k, v, *args)
        for r in results:
            self.mode.forms[r] = forms[1]
        return results

    def attention_with_statistics(
        self, e: Emitter, node: Node, q: SSAValue, k: SSAValue, v: SSAValue, is_causal: bool, scale: float
    ) -> tuple[SSAValue, SSAValue]:
        """Attention and its softmax statistics: each device's heads, the statistics `[..., L]` sharded alike."""
        out = self.attention(e, node, q, k, v, None, 0.0, is_causal, scale)
        lse = logsumexp_of(e, node, q, k, v, out, is_causal, scale)
        form = self.mode.forms[out]
        self.mode.forms[lse] = replace(form, logical=form.logical[:-1])
        return out, lse

    def attention_backward_with_statistics(
        self,
        e: Emitter,
        node: Node,
        grad: SSAValue,
        q: SSAValue,
        k: SSAValue,
        v: SSAValue,
        out: SSAValue,
        lse: SSAValue,
        *args: Any,
    ) -> tuple[SSAValue, ...]:
        """The gradients of attention from its result and statistics: each device's own, as the forward."""
        forms = [self.mode.form(e, t) for t in (grad, q, k, v, out)]
        statistics = self.mode.form(e, lse)
        if (
            any(f.kind != HEADS for f in forms)
            or len({(f.axis, f.logical, f.merged) for f in forms}) != 1
            or (statistics.kind, statistics.axis, statistics.logical) != (HEADS, forms[1].axis, forms[1].logical[:-1])
        ):
            raise e.error(
                f"{node.target}: on a mesh, the gradient of attention takes heads of one shape sharded alike, got "
                f"{', '.join(f'{f.kind} {list(f.logical)}' for f in (*forms, statistics))}"
            )
        results = attention_backward_with_statistics(e, node, grad, q, k, v, out, lse, *args)
        for r in results:
            self.mode.forms[r] = forms[1]
        return results

    def _check_groups(self, e: Emitter, node: Node, forms: list[Any]) -> None:
        """
        Grouped-query attention on a mesh: query, key and value sharded along the same batch axis,
        or along the heads axis with whole groups on every device (the key and value heads a
        multiple of the devices: device d's query heads then use exactly its key and value heads).
        """
        q, k, v = forms
        heads = len(q.logical) - 3
        whole_groups = q.axis != heads or k.logical[heads] % self.mode.devices == 0
        alike = len({(f.axis, f.logical[:heads]) for f in forms}) == 1 and k.logical[:-1] == v.logical[:-1]
        if not alike or q.axis > heads or not whole_groups:
            raise e.error(
                f"{node.target}: on a mesh, grouped-query attention takes query, key and value sharded along the "
                f"same batch axis, or along the heads axis with the key and value heads a multiple of the "
                f"devices ({self.mode.devices}), got axes {[f.axis for f in forms]} of "
                f"{[list(f.logical) for f in forms]}"
            )

    def norm(self, builder: Any) -> Any:
        def build(e: Emitter, node: Node, x: SSAValue, *args: Any, **kwargs: Any) -> SSAValue:
            x = self.mode._reduced(e, x)
            form = self.mode.form(e, x)
            if form.kind not in ACTIVATIONS:
                raise e.error(
                    f"{node.target}: on a mesh, norms take rows (sharded or replicated), whose columns every device "
                    f"holds whole, not a {form.kind} tensor"
                )
            params = [a for a in (*args, *kwargs.values()) if isinstance(a, SSAValue)]
            if any(self.mode.form(e, p).kind != WHOLE for p in params):
                raise e.error(f"{node.target}: on a mesh, a norm's weight and bias are replicated (no layout)")
            normalized = args[0] if args else kwargs.get("normalized_shape")
            if normalized is not None and len(normalized) != 1:
                raise e.error(f"{node.target}: on a mesh, norms normalize the columns (one trailing axis)")
            result = builder(e, node, x, *args, **kwargs)
            self.mode.forms[result] = form
            return result

        return build

    def norm_backward(self, builder: Any) -> Any:
        """A norm's input gradient: of rows (sharded or replicated) as the norm's input, with its weight replicated."""

        def build(e: Emitter, node: Node, grad: SSAValue, x: SSAValue, *args: Any) -> SSAValue:
            grad, x = self.mode._reduced(e, grad), self.mode._reduced(e, x)
            forms = [self.mode.form(e, v) for v in (grad, x)]
            if forms[0] != forms[1] or forms[1].kind not in ACTIVATIONS:
                raise e.error(
                    f"{node.target}: on a mesh, a norm's gradient takes rows (sharded or replicated) laid out as "
                    f"its input, got {forms[0].kind} and {forms[1].kind}"
                )
            if any(isinstance(a, SSAValue) and self.mode.form(e, a).kind != WHOLE for a in args):
                raise e.error(f"{node.target}: on a mesh, a norm's weight is replicated (no layout)")
            result = builder(e, node, grad, x, *args)
            self.mode.forms[result] = forms[1]
            return result

        return build


def _logical_rows(x: SSAValue) -> tuple[int, ...]:
    """The user's [rows, columns] of an activation [S, D, R, C]."""
    S, D, R, C = shape_of(x)
    return (S * D * R, C)


def _logical_shape(node: Node, index: int, name: str, fallback: tuple[int, ...]) -> list[int]:
    """The shape the user's code sees of the node's argument (a fusion value may carry the devices' axes)."""
    arg = node.args[index] if len(node.args) > index else node.kwargs.get(name)
    value = arg.meta.get("val") if isinstance(arg, Node) else None
    return [int(n) for n in value.shape] if value is not None else list(fallback)
