"""
Torch kernels of the indexing, scan and extra arithmetic ops (dialects/fusion/indexing.py,
scans.py, arithmetic.py). `indexing_kernel(op)` is `f(*operands) -> tensor` (`f(device=)` for
`fusion.iota`); `indexing_into(op)` is `f(out, *operands)`, the result copied into `out` (a
buffer or a strided view of one) where torch has no `out=` form that takes a strided view.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from hir.dialects import fusion
from hir.runtime.dtypes import shaped_dtype

Kernel = Callable[..., torch.Tensor]

_BINARY: dict[type, Kernel] = {
    fusion.MinimumOp: torch.minimum,
    fusion.FloorDivOp: lambda a, b: torch.div(a, b, rounding_mode="floor"),
    fusion.TruncDivOp: lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    fusion.RemainderOp: torch.remainder,
    fusion.FmodOp: torch.fmod,
    fusion.BitAndOp: torch.bitwise_and,
    fusion.BitOrOp: torch.bitwise_or,
    fusion.BitXorOp: torch.bitwise_xor,
}
_UNARY: dict[type, Kernel] = {
    fusion.Log1pOp: torch.log1p,
    fusion.Expm1Op: torch.expm1,
    fusion.FloorOp: torch.floor,
    fusion.CeilOp: torch.ceil,
    fusion.RoundOp: torch.round,
    fusion.TruncOp: torch.trunc,
    fusion.SignOp: torch.sign,
}


def indexing_kernel(op: fusion.FusionOp) -> Kernel | None:
    kind = type(op)
    if (fn := _BINARY.get(kind)) is not None:
        return fn
    if (fn := _UNARY.get(kind)) is not None:
        return fn
    if kind is fusion.GatherOp:
        dim = _dim(op)
        return lambda x, index: torch.gather(x, dim, index)
    if kind is fusion.IndexSelectOp:
        return _index_select(_dim(op))
    if kind is fusion.IndexAddOp:
        dim = _dim(op)
        return lambda x, index, source: torch.index_add(x, dim, _index_add_index(index), source)
    if kind is fusion.IndexCopyOp:
        dim = _dim(op)
        return lambda x, index, source: torch.index_copy(x, dim, index.long(), _last_writers(index, source, dim))
    if kind is fusion.FlipOp:
        dims = list(op.axes)  # type: ignore[attr-defined]
        return lambda x: torch.flip(x, dims)
    if kind is fusion.IotaOp:
        return _iota(op)
    if kind is fusion.CumsumOp:
        dim = _dim(op)
        return lambda x: torch.cumsum(x, dim, dtype=x.dtype)
    if kind is fusion.CumprodOp:
        dim = _dim(op)
        return lambda x: torch.cumprod(x, dim, dtype=x.dtype)
    if kind is fusion.ProdOp:
        dim = _dim(op)
        return lambda x: torch.prod(x, dim, dtype=x.dtype)
    if kind is fusion.ArgMaxOp:
        dim = _dim(op)
        return lambda x: torch.argmax(x, dim)
    if kind is fusion.ArgMinOp:
        dim = _dim(op)
        return lambda x: torch.argmin(x, dim)
    if kind is fusion.TopkOp:
        assert isinstance(op, fusion.TopkOp)
        k, dim, largest = op.k.value.data, _dim(op), op.largest
        if k == op.x.type.get_shape()[dim]:  # torch.sort: ties keep their order, as a stable sort's
            return lambda x: torch.sort(x, dim=dim, descending=largest, stable=True)[1]
        return lambda x: torch.topk(x, k, dim, largest=largest, sorted=True)[1]
    return None


def indexing_into(op: fusion.FusionOp) -> Callable[..., object] | None:
    kind = type(op)
    if kind is fusion.MinimumOp:
        return lambda out, a, b: torch.minimum(a, b, out=out)
    if (unary := _UNARY.get(kind)) is not None:
        return lambda out, x: out.copy_(unary(x))
    if kind is fusion.IotaOp:
        make = _iota(op)
        return lambda out: out.copy_(make(device=out.device))
    if kind is fusion.IndexAddOp:
        return _index_add_into(_dim(op))
    if kind is fusion.IndexCopyOp:
        return _index_copy_into(_dim(op))
    eager = indexing_kernel(op)
    if eager is None:
        return None
    return lambda out, *xs: out.copy_(eager(*xs))


def _dim(op: fusion.FusionOp) -> int:
    return op.dim.value.data  # type: ignore[attr-defined]


def _index_select(dim: int) -> Kernel:
    """index_select with an index of any rank: on the flattened index, then its axes put back."""

    def select(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        picked = torch.index_select(x, dim, index.reshape(-1))
        return picked.reshape(*x.shape[:dim], *index.shape, *x.shape[dim + 1 :])

    return select


def _index_add_index(index: torch.Tensor) -> torch.Tensor:
    """torch's index_add takes int32 or int64 indices only."""
    return index if index.dtype in (torch.int32, torch.int64) else index.long()


def _index_add_into(dim: int) -> Callable[..., object]:
    """
    index_add through its out= form: x copied into `out` (a buffer or a strided view), then the
    source slices added there, with no temporary of x's size. The launch gives `out` memory of
    its own where it may overlap an operand (runtime/hir_ops.py), which torch would misread.
    """

    def into(out: torch.Tensor, x: torch.Tensor, index: torch.Tensor, source: torch.Tensor) -> None:
        torch.index_add(x, dim, _index_add_index(index), source, out=out)

    return into


def _index_copy_into(dim: int) -> Callable[..., object]:
    """x copied into `out` (a buffer or a strided view), then the named slices written there."""

    def into(out: torch.Tensor, x: torch.Tensor, index: torch.Tensor, source: torch.Tensor) -> None:
        out.copy_(x)
        out.index_copy_(dim, index.long(), _last_writers(index, source, dim))

    return into


def _last_writers(index: torch.Tensor, source: torch.Tensor, dim: int) -> torch.Tensor:
    """
    `source` with each slice replaced by that of the last entry naming the same position, so
    that entries naming one position write one value and the order of the writes does not
    matter (CUDA's index_copy_ writes repeated positions in any order; torch's CPU kernel in the
    index's order, which this reproduces). Entries sorted stably by position: each group's last
    slot, spread back over its group by a reverse running minimum, names the winner. A few
    kernels over the index alone; none for an index of one entry.
    """
    count = index.numel()
    if count <= 1:
        return source
    order = torch.argsort(index, stable=True)
    ordered = index[order]
    slots = torch.arange(count, device=index.device)
    group_end = torch.ones(count, dtype=torch.bool, device=index.device)
    group_end[:-1] = ordered[1:] != ordered[:-1]
    ends = torch.where(group_end, slots, count)
    last = ends.flip(0).cummin(0).values.flip(0)  # per sorted slot: its group's last slot
    winner = torch.empty_like(order)
    winner[order] = order[last]  # per entry: the entry whose slice its position takes
    return source.index_select(dim, winner)


def _iota(op: fusion.FusionOp) -> Kernel:
    shape, dim = list(op.results[0].type.get_shape()), _dim(op)  # type: ignore[attr-defined]
    dtype = shaped_dtype(op.results[0].type)
    along = [shape[dim] if d == dim else 1 for d in range(len(shape))]

    def make(device: torch.device | str | None = None) -> torch.Tensor:
        return torch.arange(shape[dim], dtype=dtype, device=device).reshape(along).expand(shape)

    return make
