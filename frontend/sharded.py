"""
Programs on a mesh of D devices: tensor-parallel layers written as ordinary PyTorch (Megatron's
column- and row-parallel linears, with sequence parallelism), imported into the shapes the
stream-lowering pipelines (all-gather + GEMM, GEMM + reduce-scatter) in one stream loop.

A logical activation [M, C] becomes the fusion tensor [S, D, M/(S*D), C]: S stream chunks of the
rows, each cut into D blocks. Its layout names how the blocks live:

    "[didx, serial]"               rows sharded (S = 1): device d holds rows [d*M/D, (d+1)*M/D)
    "[(stream(S), didx), serial]"  rows sharded in S chunks: device d holds block d of each chunk,
                                   rows s*M/S + d*M/(S*D) + r, as its local [M/D, C] in (s, r) order
    None                           replicated: every device holds the whole [M, C]

Weights (parameters, logical [N, K] as nn.Linear holds them; the module holds the whole weight
and each device keeps its shard):

    "[didx, serial]"   column-parallel: device d multiplies by rows [d*N/D, (d+1)*N/D) of W
    "[serial, didx]"   row-parallel: device d multiplies by columns [d*K/D, (d+1)*K/D) of W
    None               replicated

A column-parallel linear of an activation gives [D, S, D, M/(S*D), N/D] (the devices' column
blocks on axis 0, `didx`); on sharded rows the pipelines all-gather chunk s before its GEMM. A
row-parallel linear of that gives the partial products [D, S, D, M/(S*D), N]; their sum over
axis 0 is a reduce-scatter back to sharded rows (or an all-reduce, for replicated rows), chunk by
chunk, before anything else uses them. Elementwise ops (activations, residual adds, scalar
arithmetic, casts) work on any of these forms; norms of rows, and column blocks viewed as attention
heads, are `sharded_heads`; other ops are errors at the user's line.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from hir.dialects import fusion
from hir.dialects.parallel_encoding import DIDX, SERIAL, STREAM, ParallelAttr
from hir.frontend.aten_table import ATEN_TABLE
from hir.frontend.emitter import Emitter, element_of, shape_of
from hir.frontend.layouts import AxisLayout, LayoutError, parse_layout

aten = torch.ops.aten

ROWS, REPLICATED, COLUMNS, PARTIAL = "rows", "replicated", "columns", "partial"
COLUMN_WEIGHT, ROW_WEIGHT, COLUMN_BIAS, WHOLE = "column-weight", "row-weight", "column-bias", "whole"
ACTIVATIONS = (ROWS, REPLICATED)
IDS = "ids"
"""Token ids [M], 1-D rows: [S, D, M/(S*D)], sharded or replicated (frontend/sharded_embedding.py)."""
HEADS = "heads"
"""A column-parallel output viewed as attention heads (frontend/sharded_heads.py)."""

ELEMENTWISE = {
    aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.rsub.Scalar, aten.rsub.Tensor,
    aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar, aten.maximum.default,
    aten.neg.default, aten.abs.default, aten.exp.default, aten.log.default, aten.sin.default, aten.cos.default,
    aten.erf.default, aten.tanh.default, aten.relu.default,
    aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.square.default, aten.sqrt.default,
    aten.rsqrt.default, aten.reciprocal.default, aten.sigmoid.default, aten.silu.default, aten.gelu.default,
    aten.gelu_backward.default, aten.silu_backward.default,
    aten.eq.Tensor, aten.eq.Scalar, aten.ne.Tensor, aten.ne.Scalar, aten.lt.Tensor, aten.lt.Scalar,
    aten.le.Tensor, aten.le.Scalar, aten.gt.Tensor, aten.gt.Scalar, aten.ge.Tensor, aten.ge.Scalar,
    aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar,
    aten.to.dtype, aten.to.dtype_layout, aten._to_copy.default, aten.type_as.default, aten.clone.default,
    aten.contiguous.default, aten.alias.default, aten.detach.default, aten.dropout.default,
    aten.masked_fill.Scalar, aten.masked_fill.Tensor, aten.bitwise_not.default, aten.logical_not.default,
    aten.clamp.default, aten.clamp_min.default, aten.minimum.default, aten.leaky_relu.default,
    aten.elu.default, aten.hardtanh.default, aten.log1p.default, aten.expm1.default, aten.softplus.default,
    aten.remainder.Scalar, aten.remainder.Tensor, aten.fmod.Scalar, aten.fmod.Tensor, aten.floor_divide.default,
    aten.logical_and.default, aten.logical_or.default, aten.bitwise_and.Tensor, aten.bitwise_or.Tensor,
    aten.bitwise_xor.Tensor, aten.sign.default, aten.floor.default, aten.ceil.default, aten.round.default,
    aten.trunc.default,
}  # fmt: skip
"""Ops that compute each element from the same element of their operands: any form works."""

PER_ROW = (aten.mean.dim, aten.var_mean.correction, aten.var.correction, aten.amax.default)
"""Reductions over each row's columns (a norm's statistics, written out as RMSNorm often is)."""

PIECES = (
    aten.split.Tensor, aten.split_with_sizes.default, aten.chunk.default, aten.unsafe_split.Tensor,
    aten.slice.Tensor, aten.narrow.default, aten.unbind.int, aten.select.int,
)  # fmt: skip
"""Ops that cut a tensor into pieces along an axis (a fused projection's output split into q, k, v)."""

SPLITS = (aten.split.Tensor, aten.split_with_sizes.default, aten.chunk.default, aten.unsafe_split.Tensor)
"""The cuts of a whole tensor into consecutive pieces (each piece of a fused projection its own)."""

ROW_WISE = (aten._softmax.default, aten.softmax.int, aten._log_softmax.default, aten.log_softmax.int)
"""Ops along each row's columns that keep its shape (a softmax of a classifier's logits)."""


@dataclass(frozen=True)
class Form:
    kind: str
    rows_sharded: bool = False
    """For columns and partial sums: whether the rows they came from were sharded (then a
    reduce-scatter brings them back), else replicated (an all-reduce)."""
    logical: tuple[int, ...] = ()
    """For heads (`sharded_heads`): the logical shape the user's code sees."""
    axis: int = 0
    """For heads: the logical axis whose blocks the devices hold (the heads)."""
    merged: tuple[int, ...] = ()
    """For heads whose sharded axis merges several of the user's axes (batch and heads, as a
    batched matmul views them): those axes' extents, so that a view can split them back."""
    merged_axis: int = 0
    """For merged heads: which of the `merged` axes is the sharded one."""


class MeshMode:
    """Types the program's tensors for a mesh and imports linears as tensor-parallel layers."""

    def __init__(self, mesh: tuple[int, ...]):
        if len(mesh) < 1 or len(set(mesh)) != len(mesh):
            raise LayoutError(f"mesh {list(mesh)} must list distinct device ids")
        self.mesh = mesh
        self.devices = len(mesh)
        self.chunks: int | None = None
        """S: stream chunks of the rows, the same for every activation."""
        self.forms: dict[SSAValue, Form] = {}
        self._input_forms: dict[str, Form] = {}
        self.names: dict[SSAValue, str] = {}
        """The parameters' and inputs' names (`fc1.bias`), for errors about their layouts."""
        self.output_kinds: list[str] = []
        """The form of each output, in order (a whole one is returned as it is)."""
        self._reductions: dict[SSAValue, SSAValue] = {}
        """Partial sums already summed over the devices: each is reduced once, however often read."""
        self._keys: dict[SSAValue, str] = {}
        """Each input's key in `_input_forms` (a fused weight's form changes when a linear reads it)."""
        self._pieces: dict[SSAValue, tuple[int, ...] | None] = {}
        """How the linears that read a column-parallel weight (or bias) cut its output: the pieces of a
        fused projection (GPT-2's c_attn: q, k, v), or None (the whole output read)."""
        self._fused: dict[SSAValue, tuple[int, ...]] = {}
        """Outputs of fused column-parallel linears: device d holds block d of each piece, in order."""
        self.overrides: dict[Any, Any] = {op: self._elementwise(ATEN_TABLE[op]) for op in ELEMENTWISE}
        self.overrides[aten.linear.default] = self._linear
        for op in set(ATEN_TABLE) - ELEMENTWISE - {aten.linear.default}:
            self.overrides[op] = self._unsupported
        for op in (*PER_ROW, aten.sum.dim_IntList):
            self.overrides[op] = self._per_row(ATEN_TABLE[op])
        for op in ROW_WISE:
            self.overrides[op] = self._row_wise(ATEN_TABLE[op])
        for op in (aten.mm.default, aten.matmul.default):
            self.overrides[op] = self._rows_times_matrix
        from hir.frontend.sharded_heads import install_heads  # it builds on this module

        self.heads = install_heads(self)
        from hir.frontend.sharded_embedding import install_embedding

        install_embedding(self)

    # -- inputs ----------------------------------------------------------------------------------

    def input_type(
        self, shape: tuple[int, ...], element: Attribute, layout: str | None, what: str, source: Any
    ) -> TensorType:
        parsed = parse_layout(layout, len(shape), what) if layout else tuple(AxisLayout(SERIAL) for _ in shape)
        if source.kind == "user" and self._read_whole(shape, parsed):
            # A replicated argument that is not rows over the mesh (a scalar, a [C] or [1, C]
            # vector, a mask): every rank holds it whole, as a replicated buffer.
            t, form = TensorType(element, shape), Form(WHOLE)
        elif source.kind == "user" and len(shape) == 1:
            t, form = self._ids_type(shape, element, parsed, what)
        elif source.kind == "user":
            t, form = self._activation_type(shape, element, parsed, what)
        else:
            t, form = self._weight_type(shape, element, parsed, what)
        self._input_forms[_key(source)] = form
        return t

    def _read_whole(self, shape: tuple[int, ...], layout: tuple[AxisLayout, ...]) -> bool:
        """Whether a user's argument is replicated (serial axes) and not [rows, columns] that split over the mesh."""
        if any(a.kind != SERIAL or a.chunks for a in layout):
            return False
        # Replicated rows come in one chunk: beside rows in stream chunks (an earlier argument's
        # "[(stream(S), didx), serial]"), a replicated [rows, columns] argument (a [T, T] mask) is read whole.
        return len(shape) != 2 or shape[0] % self.devices != 0 or (self.chunks or 1) > 1

    def bind_input(self, value: SSAValue, source: Any) -> None:
        self.forms[value] = self._input_forms[_key(source)]
        self._keys[value] = _key(source)
        self.names[value] = source.name

    def held_cut(self, source: Any) -> tuple[int, ...]:
        """The pieces whose blocks this program's shard of a parameter holds (a fused projection's), else ()."""
        form = self._input_forms.get(_key(source))
        return form.merged if form is not None else ()

    def _called(self, value: SSAValue, role: str) -> str:
        """`'fc1.bias'` for a parameter, else `the bias` (a computed value)."""
        return f"'{self.names[value]}'" if value in self.names else f"the {role}"

    def _activation_type(
        self, shape: tuple[int, ...], element: Attribute, layout: tuple[AxisLayout, ...], what: str
    ) -> tuple[TensorType, Form]:
        if len(shape) != 2 or layout[1].kind != SERIAL:
            raise LayoutError(
                f"{what}: on a mesh, activations are [rows, columns] with the rows sharded or replicated "
                f'("[didx, serial]", "[(stream(S), didx), serial]", None), got {list(shape)}'
            )
        rows, columns = shape
        axis = layout[0]
        chunks = axis.chunks or 1
        if self.chunks not in (None, chunks):
            raise LayoutError(f"{what}: its rows are in {chunks} stream chunks, other inputs' in {self.chunks}")
        self.chunks = chunks
        if rows % (chunks * self.devices):
            raise LayoutError(f"{what}: {rows} rows do not split into {chunks} chunks of {self.devices} devices")
        sharded = axis.kind == DIDX
        if axis.kind == STREAM:
            raise LayoutError(f"{what}: on a mesh, write stream chunks of sharded rows as (stream(N), didx)")
        kinds = [SERIAL, DIDX if sharded else SERIAL, SERIAL, SERIAL]
        fusion_shape = (chunks, self.devices, rows // (chunks * self.devices), columns)
        return TensorType(element, fusion_shape, ParallelAttr(kinds, mesh=self.mesh)), Form(
            ROWS if sharded else REPLICATED
        )

    def _ids_type(
        self, shape: tuple[int, ...], element: Attribute, layout: tuple[AxisLayout, ...], what: str
    ) -> tuple[TensorType, Form]:
        """Sharded token ids [M] (replicated ones are read whole): [S, D, M/(S*D)], didx on axis 1."""
        axis = layout[0]
        if axis.kind != DIDX:
            raise LayoutError(f"{what}: on a mesh, write stream chunks of sharded token ids as (stream(N), didx)")
        chunks = axis.chunks or 1
        if self.chunks not in (None, chunks):
            raise LayoutError(f"{what}: its rows are in {chunks} stream chunks, other inputs' in {self.chunks}")
        self.chunks = chunks
        if shape[0] % (chunks * self.devices):
            raise LayoutError(f"{what}: {shape[0]} rows do not split into {chunks} chunks of {self.devices} devices")
        kinds = [SERIAL, DIDX, SERIAL]
        fusion_shape = (chunks, self.devices, shape[0] // (chunks * self.devices))
        return TensorType(element, fusion_shape, ParallelAttr(kinds, mesh=self.mesh)), Form(IDS, True)

    def _weight_type(
        self, shape: tuple[int, ...], element: Attribute, layout: tuple[AxisLayout, ...], what: str
    ) -> tuple[TensorType, Form]:
        D = self.devices
        kinds = [a.kind for a in layout]
        if any(a.chunks for a in layout) or STREAM in kinds:
            raise LayoutError(f"{what}: a parameter is sharded (didx) or whole, not streamed")
        if DIDX not in kinds:
            return TensorType(element, shape), Form(WHOLE)
        sharded_extent = shape[kinds.index(DIDX)]
        if sharded_extent % D:
            raise LayoutError(
                f"{what}: axis {kinds.index(DIDX)} of extent {sharded_extent} does not split over {D} devices"
            )
        encoding = ParallelAttr([DIDX, *[SERIAL] * 4], mesh=self.mesh)
        if kinds == [DIDX, SERIAL]:  # column-parallel W [N, K]: this device's W^T block [K, N/D]
            n, k = shape
            return TensorType(element, (D, 1, 1, k, n // D), encoding), Form(COLUMN_WEIGHT)
        if kinds == [SERIAL, DIDX]:  # row-parallel W [N, K]: this device's W^T block [K/D, N]
            n, k = shape
            return TensorType(element, (D, 1, 1, k // D, n), encoding), Form(ROW_WEIGHT)
        if kinds == [DIDX]:  # the bias of a column-parallel linear
            return TensorType(element, (D, shape[0] // D), ParallelAttr([DIDX, SERIAL], mesh=self.mesh)), Form(
                COLUMN_BIAS
            )
        raise LayoutError(
            f'{what}: sharded parameters are weights [N, K] ("[didx, serial]": column-parallel, "[serial, didx]": '
            f'row-parallel) or biases [N] ("[didx]"), got the layout of a {len(shape)}-D tensor'
        )

    def local_input(self, tensor: torch.Tensor, source: Any, copy: bool = True) -> torch.Tensor:
        """
        The fusion-level local tensor of a user's local shard, or of this device's part of a
        parameter: a copy of its block, or with `copy=False` a view of it (strided: the kernels
        read a block of columns in place), which sees the parameter's in-place updates.
        """
        form = self._input_forms[_key(source)]
        D, S = self.devices, self.chunks or 1
        if form.kind == IDS:
            return tensor.reshape(S, 1, tensor.shape[0] // S)
        if form.kind == ROWS:
            return tensor.reshape(S, 1, tensor.shape[0] // S, tensor.shape[1])
        if form.kind == REPLICATED:
            return tensor.reshape(S, D, tensor.shape[0] // (S * D), tensor.shape[1])
        if form.kind == WHOLE:
            return tensor
        d = self.position()
        if form.kind in (COLUMN_WEIGHT, COLUMN_BIAS) and form.merged:
            # A fused projection's weight or bias: block d of each piece's rows, in order (a copy).
            block = torch.cat([piece.chunk(D, 0)[d] for piece in tensor.split(form.merged, 0)], 0)
            return block[None] if form.kind == COLUMN_BIAS else block.t()[None, None, None]
        if form.kind == COLUMN_WEIGHT:
            n = tensor.shape[0] // D
            block = tensor.narrow(0, d * n, n)
        elif form.kind == ROW_WEIGHT:
            k = tensor.shape[1] // D
            block = tensor.narrow(1, d * k, k)
        else:
            n = tensor.shape[0] // D  # column bias
            block = tensor.narrow(0, d * n, n)
            return (block.clone() if copy else block)[None]
        return (block.clone() if copy else block).t()[None, None, None]

    def local_output(self, tensor: torch.Tensor, index: int) -> torch.Tensor:
        """[S, 1 or D, R, C] -> the user's [rows, C]; a replicated tensor read whole as it is."""
        if index < len(self.output_kinds) and self.output_kinds[index] == WHOLE:
            # Every rank computed it; a rank outside the mesh gets None, as for the mesh's other outputs.
            return tensor if self.in_mesh() else None
        return tensor.reshape(-1, tensor.shape[-1])

    def in_mesh(self) -> bool:
        """Whether this rank is a device of the mesh (a rank outside it runs the program too)."""
        import torch.distributed as dist

        return (dist.get_rank() if dist.is_initialized() else 0) in self.mesh

    def position(self) -> int:
        """
        This rank's position in the mesh. A rank outside it runs the program too (SPMD) and gets
        None for the outputs; it takes position 0's shards, as the runtime gives it position 0's
        extents (docs/multidevice.md, "Outputs on a sub-mesh").
        """
        import torch.distributed as dist

        rank = dist.get_rank() if dist.is_initialized() else 0
        return self.mesh.index(rank) if rank in self.mesh else 0

    # -- ops -------------------------------------------------------------------------------------

    def form(self, e: Emitter, value: SSAValue) -> Form:
        if value not in self.forms:
            raise e.error("a tensor of unknown sharding (an internal error of the frontend)")
        return self.forms[value]

    def _elementwise(self, builder: Any) -> Any:
        """
        Operands of one form. 0-d tensors (constants) broadcast to the others' form, replicated
        vectors along the columns of rows, replicated tensors along heads' own axes; partial sums
        added together stay one partial sum.
        """

        def build(e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
            if self._partial_sum(e, node, args, kwargs):
                # A sum of partial sums is one: the reduction waits for the whole sum (the
                # gradient of rows that several column-parallel linears read, as q, k and v do).
                result = builder(e, node, *args, **kwargs)
                self.forms[result] = self.form(e, args[0])
                return result
            args = tuple(self._reduced(e, a) for a in args)
            # A 0-d tensor (a lifted constant, a scalar parameter) broadcasts to any form, as a
            # Python scalar does.
            sized = [a for a in args if isinstance(a, SSAValue) and shape_of(a)]
            forms = {self.form(e, a) for a in sized}
            forms = forms or {self.form(e, a) for a in args if isinstance(a, SSAValue)} or {Form(WHOLE)}
            if any(f.kind == HEADS for f in forms):
                form = self.heads.elementwise_form(e, node, sized)
            else:
                if len(forms) > 1 and forms & {Form(ROWS), Form(REPLICATED)}:
                    # A replicated vector (a norm's weight, a [1, C] shift) along each row's columns:
                    # every device has them.
                    whole = [a for a in sized if self.form(e, a) == Form(WHOLE)]
                    if all(_row_vector(shape_of(a)) for a in whole):
                        forms.discard(Form(WHOLE))
                if len(forms) > 1 and any(f.kind == COLUMNS for f in forms):
                    args = self._along_columns(e, args)
                    sized = [a for a in args if isinstance(a, SSAValue) and shape_of(a)]
                    forms = {self.form(e, a) for a in sized}
                    whole = [a for a in sized if self.form(e, a) == Form(WHOLE)]
                    if all(n == 1 for a in whole for n in shape_of(a)):
                        forms.discard(Form(WHOLE))  # every element alike: it goes with any block of columns
                form = one_form(e, node, forms)
            result = builder(e, node, *args, **kwargs)
            self.forms[result] = form
            return result

        return build

    def _along_columns(self, e: Emitter, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """
        The operands of an elementwise op of a column-parallel output, its "[didx]" vectors (a scale
        or shift of the hidden units: each device holds its block of them, as of the columns)
        expanded along its rows. Unchanged where an operand is neither (the op is then an error),
        or a replicated tensor of more than one element (it would be read whole by every device's
        block of columns).
        """
        sized = [a for a in args if isinstance(a, SSAValue) and shape_of(a)]
        columns = [a for a in sized if self.form(e, a).kind == COLUMNS]
        ref = columns[0]
        for a in sized:
            form = self.form(e, a)
            fits = (
                form == self.form(e, ref)
                or (form.kind == COLUMN_BIAS and shape_of(a)[-1] == shape_of(ref)[-1])
                or (form.kind == WHOLE and all(n == 1 for n in shape_of(a)))
            )
            if not fits:
                return args

        def expanded(a: Any) -> Any:
            if not isinstance(a, SSAValue) or not shape_of(a) or self.form(e, a).kind != COLUMN_BIAS:
                return a
            t = TensorType(element_of(a), shape_of(ref), ref.type.encoding)  # type: ignore[attr-defined]
            value = e.emit(fusion.ExpandOp(a, [1, 2, 3], t))
            self.forms[value] = self.form(e, ref)
            return value

        return tuple(expanded(a) for a in args)

    def _partial_sum(self, e: Emitter, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether the op adds (or subtracts) partial sums of the same shape, reduced alike."""
        if node.target not in (aten.add.Tensor, aten.sub.Tensor) or kwargs or len(args) != 2:
            return False
        if not all(isinstance(a, SSAValue) for a in args):
            return False
        forms = {self.form(e, a) for a in args}
        return len(forms) == 1 and next(iter(forms)).kind == PARTIAL and shape_of(args[0]) == shape_of(args[1])

    def _per_row(self, builder: Any) -> Any:
        """
        A reduction over the columns of rows (sharded or replicated), keeping the axis (a norm's
        statistics): every device holds its rows' columns, so it is local and keeps the form.
        """

        def build(e: Emitter, node: Node, x: Any, dims: Any = None, *args: Any, **kwargs: Any) -> Any:
            keepdim = args[-1] if args and isinstance(args[-1], bool) else kwargs.get("keepdim", False)
            x = self._reduced(e, x)  # a row-parallel output's statistics are of the summed rows
            form = self.form(e, x) if isinstance(x, SSAValue) else None
            if form is not None and form.kind == WHOLE:
                result = builder(e, node, x, dims, *args, **kwargs)
                for r in result if isinstance(result, tuple) else (result,):
                    self.forms[r] = form
                return result
            if form is None or form.kind not in ACTIVATIONS or list(dims or []) not in ([1], [-1]) or not keepdim:
                kind = form.kind if form else "constant"
                what = f"axes {list(dims or [])}{'' if keepdim else ' without keepdim'} of a {kind}"
                raise e.error(
                    f"{node.target}: on a mesh, reductions take rows (sharded or replicated) and reduce their "
                    f"columns (the last axis, keepdim=True), not {what} tensor"
                )
            result = builder(e, node, x, [3], *args, **kwargs)
            for r in result if isinstance(result, tuple) else (result,):
                self.forms[r] = form
            return result

        return build

    def _row_wise(self, builder: Any) -> Any:
        """
        A softmax along the columns of rows (sharded or replicated): every device holds whole
        rows, so it is local and keeps the form. Heads go to frontend/sharded_heads_math.py.
        """

        def build(e: Emitter, node: Node, x: Any, dim: int, *args: Any, **kwargs: Any) -> SSAValue:
            x = self._reduced(e, x)  # a row-parallel output's softmax is of the summed rows
            form = self.form(e, x) if isinstance(x, SSAValue) else None
            if form is not None and form.kind == WHOLE:
                result = builder(e, node, x, dim, *args, **kwargs)
            elif form is not None and form.kind in ACTIVATIONS and dim in (1, -1):
                result = builder(e, node, x, 3, *args, **kwargs)  # the columns of [S, D, rows, columns]
            else:
                kind = form.kind if form else "constant"
                raise e.error(
                    f"{node.target}: on a mesh, a softmax takes rows (sharded or replicated) along their "
                    f"columns (the last axis), not axis {dim} of a {kind} tensor"
                )
            self.forms[result] = form
            return result

        return build

    def _rows_times_matrix(self, e: Emitter, node: Node, x: Any, w: Any) -> SSAValue:
        """
        Rows (sharded or replicated) times a replicated matrix (`x @ self.proj`, `x @ w.t()`): a
        linear with a replicated weight, local to each rank's rows. Anything else of a sharded
        operand is as unsupported as before.
        """
        x = self._reduced(e, x) if isinstance(x, SSAValue) else x
        if isinstance(x, SSAValue) and isinstance(w, SSAValue) and len(shape_of(w)) == 2:
            fx, fw = self.form(e, x), self.form(e, w)
            if fx.kind in ACTIVATIONS and fw.kind == WHOLE and shape_of(x)[-1] == shape_of(w)[0]:
                shape = (*shape_of(x)[:-1], shape_of(w)[1])
                result = e.typed(lambda t: fusion.MatmulOp(x, w, t), [x, w], shape, element_of(x))
                self.forms[result] = fx
                return result
        return self._unsupported(e, node, x, w)

    def _unsupported(self, e: Emitter, node: Node, *args: Any, **kwargs: Any) -> SSAValue:
        """Any op of replicated tensors (or of none: a constant) is replicated; others are errors."""
        if all(self.form(e, a).kind == WHOLE for a in _flat(args, kwargs) if isinstance(a, SSAValue)):
            result = ATEN_TABLE[node.target](e, node, *args, **kwargs)
            for r in result if isinstance(result, tuple) else (result,):
                if isinstance(r, SSAValue):
                    self.forms[r] = Form(WHOLE)
            return result
        first = args[0] if args else None
        if isinstance(first, SSAValue) and self.form(e, first).kind in ACTIVATIONS and _cuts_columns(node):
            if node.target in (aten.slice.Tensor, aten.narrow.default):
                return self._columns_of_rows(e, node, first)
        if isinstance(first, SSAValue) and first in self._fused and _cuts_columns(node):
            if node.target in SPLITS and _piece_sizes(node) == self._fused[first]:
                return self._split_fused(e, first, self._fused[first])
        if isinstance(first, SSAValue) and self.form(e, first).kind == COLUMNS and _cuts_columns(node):
            # A fused projection (GPT-2's c_attn, a gate_up) cut into its pieces: device d holds
            # columns [d*N/D, (d+1)*N/D) of the fused output, which mixes the pieces' columns.
            raise e.error(
                f"{node.target} of a column-parallel linear's output: on a mesh each device holds a block of its "
                "columns, not a block of each piece (a fused projection such as c_attn(x).split(H, dim=-1) or "
                "gate_up(x).chunk(2, dim=-1)); write the pieces as separate linears, each column-parallel "
                '("[didx, serial]"), whose weights are the fused weight\'s row blocks (W.split(H, dim=0))'
            )
        raise e.error(
            f"{node.target} is not supported on a mesh yet: sharded programs take elementwise ops and "
            "linear layers (docs/frontend.md)"
        )

    def _linear(self, e: Emitter, node: Node, x: SSAValue, w: SSAValue, bias: SSAValue | None = None) -> SSAValue:
        x = self._reduced(e, x)
        fx, fw = self.form(e, x), self.form(e, w)
        element = element_of(x)
        fb = self.form(e, bias) if bias is not None else None
        if fw.kind == WHOLE:
            if bias is not None and fb is not None and fb.kind != WHOLE:
                raise e.error(
                    f'{self._called(bias, "bias")} is sharded ("[didx]"), but the linear\'s weight '
                    f"{self._called(w, 'weight')} is replicated: shard the weight column-parallel "
                    '("[didx, serial]") with it, or give the bias no layout'
                )
            if fx.kind == COLUMNS:
                raise e.error(
                    f"the linear's weight {self._called(w, 'weight')} is replicated, and its input is the "
                    'column-sharded output of a column-parallel linear: make it row-parallel ("[serial, didx]")'
                )
            if fx.kind not in (*ACTIVATIONS, WHOLE):
                raise e.error(
                    f"a linear with a replicated weight takes rows-sharded or replicated input, not {fx.kind}"
                )
            operands = [x, w] if bias is None else [x, w, bias]
            shape = (*shape_of(x)[:-1], shape_of(w)[0])
            result = e.typed(lambda t: fusion.LinearOp(x, w, bias, t), operands, shape, element)
            self.forms[result] = fx
            return result
        if fw.kind == COLUMN_WEIGHT:
            if fx.kind == WHOLE and (rows := self._as_rows(e, x)) is not None:
                x, fx = rows, self.form(e, rows)
            if fx.kind == WHOLE:
                raise e.error(
                    f'a column-parallel linear (weight "[didx, serial]") takes rows: on a mesh, activations are '
                    f"[rows, columns] with the rows sharded, or replicated with a multiple of the mesh's "
                    f"{self.devices} devices in rows, not a tensor of shape {list(shape_of(x))} read whole"
                )
            if fx.kind not in ACTIVATIONS:
                raise e.error(f'a column-parallel linear (weight "[didx, serial]") takes rows, not {fx.kind} input')
            S, D, R, _ = shape_of(x)
            pieces = self._read_in_pieces(e, node, w, bias)
            result_shape = (D, S, D, R, shape_of(w)[-1])
            y = self._matmul(e, x, w, result_shape, element)
            if bias is not None:
                if fb is None or fb.kind != COLUMN_BIAS:
                    raise e.error(
                        f'a column-parallel linear (weight {self._called(w, "weight")}, "[didx, serial]") takes '
                        f'a column-parallel bias: give {self._called(bias, "bias")} the layout "[didx]"'
                    )
                y = self._add_bias(e, y, bias, [1, 2, 3])
            self.forms[y] = Form(COLUMNS, fx.kind == ROWS)
            if pieces is not None:
                self._fused[y] = pieces
            return y
        if fw.kind == ROW_WEIGHT:
            if fx.kind != COLUMNS:
                raise e.error(
                    'a row-parallel linear (weight "[serial, didx]") takes the column-sharded output of a '
                    f"column-parallel linear, not {fx.kind} input"
                )
            D, S, _, R, _ = shape_of(x)
            partial = self._matmul(e, x, w, (D, S, D, R, shape_of(w)[-1]), element)
            self.forms[partial] = Form(PARTIAL, fx.rows_sharded)
            if bias is None:
                return partial
            if fb is None or fb.kind != WHOLE:
                raise e.error(
                    f'a row-parallel linear (weight {self._called(w, "weight")}, "[serial, didx]") adds its bias '
                    f"once, after the sum over the devices: give {self._called(bias, 'bias')} no layout"
                )
            reduced = self._reduced(e, partial)
            result = e.binary(fusion.AddOp, reduced, bias, element)
            self.forms[result] = self.forms[reduced]
            return result
        raise e.error(f"the weight of a linear must be a parameter, got a {fw.kind} tensor")

    FUSES = True
    """Whether a column-parallel linear whose output is only split into pieces (a fused projection)
    shards each piece (inference; a training step's gradients are written as whole blocks)."""

    def _read_in_pieces(self, e: Emitter, node: Node, w: SSAValue, bias: SSAValue | None) -> tuple[int, ...] | None:
        """
        The pieces a column-parallel linear's output is split into, when every use of it is that one
        split along its columns into pieces that each split over the devices (GPT-2's
        `c_attn(x).split(H, dim=-1)`): its weight's and bias's blocks are then block d of each piece,
        so that each device's columns are its block of q, of k and of v. None when the output is read
        otherwise. A weight that linears read in pieces and otherwise is an error.
        """
        users = list(node.users)
        sizes = {_piece_sizes(u) if _cuts_columns(u) and u.target in SPLITS else None for u in users}
        pieces = sizes.pop() if len(sizes) == 1 else None
        if not self.FUSES or pieces is None or len(pieces) < 2 or any(p % self.devices for p in pieces):
            pieces = None
        for value in (w, bias):
            if value is None:
                continue
            if value in self._pieces and self._pieces[value] != pieces:
                raise e.error(
                    f"{self._called(value, 'weight')} is read by a column-parallel linear whose output is split into "
                    f"pieces {list(self._pieces[value] or ())} and by one whose output is read as "
                    f"{list(pieces) if pieces else 'a whole'}: on a mesh, each device holds one block of it"
                )
            self._pieces[value] = pieces
            if pieces is not None and value in self._keys:
                form = replace(self.form(e, value), merged=pieces)
                self.forms[value] = self._input_forms[self._keys[value]] = form
        return pieces

    def _split_fused(self, e: Emitter, y: SSAValue, pieces: tuple[int, ...]) -> tuple[SSAValue, ...]:
        """A fused projection's output [D, S, D, R, N/D] -> its pieces, each [D, S, D, R, p/D] of its own columns."""
        form, shape = self.form(e, y), shape_of(y)
        results, offset = [], 0
        for p in pieces:
            width = p // self.devices
            t = TensorType(element_of(y), (*shape[:-1], width), y.type.encoding)
            piece = e.emit(fusion.SliceOp(y, [0] * (len(shape) - 1) + [offset], [1] * len(shape), t))
            self.forms[piece] = form
            results.append(piece)
            offset += width
        return tuple(results)

    def _columns_of_rows(self, e: Emitter, node: Node, x: SSAValue) -> SSAValue:
        """`x[:, a:b:s]` or `x.narrow(-1, a, n)` of rows (a router's gate column): each device's own rows, local."""
        columns = shape_of(x)[-1]
        if node.target is aten.narrow.default:
            start, length = (int(a) for a in node.args[2:4])
            picked = range(columns)[start % columns if start < 0 else start :][:length]
        else:
            start, end, step = [*node.args[2:], None, None, None][:3]
            picked = range(columns)[slice(start, end, step)]
        if len(picked) == 0:
            raise e.error(f"{node.target}: on a mesh, a slice of rows' columns takes at least one column")
        shape = shape_of(x)
        t = TensorType(element_of(x), (*shape[:-1], len(picked)), x.type.encoding)
        offsets = [0] * (len(shape) - 1) + [picked.start]
        result = e.emit(fusion.SliceOp(x, offsets, [1] * (len(shape) - 1) + [picked.step], t))
        self.forms[result] = self.form(e, x)
        return result

    def _as_rows(self, e: Emitter, x: SSAValue) -> SSAValue | None:
        """A whole [rows, columns] tensor (a replicated table's lookup) as replicated rows (a view), if they split."""
        shape = shape_of(x)
        S, D = self.chunks or 1, self.devices
        if len(shape) != 2 or shape[0] % (S * D):
            return None
        t = TensorType(element_of(x), (S, D, shape[0] // (S * D), shape[1]), ParallelAttr([SERIAL] * 4, mesh=self.mesh))
        rows = e.emit(fusion.ReshapeOp(x, t))
        self.forms[rows] = Form(REPLICATED)
        return rows

    def _matmul(self, e: Emitter, x: SSAValue, w: SSAValue, shape: tuple[int, ...], element: Attribute) -> SSAValue:
        kinds = [DIDX, STREAM, SERIAL, SERIAL, SERIAL]
        return e.emit(fusion.MatmulOp(x, w, TensorType(element, shape, ParallelAttr(kinds, mesh=self.mesh))))

    def _add_bias(self, e: Emitter, y: SSAValue, bias: SSAValue, new_dims: list[int]) -> SSAValue:
        expanded = e.emit(fusion.ExpandOp(bias, new_dims, y.type))
        return e.emit(fusion.AddOp(y, expanded, y.type))

    def _reduced(self, e: Emitter, value: Any) -> Any:
        """A partial sum, summed over the devices: a reduce-scatter to sharded rows, or an all-reduce."""
        if not isinstance(value, SSAValue) or self.form(e, value).kind != PARTIAL:
            return value
        if value not in self._reductions:
            self._reductions[value] = self._reduce(e, value, self.form(e, value).rows_sharded)
        return self._reductions[value]

    def _reduce(self, e: Emitter, partial: SSAValue, to_rows: bool) -> SSAValue:
        _, S, D, R, C = shape_of(partial)
        kinds = [STREAM, DIDX if to_rows else SERIAL, SERIAL, SERIAL]
        t = TensorType(element_of(partial), (S, D, R, C), ParallelAttr(kinds, mesh=self.mesh))
        result = e.emit(fusion.SumOp(partial, [0], t))
        self.forms[result] = Form(ROWS if to_rows else REPLICATED)
        return result

    # -- outputs ---------------------------------------------------------------------------------

    def output(self, e: Emitter, value: SSAValue, shape: tuple[int, ...], layout: str | None, what: str) -> SSAValue:
        result = self._output(e, value, shape, layout, what)
        self.output_kinds.append(self.forms.get(result, self.form(e, value)).kind)
        return result

    def _output(self, e: Emitter, value: SSAValue, shape: tuple[int, ...], layout: str | None, what: str) -> SSAValue:
        parsed = parse_layout(layout, len(shape), what) if layout else None
        if self.form(e, value).kind == WHOLE and (parsed is None or all(a.kind == SERIAL for a in parsed)):
            return value  # computed whole on every rank (from replicated arguments and parameters only)
        want_rows = parsed is not None and parsed[0].kind == DIDX
        if parsed is not None and (
            len(shape) != 2 or any(a.kind == STREAM for a in parsed) or parsed[1].kind != SERIAL
        ):
            raise LayoutError(f"{what}: on a mesh, an output is [rows, columns] with rows sharded or replicated")
        if want_rows and (parsed[0].chunks or 1) != (self.chunks or 1):
            raise LayoutError(f"{what}: its rows must be in the inputs' {self.chunks or 1} stream chunks")
        form = self.form(e, value)
        if form.kind == PARTIAL:
            if want_rows and not form.rows_sharded:
                raise e.error(f"{what}: rows that were replicated cannot become sharded (a scatter)")
            return self._reduce(e, value, want_rows)
        if form.kind == COLUMNS:
            raise e.error(
                f"{what} is the column-sharded output of a column-parallel linear: pass it through a row-parallel "
                'linear (weight "[serial, didx]")'
            )
        if form.kind == ROWS and not want_rows:
            t = value.type
            assert isinstance(t, TensorType)
            kinds = [STREAM if k == STREAM else SERIAL for k in _kinds(t)]
            return e.emit(
                fusion.SetOp(value, TensorType(t.element_type, t.get_shape(), ParallelAttr(kinds, mesh=self.mesh)))
            )
        if form.kind == REPLICATED and want_rows:
            raise e.error(f"{what}: rows that are replicated cannot become sharded (a scatter)")
        if form.kind == WHOLE:
            raise e.error(
                f"{what}: a tensor every rank computes whole (from replicated arguments, parameters and buffers "
                "only) cannot become sharded rows (a scatter): give it the out_layouts entry None"
            )
        if form.kind not in ACTIVATIONS:
            raise e.error(f"{what}: a {form.kind} tensor cannot be an output")
        return value


def one_form(e: Emitter, node: Node, forms: set[Form]) -> Form:
    """The form an elementwise op's operands share; the located error when they are sharded differently."""
    if len(forms) > 1:
        kinds = {f.kind for f in forms}
        names = ", ".join(sorted(kinds))
        raise e.error(f"{node.target}: its operands are sharded differently ({names}): {_mixed_forms_hint(kinds)}")
    return next(iter(forms))


def _mixed_forms_hint(kinds: set[str]) -> str:
    """What the forms of an elementwise op's operands are, and what goes together, in the user's terms."""
    if COLUMNS in kinds and kinds & {WHOLE, COLUMN_BIAS}:
        return (
            "each device holds a block of a column-parallel output's columns, so a tensor along them is "
            'sharded with them: give a [C] parameter or buffer the param_layouts entry "[didx]" (a 0-d or '
            "[1] tensor goes with any form)"
        )
    if COLUMNS in kinds:
        return (
            "each device holds a block of a column-parallel output's columns, of every row; pass it through "
            'a row-parallel linear ("[serial, didx]") to combine it with rows'
        )
    if kinds == {ROWS, REPLICATED}:
        return "rows sharded over the mesh and replicated rows: replicated rows cannot become sharded (a scatter)"
    if WHOLE in kinds:
        return (
            "a tensor read whole on every rank (a replicated parameter, buffer or argument) goes with rows as a "
            "[C] or [1, C] vector along their columns, or 0-d; a whole [rows, columns] one would be added to "
            "each rank's shard"
        )
    return "on a mesh, an elementwise op takes operands of one form"


def _row_vector(shape: tuple[int, ...]) -> bool:
    """`[C]` or `[1, C]`: broadcast along the rows of a [rows, columns] activation, it reads only columns."""
    return len(shape) <= 1 or (len(shape) == 2 and shape[0] == 1)


def _flat(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """An op's arguments, with those in lists (a cat's tensors) flattened."""
    flat: list[Any] = []
    for a in (*args, *kwargs.values()):
        flat.extend(a if isinstance(a, (list, tuple)) else [a])
    return flat


def _kinds(t: TensorType) -> tuple[str, ...]:
    encoding = t.encoding
    return encoding.axis_kinds if isinstance(encoding, ParallelAttr) else (SERIAL,) * len(t.get_shape())


def _key(source: Any) -> str:
    return f"{source.kind}:{source.index}:{source.name}"


def _cuts_columns(node: Node) -> bool:
    """Whether `node` cuts its operand into pieces along its last axis (a split of a fused projection's columns)."""
    if node.target not in PIECES or not isinstance(node.args[0], Node):
        return False
    at = 1 if node.target in (aten.slice.Tensor, aten.narrow.default, aten.unbind.int, aten.select.int) else 2
    dim = node.args[at] if len(node.args) > at else node.kwargs.get("dim", 0)
    rank = len(node.args[0].meta["val"].shape)
    return isinstance(dim, int) and dim % rank == rank - 1


def _piece_sizes(node: Node) -> tuple[int, ...] | None:
    """The extents along the last axis of the pieces a split or chunk gives (its traced results)."""
    values = node.meta.get("val")
    if not isinstance(values, (list, tuple)) or not values:
        return None
    return tuple(int(v.shape[-1]) for v in values)
