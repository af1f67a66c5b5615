"""
Random programs over uneven `didx` axes (an extent L other than the mesh size D: chunks of
ceil(L/D), trailing devices holding fewer or none), in the forms the nccl lowering supports
(docs/multidevice.md, "Uneven extents"): local compute on the shards, the padded all-gather, the
scatter, sums over the sharded axis (all-reduce) or onto it (the padded reduce-scatter), and
sharded outputs gathered by the runtime. Extents, axis positions, ranks, element types and the
mesh order are drawn; every L from 1 to D (L < D: empty shards), multiples of D and others up
to 3D + 1. The multi-device generator (tests/fuzz/multidevice.py) also draws uneven axes of
1 <= L < D, inside its random programs and with every backend (mesh_rules predicts which
reshardings of them are refused).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

UNARY = ("relu", "neg", "exp", "tanh", "abs")
FORMS = ("gather", "binary_keep", "sum_all", "sum_other", "scatter", "reduce_scatter")


def _type(shape: Sequence[int], dtype: str, didx: int | None, mesh: Sequence[int]) -> str:
    dims = "x".join(str(d) for d in shape)
    kinds = ", ".join("didx" if a == didx else "serial" for a in range(len(shape)))
    return f"tensor<{dims}x{dtype}, #fusion.parallel<[{kinds}], mesh = [{', '.join(map(str, mesh))}]>>"


def uneven_program(rng: random.Random, devices: int) -> tuple[str, str]:
    """(form, module text) of one random program on a mesh of `devices` devices."""
    form = rng.choice(FORMS)
    mesh = list(range(devices))
    if rng.random() < 0.3:
        rng.shuffle(mesh)  # a mesh in another order than the ranks
    dtype = rng.choice(("f32", "f32", "bf16"))
    rank = rng.randint(2 if form in ("sum_all", "sum_other") else 1, 3)
    axis = rng.randrange(rank)
    shape = [rng.randint(1, 4) for _ in range(rank)]
    # Every extent from 1 to the mesh size (L = D is the even case), then some larger ones.
    extents = [*range(1, devices + 1), devices + 1, 2 * devices, 3 * devices - 1, rng.randint(1, 3 * devices + 1)]
    shape[axis] = max(1, rng.choice(extents))
    sharded = _type(shape, dtype, axis, mesh)
    unary = rng.choice(UNARY)
    lines: list[str] = []
    if form == "gather":
        args = [f"%x: {sharded}"]
        out = _type(shape, dtype, None, mesh)
        lines += [f"%y = fusion.{unary} %x : {sharded} -> {sharded}", f"%z = fusion.set %y : {sharded} -> {out}"]
        result = ("%z", out)
    elif form == "binary_keep":
        args = [f"%x: {sharded}", f"%w: {sharded}"]
        lines += [
            f"%y = fusion.{unary} %x : {sharded} -> {sharded}",
            f"%z = fusion.add %y, %w : {sharded}, {sharded} -> {sharded}",
        ]
        result = ("%z", sharded)
    elif form in ("sum_all", "sum_other"):
        args = [f"%x: {sharded}"]
        dim = axis if form == "sum_all" else rng.choice([a for a in range(rank) if a != axis])
        kept = [e for a, e in enumerate(shape) if a != dim]
        didx = None if form == "sum_all" else axis - (dim < axis)
        out = _type(kept, dtype, didx, mesh)
        lines += [
            f"%y = fusion.{unary} %x : {sharded} -> {sharded}",
            f"%z = fusion.sum %y dims = [{dim}] : {sharded} -> {out}",
        ]
        result = ("%z", out)
    elif form == "scatter":
        whole = _type(shape, dtype, None, mesh)
        args = [f"%x: {whole}"]
        lines += [f"%y = fusion.set %x : {whole} -> {sharded}", f"%z = fusion.{unary} %y : {sharded} -> {sharded}"]
        result = ("%z", sharded)
    else:  # reduce_scatter: partials on every device, summed onto the uneven axis
        # (outermost in memory: a partial sum onto an inner axis is refused for any extent)
        shape[:axis] = [1] * axis
        sharded = _type(shape, dtype, axis, mesh)
        partial_shape = [devices, *shape]
        partial = _type(partial_shape, dtype, 0, mesh)
        args = [f"%p: {partial}"]
        lines += [f"%z = fusion.sum %p dims = [0] : {partial} -> {sharded}"]
        result = ("%z", sharded)
    body = "\n".join(f"  {line}" for line in lines)
    text = (
        f"func.func @main({', '.join(args)}) -> {result[1]} {{\n{body}\n  func.return {result[0]} : {result[1]}\n}}\n"
    )
    return form, text
