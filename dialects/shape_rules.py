"""
Shape rules and axis mappings of the fusion ops, on plain tuples (`-1` is a dynamic extent `?`).

An *axis map* says, for each result axis, which operand axes it comes from, as
`(operand index, operand axis)` pairs. A source of extent 1 under a larger result extent is a
broadcast (matmul batch axes): a loop over the result axis reads its index 0. Passes use only
this to decide which operand axis a stream loop slices; an operand axis that no result axis maps
to (a reduced or contracted axis) is never sliced, and an operand with no mapped axis is passed
whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.utils.exceptions import VerifyException

Shape = tuple[int, ...]
AxisSources = tuple[tuple[int, int], ...]
AxisMap = tuple[AxisSources, ...]


def fmt(shape: Sequence[int]) -> str:
    return "x".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) or "scalar"


def extents_match(a: int, b: int) -> bool:
    return a == DYNAMIC_INDEX or b == DYNAMIC_INDEX or a == b


def shapes_match(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(extents_match(x, y) for x, y in zip(a, b))


def elementwise_map(rank: int, num_operands: int) -> AxisMap:
    return tuple(tuple((k, i) for k in range(num_operands)) for i in range(rank))


def reduce_shape(shape: Shape, dims: Sequence[int]) -> Shape:
    return tuple(d for i, d in enumerate(shape) if i not in dims)


def reduce_map(rank: int, dims: Sequence[int]) -> AxisMap:
    return tuple(((0, i),) for i in range(rank) if i not in dims)


def broadcast_map(result_rank: int, dims: Sequence[int]) -> AxisMap:
    """`dims` are the new axes of the result; the others come from the operand, in order."""
    sources: list[AxisSources] = []
    operand_axis = 0
    for i in range(result_rank):
        if i in dims:
            sources.append(())
        else:
            sources.append(((0, operand_axis),))
            operand_axis += 1
    return tuple(sources)


def permute_map(perm: Sequence[int]) -> AxisMap:
    return tuple(((0, p),) for p in perm)


def check_dims(dims: Sequence[int], rank: int, what: str) -> None:
    if len(set(dims)) != len(dims):
        raise VerifyException(f"{what} {list(dims)} has duplicates")
    for d in dims:
        if not 0 <= d < rank:
            raise VerifyException(f"{what} entry {d} is out of range for rank {rank}")


def _broadcast_extent(a: int, b: int) -> int:
    if a == 1:
        return b
    if b == 1:
        return a
    if a == DYNAMIC_INDEX:
        return b
    if b == DYNAMIC_INDEX or a == b:
        return a
    raise VerifyException(f"batch extents {a} and {b} do not broadcast")


def matmul_rule(a: Shape, b: Shape) -> tuple[Shape, AxisMap]:
    """`torch.matmul` semantics: 1-D promotion and batch broadcasting."""
    ra, rb = len(a), len(b)
    if ra == 0 or rb == 0:
        raise VerifyException("matmul operands must have rank >= 1")
    k_a = a[-1]
    k_b = b[0] if rb == 1 else b[-2]
    if not extents_match(k_a, k_b):
        raise VerifyException(f"matmul contraction extents differ: {fmt(a)} and {fmt(b)}")
    if ra == 1 and rb == 1:
        return (), ()
    if rb == 1:
        return a[:-1], tuple(((0, i),) for i in range(ra - 1))
    if ra == 1:
        shape = (*b[:-2], b[-1])
        return shape, (*tuple(((1, i),) for i in range(rb - 2)), ((1, rb - 1),))
    batch_a, batch_b = a[:-2], b[:-2]
    nb = max(len(batch_a), len(batch_b))
    batch: list[int] = []
    sources: list[AxisSources] = []
    for j in range(nb):
        ja, jb = j - (nb - len(batch_a)), j - (nb - len(batch_b))
        ea = batch_a[ja] if ja >= 0 else 1
        eb = batch_b[jb] if jb >= 0 else 1
        extent = _broadcast_extent(ea, eb)
        batch.append(extent)
        # A broadcast (extent-1) batch axis is still a source: slicing it means index 0.
        src: list[tuple[int, int]] = []
        if ja >= 0:
            src.append((0, ja))
        if jb >= 0:
            src.append((1, jb))
        sources.append(tuple(src))
    shape = (*batch, a[-2], b[-1])
    return shape, (*sources, ((0, ra - 2),), ((1, rb - 1),))


def linear_rule(x: Shape, w: Shape, bias: Shape | None) -> tuple[Shape, AxisMap]:
    """`torch.nn.functional.linear`: x[..., K], w[N, K] (or w[K]), bias[N] (or a scalar)."""
    if len(x) == 0:
        raise VerifyException("linear input must have rank >= 1")
    if len(w) not in (1, 2):
        raise VerifyException(f"linear weight must have rank 1 or 2, got {fmt(w)}")
    if not extents_match(x[-1], w[-1]):
        raise VerifyException(f"linear contraction extents differ: input {fmt(x)}, weight {fmt(w)}")
    batch_map = tuple(((0, i),) for i in range(len(x) - 1))
    if len(w) == 1:
        if bias is not None and len(bias) != 0:
            raise VerifyException("linear with a 1-D weight takes a scalar bias")
        return x[:-1], batch_map
    n_sources: list[tuple[int, int]] = [(1, 0)]
    if bias is not None:
        if len(bias) > 1 or (len(bias) == 1 and not extents_match(bias[0], w[0])):
            raise VerifyException(f"linear bias must be a scalar or have shape {fmt(w[:1])}, got {fmt(bias)}")
        if len(bias) == 1:
            n_sources.append((2, 0))
    return (*x[:-1], w[0]), (*batch_map, tuple(n_sources))


def operand_axis_to_result_axis(axis_map: AxisMap, operand: int, axis: int) -> int | None:
    """The result axis an operand axis maps to, or None (reduced, contracted or broadcast away)."""
    for r, sources in enumerate(axis_map):
        if (operand, axis) in sources:
            return r
    return None
