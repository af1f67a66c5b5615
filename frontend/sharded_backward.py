"""
The forward and backward graphs of a tensor-parallel MLP's training step on a mesh, typed as
`MeshMode` types the inference program (frontend/sharded.py), from the ATen ops of the
partitioned joint graph (frontend/training_mesh.py): `t` of weights and activations,
`mm`/`addmm`, `sum` of rows (bias gradients), reductions over each row's columns (a norm's
statistics), `view`s, `expand`s and constants.

Forms beyond `MeshMode`'s:

- `Transposed(v)`: the logical transpose of `v` (an ATen `t`), resolved by the op that reads it.
  A weight `W [N, K]` read as `t(W)` is the forward's `x @ W^T`; read as `W` it is the backward's
  `grad @ W`. A sharded weight's fusion tensor is W^T's block (`Form.axis` 0, as the forward
  reads it) or W's (`Form.axis` 1, as the backward takes it); `_oriented` permutes where needed.
- `BLOCKS`: a weight gradient, `[D, P, Q]` (`didx` on axis 0): device d's block of a logical
  matrix whose axis `Form.axis` is sharded (`[P*D, Q]` or `[P, Q*D]`).

The products of the backward, with `g` the output's gradient (sharded rows), `W1` column- and
`W2` row-parallel:

    g @ W2          rows @ row-parallel weight: columns (all-gather + GEMM, as the forward's fc1)
    gh @ W1         columns @ column-parallel weight: a partial sum (GEMM + reduce-scatter)
    g^T @ a         rows^T @ columns: W2's gradient block [H, F/D], over all rows (gathered)
    gh^T @ x        columns^T @ rows: W1's gradient block [F/D, H]
    sum(g, 0)       a replicated bias's gradient: a local sum, then an all-reduce
    sum(gh, 0)      a column-parallel bias's gradient: local (every row is there)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.dialects.parallel_encoding import DIDX, SERIAL, STREAM, ParallelAttr
from hir.frontend.aten_common import out_element
from hir.frontend.aten_table import ATEN_TABLE
from hir.frontend.emitter import Emitter, element_of, shape_of
from hir.frontend.sharded import (
    ACTIVATIONS,
    COLUMN_BIAS,
    COLUMN_WEIGHT,
    COLUMNS,
    ELEMENTWISE,
    HEADS,
    PARTIAL,
    REPLICATED,
    ROW_WEIGHT,
    ROWS,
    WHOLE,
    Form,
    MeshMode,
)
from hir.frontend.sharded_heads import VIEWS
from hir.frontend.sharded_heads_math import install_heads_math

aten = torch.ops.aten

BLOCKS = "blocks"
IDENTITIES = (aten.detach.default, aten.alias.default, aten.clone.default, aten.contiguous.default)
LIKE = (aten.empty_like.default, aten.full_like.default, aten.zeros_like.default, aten.ones_like.default)
"""A constant shaped and sharded like a tensor (functionalized backward: `full_like(empty_like(s), 1)`)."""
WEIGHTS = (COLUMN_WEIGHT, ROW_WEIGHT)


@dataclass(frozen=True)
class Transposed:
    """The logical transpose of a 2-D value (`t(v)`), which the op reading it resolves."""

    value: SSAValue


def transpose(v: Any) -> Any:
    return v.value if isinstance(v, Transposed) else Transposed(v)


class TrainingMeshMode(MeshMode):
    """`MeshMode` for AOT autograd's graphs: the ops above, elementwise ops on any one form."""

    FUSES = False  # a fused weight's gradient would be written as one block: its pieces' are not

    def __init__(self, mesh: tuple[int, ...]):
        super().__init__(mesh)
        self._gathered: dict[SSAValue, SSAValue] = {}
        """Rows in one chunk gathered whole, by value: `g` is gathered once for `g @ W2` and `g^T @ a`,
        and the forward's gathered `x` is saved for `gh^T @ x` (frontend/training_mesh.py)."""
        for op in ELEMENTWISE:
            self.overrides[op] = self._plain(self.overrides[op])
        # Constants (a ReLU's backward: `where(x <= 0, scalar_tensor(0), g)`) are MeshMode's: ops
        # of no sharded tensor are replicated; so are norms' per-row statistics.
        self.overrides.update(
            {
                aten.t.default: self._t,
                aten.transpose.int: self._transpose,
                aten.permute.default: self._permute,
                aten.mm.default: self._mm,
                aten.addmm.default: self._addmm,
                aten.sum.dim_IntList: self._sum,
                aten.expand.default: self._expand,
                **{op: self._like for op in LIKE},
                **{op: self._identity for op in IDENTITIES},
                **{op: self._view for op in VIEWS},
            }
        )
        # Heads (attention, frontend/sharded_heads.py) go to their own ops, as on inference's mesh.
        self.heads.route(VIEWS, self.heads.view, (COLUMNS, HEADS))
        self.heads.route([aten.transpose.int], self.heads.transpose)
        self.heads.route([aten.permute.default], self.heads.permute)
        install_heads_math(self, self.heads, only=(aten.sum.dim_IntList, aten.expand.default))

    def _unsupported(self, e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
        if any(isinstance(a, Transposed) for a in args):
            raise e.error(f"{node.target} of a transposed weight or activation is not supported on a mesh")
        return super()._unsupported(e, node, *args, **kwargs)

    def _plain(self, builder: Any) -> Any:
        def build(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> Any:
            summed = self._gradient_sum(e, node, args, kwargs)
            if summed is not None:
                return summed
            if any(isinstance(a, Transposed) for a in args):
                raise e.error(f"{node.target} of a transposed weight or activation is not supported on a mesh")
            for a in args:
                if isinstance(a, SSAValue) and self.form(e, a).kind in (*WEIGHTS, BLOCKS, COLUMN_BIAS):
                    raise e.error(f"{node.target} of a sharded parameter or gradient is not supported on a mesh")
            return builder(e, node, *args, **kwargs)

        return build

    def _gradient_sum(self, e: Emitter, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """
        Two gradients of one sharded parameter added (a layer applied twice, a weight read by two
        linears of the same role): each device adds its own blocks, which are laid out alike.
        None where the operands are not two such blocks of one type.
        """
        if node.target is not aten.add.Tensor or len(args) != 2 or kwargs.get("alpha", 1) != 1:
            return None
        a, b = args
        if isinstance(a, Transposed) != isinstance(b, Transposed):
            return None
        transposed = isinstance(a, Transposed)
        a, b = (a.value, b.value) if transposed else (a, b)
        if not isinstance(a, SSAValue) or not isinstance(b, SSAValue) or a.type != b.type:
            return None
        form = self.form(e, a)
        if form.kind not in (BLOCKS, COLUMN_BIAS) or self.form(e, b) != form:
            return None
        result = e.emit(fusion.AddOp(a, b, a.type))
        self.forms[result] = form
        return Transposed(result) if transposed else result

    # -- shapes ----------------------------------------------------------------------------------

    def _identity(self, e: Emitter, node: Node, x: Any, *args: Any, **kwargs: Any) -> Any:
        return x

    def _t(self, e: Emitter, node: Node, x: Any) -> Any:
        return transpose(x)

    def _transpose(self, e: Emitter, node: Node, x: Any, a: int, b: int) -> Any:
        if {a % 2, b % 2} != {0, 1} or len(node.meta["val"].shape) != 2:
            raise e.error("on a mesh, only 2-D transposes are supported")
        return transpose(x)

    def _permute(self, e: Emitter, node: Node, x: Any, dims: list[int]) -> Any:
        if [d % 2 for d in dims] != [1, 0] or len(dims) != 2:
            raise e.error("on a mesh, only 2-D transposes are supported")
        return transpose(x)

    def _view(self, e: Emitter, node: Node, x: Any, shape: list[int]) -> Any:
        """Views that only add or drop unit axes (a bias gradient's keepdim), or any of a whole tensor."""
        value = x.value if isinstance(x, Transposed) else x
        form = self.form(e, value)
        logical = tuple(node.meta["val"].shape)
        if form.kind == WHOLE and not isinstance(x, Transposed):
            return self._whole(e.reshape(value, logical), form)
        source = tuple(node.args[0].meta["val"].shape)  # type: ignore[union-attr]
        if [n for n in source if n != 1] == [n for n in logical if n != 1]:
            return x
        raise e.error(
            f"a view of a {form.kind} tensor from {list(source)} to {list(logical)} is not supported on a mesh"
        )

    def _expand(self, e: Emitter, node: Node, x: Any, sizes: list[int], implicit: bool = False) -> Any:
        """A row's statistic `[M, 1]` along its columns (a norm's backward), or any expand of a whole tensor."""
        form = self.form(e, x) if isinstance(x, SSAValue) else None
        if form is not None and form.kind == WHOLE:
            return self._whole(ATEN_TABLE[node.target](e, node, x, sizes, implicit), form)
        source, logical = tuple(node.args[0].meta["val"].shape), tuple(node.meta["val"].shape)  # type: ignore[union-attr]
        if form is None or form.kind not in ACTIVATIONS or len(logical) != 2 or source[0] != logical[0]:
            raise e.error(f"on a mesh, an expand of {form.kind if form else 'this'} tensor is not supported")
        if source == logical:
            return x
        result = e.broadcast_to(x, (*shape_of(x)[:-1], logical[1]))
        self.forms[result] = form
        return result

    def _like(self, e: Emitter, node: Node, x: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(x, Transposed) or not isinstance(x, SSAValue):
            raise e.error(f"{node.target} of a transposed tensor is not supported on a mesh")
        fill = {aten.full_like.default: args[0] if args else kwargs.get("fill_value"), aten.ones_like.default: 1}
        element = out_element(node)
        result = e.broadcast_to(e.constant(fill.get(node.target, 0), element), shape_of(x), like=x)
        self.forms[result] = self.form(e, x)
        return result

    def _whole(self, value: SSAValue, form: Form) -> SSAValue:
        self.forms[value] = form
        return value

    # -- products --------------------------------------------------------------------------------

    def _addmm(self, e: Emitter, node: Node, bias: Any, a: Any, b: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
        if beta != 1 or alpha != 1:
            raise e.error("addmm with beta or alpha other than 1 is not supported on a mesh")
        product = self._mm(e, node, a, b)
        fb = self.form(e, bias)
        fp = self.form(e, product)
        if fp.kind == COLUMNS and fb.kind == COLUMN_BIAS:
            y = self._add_bias(e, product, bias, [1, 2, 3])
            self.forms[y] = fp
            return y
        if fb.kind != WHOLE or fp.kind not in (*ACTIVATIONS, PARTIAL):
            raise e.error(f"the bias of a {fp.kind} product must be {'[didx]' if fp.kind == COLUMNS else 'replicated'}")
        reduced = self._reduced(e, product)
        result = e.binary(fusion.AddOp, reduced, bias, element_of(reduced))
        self.forms[result] = self.forms[reduced]
        return result

    def _mm(self, e: Emitter, node: Node, a: Any, b: Any) -> Any:
        ta, tb = isinstance(a, Transposed), isinstance(b, Transposed)
        va = self._reduced(e, a.value if ta else a)
        vb = self._reduced(e, b.value if tb else b)
        fa, fb = self.form(e, va).kind, self.form(e, vb).kind
        element = element_of(va)
        if not ta and fa in ACTIVATIONS and fb == COLUMN_WEIGHT and tb:  # x @ W1^T: columns
            # In one chunk: x gathered whole, which the forward saves for W1's gradient (as eager does).
            rows = self._gather(e, va) if fa == ROWS and shape_of(va)[0] == 1 else va
            return self._columns(e, rows, self._oriented(e, vb, block=False), fa)
        if not ta and fa in ACTIVATIONS and fb == ROW_WEIGHT and not tb:  # g @ W2: columns
            # In one chunk there is nothing to pipeline: the gathered rows that W2's gradient reads too.
            rows = self._gather(e, va) if fa == ROWS and shape_of(va)[0] == 1 else va
            return self._columns(e, rows, self._oriented(e, vb, block=True), fa)
        if not ta and fa == COLUMNS and fb == ROW_WEIGHT and tb:  # a @ W2^T: partial sums
            return self._partial(e, va, self._oriented(e, vb, block=False))
        if not ta and fa == COLUMNS and fb == COLUMN_WEIGHT and not tb:  # gh @ W1: partial sums
            return self._partial(e, va, self._oriented(e, vb, block=True))
        if not ta and fa in ACTIVATIONS and fb == WHOLE and len(shape_of(vb)) == 2:  # a replicated weight
            w = vb if not tb else e.permute(vb, [1, 0])
            shape = (*shape_of(va)[:-1], shape_of(w)[-1])
            result = e.typed(lambda t: fusion.MatmulOp(va, w, t), [va, w], shape, element)
            self.forms[result] = self.forms[va]
            return result
        if ta and not tb and {fa, fb} <= {*ACTIVATIONS, COLUMNS} and COLUMNS in (fa, fb) and fa != fb:
            return self._weight_gradient(e, va, vb, fa == COLUMNS)
        what = lambda kind, t: f"{kind}{'^T' if t else ''}"  # noqa: E731
        raise e.error(
            f"a product of {what(fa, ta)} and {what(fb, tb)} tensors is not supported on a mesh (the "
            "tensor-parallel MLP's products are x @ W^T, g @ W and the weight gradients g^T @ x)"
        )

    def _columns(self, e: Emitter, x: SSAValue, w: SSAValue, kind: str) -> SSAValue:
        S, D, R, _ = shape_of(x)
        y = self._matmul(e, x, w, (D, S, D, R, shape_of(w)[-1]), element_of(x))
        self.forms[y] = Form(COLUMNS, kind == ROWS)
        return y

    def _partial(self, e: Emitter, x: SSAValue, w: SSAValue) -> SSAValue:
        D, S, _, R, _ = shape_of(x)
        y = self._matmul(e, x, w, (D, S, D, R, shape_of(w)[-1]), element_of(x))
        self.forms[y] = Form(PARTIAL, self.form(e, x).rows_sharded)
        return y

    def _oriented(self, e: Emitter, w: SSAValue, block: bool) -> SSAValue:
        """
        A sharded weight's fusion tensor as W's block (`block`) or W^T's. A weight is W^T's block
        (`Form.axis` 0), as the forward reads it, or W's (`Form.axis` 1: the backward's input,
        the same memory as the forward's shard, so that `g @ W` needs no transpose).
        """
        return w if self.form(e, w).axis == int(block) else self._swap_last(e, w)

    def _swap_last(self, e: Emitter, w: SSAValue) -> SSAValue:
        """A sharded weight's fusion tensor `[D, 1, 1, P, Q]` as `[D, 1, 1, Q, P]`."""
        t = w.type
        assert isinstance(t, TensorType)
        D, _, _, P, Q = shape_of(w)
        return e.emit(fusion.PermuteOp(w, [0, 1, 2, 4, 3], TensorType(t.element_type, (D, 1, 1, Q, P), t.encoding)))

    def _weight_gradient(self, e: Emitter, a: SSAValue, b: SSAValue, columns_first: bool) -> Any:
        """
        `a^T @ b` contracting every row, one of them columns `[D, S, D, R, F/D]` (all rows of
        the column block) and the other rows `[S, D, R, H]`, gathered where sharded: the device's
        block `[F/D, H]` (columns first) or `[H, F/D]`, as `[D, P, Q]`. In one chunk, the rows
        are gathered whole (a collective of its own, not overlapped); in S chunks, chunk by chunk
        in the stream loop, each chunk's product summed after it.
        """
        columns, rows = (a, b) if columns_first else (b, a)
        element = element_of(columns)
        D, S, _, R, F = shape_of(columns)
        H = shape_of(rows)[-1]
        M = S * D * R
        if S > 1:  # the rows' chunks gathered one by one, in the stream loop
            return self._chunked_weight_gradient(e, columns, rows, columns_first)
        gathered = self._gather(e, rows)
        flat_rows = e.emit(
            fusion.ReshapeOp(gathered, TensorType(element, (M, H), ParallelAttr([SERIAL] * 2, mesh=self.mesh)))
        )
        blocks = ParallelAttr([DIDX, SERIAL, SERIAL], mesh=self.mesh)
        flat_columns = e.emit(fusion.ReshapeOp(columns, TensorType(element, (D, M, F), blocks)))
        if columns_first:  # gh^T @ x: [D, F, M] @ [M, H]
            lhs = e.emit(fusion.PermuteOp(flat_columns, [0, 2, 1], TensorType(element, (D, F, M), blocks)))
            result = e.emit(fusion.MatmulOp(lhs, flat_rows, TensorType(element, (D, F, H), blocks)))
            self.forms[result] = Form(BLOCKS, axis=0)
        else:  # g^T @ a: [H, M] @ [D, M, F]
            lhs = e.emit(
                fusion.PermuteOp(
                    flat_rows, [1, 0], TensorType(element, (H, M), ParallelAttr([SERIAL] * 2, mesh=self.mesh))
                )
            )
            result = e.emit(fusion.MatmulOp(lhs, flat_columns, TensorType(element, (D, H, F), blocks)))
            self.forms[result] = Form(BLOCKS, axis=1)
        return result

    def _gather(self, e: Emitter, rows: SSAValue) -> SSAValue:
        """Rows `[1, D, R, H]` gathered whole (replicated: a `fusion.set`), once per value."""
        if rows not in self._gathered:
            serial = ParallelAttr([SERIAL] * 4, mesh=self.mesh)
            self._gathered[rows] = e.emit(fusion.SetOp(rows, TensorType(element_of(rows), shape_of(rows), serial)))
        return self._gathered[rows]

    def _chunked_weight_gradient(self, e: Emitter, columns: SSAValue, rows: SSAValue, columns_first: bool) -> Any:
        """
        Chunk s: its rows all-gathered `[D*R, H]` (a collective in the loop, which the pipeline
        overlaps), the product with its column block `[F/D, D*R] @ [D*R, H]`; then the sum over
        the chunks (S blocks of the gradient). The block is `[F/D, H]` either way: for `g^T @ a`
        it is the transpose of the product asked for.
        """
        element = element_of(columns)
        D, S, _, R, F = shape_of(columns)
        H = shape_of(rows)[-1]
        streamed = ParallelAttr([STREAM, SERIAL, SERIAL, SERIAL], mesh=self.mesh)
        gathered = e.emit(fusion.SetOp(rows, TensorType(element, shape_of(rows), streamed)))
        flat_rows = e.emit(
            fusion.ReshapeOp(
                gathered, TensorType(element, (S, D * R, H), ParallelAttr([STREAM, SERIAL, SERIAL], mesh=self.mesh))
            )
        )
        chunks = ParallelAttr([DIDX, STREAM, SERIAL, SERIAL], mesh=self.mesh)
        flat_columns = e.emit(fusion.ReshapeOp(columns, TensorType(element, (D, S, D * R, F), chunks)))
        lhs = e.emit(fusion.PermuteOp(flat_columns, [0, 1, 3, 2], TensorType(element, (D, S, F, D * R), chunks)))
        blocks = ParallelAttr([DIDX, SERIAL, SERIAL], mesh=self.mesh)
        product = e.emit(fusion.MatmulOp(lhs, flat_rows, TensorType(element, (D, S, F, H), chunks)))
        result = e.emit(fusion.SumOp(product, [1], TensorType(element, (D, F, H), blocks)))
        self.forms[result] = Form(BLOCKS, axis=0)
        return result if columns_first else Transposed(result)

    # -- sums ------------------------------------------------------------------------------------

    def _sum(self, e: Emitter, node: Node, x: Any, dims: list[int], keepdim: bool = False, *, dtype: Any = None) -> Any:
        """A bias gradient: the sum over the rows of rows, replicated rows or columns."""
        if isinstance(x, Transposed):
            raise e.error("a sum of a transposed tensor is not supported on a mesh")
        x = self._reduced(e, x)
        form = self.form(e, x)
        if form.kind == WHOLE:
            return self._whole(e.reduce(fusion.SumOp, x, dims, keepdim), form)
        if form.kind in ACTIVATIONS and [d % 2 for d in dims] == [1]:  # each row's sum (a norm's backward)
            return self._per_row(ATEN_TABLE[node.target])(e, node, x, dims, keepdim, dtype=dtype)
        if dtype is not None or [d % 2 for d in dims] != [0]:
            raise e.error(f"on a mesh, a sum of {form.kind} is over its rows (axis 0) only")
        element = element_of(x)
        if form.kind == COLUMNS:  # [D, S, D, R, F/D]: every row of the column block is local
            D, *_, F = shape_of(x)
            t = TensorType(element, (D, F), ParallelAttr([DIDX, SERIAL], mesh=self.mesh))
            result = e.emit(fusion.SumOp(x, [1, 2, 3], t))
            self.forms[result] = Form(COLUMN_BIAS)
            return result
        if form.kind not in ACTIVATIONS:
            raise e.error(f"a sum of a {form.kind} tensor is not supported on a mesh")
        _, D, _, C = shape_of(x)
        if form.kind == REPLICATED:
            total = e.emit(fusion.SumOp(x, [0, 1, 2], TensorType(element, (C,))))
        else:  # this device's rows, then the sum over the devices (an all-reduce)
            t = TensorType(element, (D, C), ParallelAttr([DIDX, SERIAL], mesh=self.mesh))
            local = e.emit(fusion.SumOp(x, [0, 2], t))
            total = e.emit(fusion.SumOp(local, [0], TensorType(element, (C,), ParallelAttr([SERIAL], mesh=self.mesh))))
        if keepdim:
            total = e.emit(
                fusion.ExpandOp(total, [0], TensorType(element, (1, C), ParallelAttr([SERIAL] * 2, mesh=self.mesh)))
            )
        return self._whole(total, Form(WHOLE))
