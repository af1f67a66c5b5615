"""
Embeddings on a mesh (frontend/sharded.py's mesh mode): token ids [M] in, rows [M, H] out.

Token ids are 1-D activations: `"[didx]"` (or `"[(stream(S), didx)]"`) shards them as rows are
sharded, the fusion tensor [S, D, M/(S*D)] with didx on axis 1; replicated ids (no layout) are read
whole. Two tables:

    replicated (no layout)          each device looks up its own ids: rows of the ids' form, no
                                    communication
    "[didx, serial]" on [V, H]      vocab-parallel (Megatron's VocabParallelEmbedding): device d holds
                                    the rows [d*V/D, (d+1)*V/D) of the table; it takes every rank's
                                    ids (an all-gather of sharded ones), looks up those in its range
                                    (the others read row 0 and are zeroed) and the devices' partial
                                    rows are summed: a reduce-scatter back to sharded rows, or an
                                    all-reduce for replicated ids, as a row-parallel linear's

The vocab-parallel lookup, for ids of S chunks of D blocks of R rows and N = S*D*R:

    ids      [S, D, R]           [serial, didx, serial]       this rank's ids
    every    [D, S, D, R]        [didx, serial, serial, ...]  every rank's ids on each device (all-gather)
    local    every - first       first = d*V/D on device d: an iota cut over the devices (a local slice)
    picked   gather(table^T block [D, V/D, H], local clamped to the block, along the vocab)
    partial  where(in range, picked, 0) as [D, S, D, R, H]: summed over axis 0 by the mesh mode
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import SSAValue

from hir.dialects import fusion
from hir.dialects.parallel_encoding import DIDX, SERIAL, ParallelAttr
from hir.frontend.aten_indexing import index_select
from hir.frontend.aten_table import ATEN_TABLE
from hir.frontend.emitter import Emitter, element_of, shape_of

if TYPE_CHECKING:
    from hir.frontend.sharded import MeshMode

aten = torch.ops.aten


def install_embedding(mode: MeshMode) -> None:
    mode.overrides[aten.embedding.default] = lambda e, node, *args, **kwargs: embedding(mode, e, node, *args, **kwargs)


def embedding(mode: MeshMode, e: Emitter, node: Node, weight: SSAValue, indices: SSAValue, *_: Any, **__: Any) -> Any:
    from hir.frontend.sharded import COLUMN_WEIGHT, IDS, REPLICATED, ROWS, WHOLE, Form

    table, ids = mode.form(e, weight), mode.form(e, indices)
    if table.kind not in (WHOLE, COLUMN_WEIGHT):
        raise e.error(
            f"aten.embedding.default: on a mesh, an embedding table {mode._called(weight, 'table')} is replicated (no "
            'layout) or vocab-parallel ("[didx, serial]": each rank holds a block of its rows), not '
            f"{_layout_of(table.kind)}"
        )
    if ids.kind == WHOLE:
        ids_value = _replicated_ids(mode, e, indices)
        if ids_value is None and table.kind == WHOLE:  # replicated ids that are not tokens over the mesh
            result = ATEN_TABLE[node.target](e, node, weight, indices)
            mode.forms[result] = Form(WHOLE)
            return result
        if ids_value is None:
            raise e.error(
                f'aten.embedding.default: on a mesh, token ids are [tokens] (1-D), sharded ("[didx]") or '
                f"replicated with a multiple of the mesh's {mode.devices} devices in tokens, not "
                f"{list(shape_of(indices))}: flatten them (ids.flatten()) and give them a layout"
            )
        indices, ids = ids_value, mode.forms[ids_value]
    if ids.kind != IDS:
        given = node.args[1].meta["val"].shape if isinstance(node.args[1], Node) else shape_of(indices)
        raise e.error(
            f'aten.embedding.default: on a mesh, token ids are [tokens] (1-D), sharded ("[didx]") or replicated, '
            f"not {ids.kind} {list(given)}: flatten them (ids.flatten()) and give them the layout "
            '"[didx]" for the rows "[didx, serial]"'
        )
    if table.kind == WHOLE:  # each device its own ids' rows: no communication
        result = index_select(e, weight, 0, indices)
        mode.forms[result] = Form(ROWS if ids.rows_sharded else REPLICATED)
        return result
    return _vocab_parallel(mode, e, weight, indices, ids.rows_sharded)


def _layout_of(kind: str) -> str:
    return {"row-weight": 'sharded along its columns ("[serial, didx]")'}.get(kind, f"a {kind} tensor")


def _replicated_ids(mode: MeshMode, e: Emitter, indices: SSAValue) -> SSAValue | None:
    """Replicated 1-D ids read whole as the ids form [S, D, M/(S*D)], no didx axis (a view), if they split."""
    from hir.frontend.sharded import IDS, Form

    shape = shape_of(indices)
    S, D = mode.chunks or 1, mode.devices
    if len(shape) != 1 or shape[0] % (S * D):
        return None
    t = TensorType(element_of(indices), (S, D, shape[0] // (S * D)), ParallelAttr([SERIAL] * 3, mesh=mode.mesh))
    value = e.emit(fusion.ReshapeOp(indices, t))
    mode.forms[value] = Form(IDS, False)
    return value


def _vocab_parallel(mode: MeshMode, e: Emitter, weight: SSAValue, ids: SSAValue, rows_sharded: bool) -> SSAValue:
    """Each device's partial rows [D, S, D, R, H]: its block's rows of the ids in its range, zeros elsewhere."""
    import torch.distributed as dist

    from hir.frontend.sharded import PARTIAL, Form

    if dist.is_initialized() and (outside := sorted(set(range(dist.get_world_size())) - set(mode.mesh))):
        # Their gathered ids are not received (a collective's buffers carry nothing off its mesh),
        # and a lookup at such an index would fail there.
        raise e.error(
            f'a vocab-parallel embedding ("[didx, serial]" on {mode._called(weight, "the table")}) runs on a mesh '
            f"of every rank of the job, and rank{'s' * (len(outside) > 1)} {', '.join(map(str, outside))} "
            f"{'are' if len(outside) > 1 else 'is'} outside the mesh {list(mode.mesh)}: use a mesh of every rank, or "
            "a replicated table"
        )
    S, D, R = shape_of(ids)
    _, _, _, H, block = shape_of(weight)  # W^T's block [H, V/D] (a column-parallel weight's form)
    mesh = mode.mesh
    index = element_of(ids)

    def typed(shape: tuple[int, ...], element: Any = index) -> TensorType:
        return TensorType(element, shape, ParallelAttr([DIDX, *[SERIAL] * (len(shape) - 1)], mesh=mesh))

    every = e.emit(fusion.ExpandOp(ids, [0], typed((D, S, D, R))))  # sharded ids: an all-gather
    # The first vocabulary row of each device's block: d * V/D, counted whole and cut over the devices.
    counted = e.emit(fusion.IotaOp(0, TensorType(index, (D, 1, 1, 1), ParallelAttr([SERIAL] * 4, mesh=mesh))))
    first = e.emit(fusion.SetOp(e.binary(fusion.MulOp, counted, block, index), typed((D, 1, 1, 1))))
    local = e.binary(fusion.SubOp, every, first, index)
    ones, shape = IntegerType(1), shape_of(local)
    zero, end = (e.broadcast_to(e.constant(n, index), shape, local) for n in (0, block))
    above = e.typed(lambda t: fusion.CompareOp("ge", local, zero, t), [local, zero], shape, ones)
    below = e.typed(lambda t: fusion.CompareOp("lt", local, end, t), [local, end], shape, ones)
    inside = e.typed(lambda t: fusion.WhereOp(above, below, above, t), [above, below, above], shape, ones)  # and
    # Ids of another device's block read row 0 (zeroed below); ids outside the vocabulary keep an
    # index outside every block, so the gather fails on every rank, as torch's lookup does.
    known = e.typed(lambda t: fusion.CompareOp("ge", every, zero, t), [every, zero], shape, ones)
    vocabulary = e.broadcast_to(e.constant(block * D, index), shape, local)
    under = e.typed(lambda t: fusion.CompareOp("lt", every, vocabulary, t), [every, vocabulary], shape, ones)
    known = e.typed(lambda t: fusion.WhereOp(known, under, known, t), [known, under, known], shape, ones)
    other = e.typed(lambda t: fusion.WhereOp(known, zero, local, t), [known, zero, local], shape, index)
    clamped = e.typed(lambda t: fusion.WhereOp(inside, local, other, t), [inside, local, other], shape, index)
    # The gather: W^T's block [D, 1, 1, H, V/D] as [D, V/D, H], the ids along H.
    # Explicit types: with D = 1 the views' unit axes would leave the didx axis's place ambiguous.
    rows = e.emit(fusion.ReshapeOp(weight, typed((D, H, block), element_of(weight))))
    rows = e.permute(rows, [0, 2, 1])
    flat = e.emit(fusion.ReshapeOp(clamped, typed((D, S * D * R))))
    picks = e.typed(lambda t: fusion.ExpandOp(flat, [2], t), [flat], (D, S * D * R, H), index)
    picked = e.typed(lambda t: fusion.GatherOp(rows, picks, 1, t), [rows, picks], (D, S * D * R, H), element_of(weight))
    picked = e.emit(fusion.ReshapeOp(picked, typed((D, S, D, R, H), element_of(weight))))
    kept = e.typed(lambda t: fusion.ExpandOp(inside, [4], t), [inside], (D, S, D, R, H), ones)
    nothing = e.broadcast_to(e.constant(0.0, element_of(weight)), (D, S, D, R, H), picked)
    partial = e.typed(lambda t: fusion.WhereOp(kept, picked, nothing, t), [kept, picked, nothing], (D, S, D, R, H),
                      element_of(weight))  # fmt: skip
    mode.forms[partial] = Form(PARTIAL, rows_sharded)
    return partial
