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

import math
from collections.abc import Sequence
from dataclasses import dataclass

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


def generated_map(rank: int) -> AxisMap:
    """An op without operands (a constant): every result axis is made, not read."""
    return tuple(() for _ in range(rank))


def normalize_map(rank: int, num_operands: int, dims: Sequence[int]) -> AxisMap:
    """
    Softmax and norms: a result axis outside `dims` is operand 0's axis; the axes in `dims` map to
    nothing, since every result element there reads the whole operand axis (a loop cannot slice
    it). Further operands (weight, bias) cover only `dims`, so they are read whole.
    """
    del num_operands  # weight and bias have no axis outside `dims`
    return tuple(() if i in dims else ((0, i),) for i in range(rank))


def check_trailing_dims(dims: Sequence[int], rank: int, what: str) -> None:
    """`dims` are the last len(dims) axes, in order (torch's normalized_shape)."""
    if not dims or list(dims) != list(range(rank - len(dims), rank)):
        raise VerifyException(f"{what} {list(dims)} must be the trailing axes of the rank-{rank} operand, in order")


ReshapeGroup = tuple[tuple[int, ...], tuple[int, ...]]


def reshape_groups(src: Shape, dst: Shape) -> list[ReshapeGroup]:
    """
    The minimal groups of consecutive axes of `src` and `dst` with equal products (row-major
    reshape), extent-1 axes left out (they belong to no group). A dynamic extent must form a group
    of its own with a dynamic extent on the other side: the verifier cannot tell how it splits.
    """
    if 0 in src or 0 in dst:
        if DYNAMIC_INDEX in src or DYNAMIC_INDEX in dst or 0 not in src or 0 not in dst:
            raise VerifyException(f"cannot reshape {fmt(src)} to {fmt(dst)}: the element counts differ")
        return []
    s = [a for a, e in enumerate(src) if e != 1]
    d = [b for b, e in enumerate(dst) if e != 1]
    groups: list[ReshapeGroup] = []
    i = j = 0
    while i < len(s) and j < len(d):
        a, b = s[i], d[j]
        i, j = i + 1, j + 1
        if DYNAMIC_INDEX in (src[a], dst[b]):
            if src[a] != dst[b]:
                raise VerifyException(
                    f"cannot reshape {fmt(src)} to {fmt(dst)}: a dynamic extent must stay one axis of its own"
                )
            groups.append(((a,), (b,)))
            continue
        group_a, group_b, product_a, product_b = [a], [b], src[a], dst[b]
        while product_a != product_b:  # grow the side with the smaller product by its next axis
            if product_a < product_b and i < len(s) and src[s[i]] != DYNAMIC_INDEX:
                group_a.append(s[i])
                product_a, i = product_a * src[s[i]], i + 1
            elif product_b < product_a and j < len(d) and dst[d[j]] != DYNAMIC_INDEX:
                group_b.append(d[j])
                product_b, j = product_b * dst[d[j]], j + 1
            else:
                raise _unmatched(src, dst, [src[k] for k in s[i : i + 1]] + [dst[k] for k in d[j : j + 1]])
        groups.append((tuple(group_a), tuple(group_b)))
    if i < len(s) or j < len(d):
        raise _unmatched(src, dst, [src[k] for k in s[i:]] + [dst[k] for k in d[j:]])
    return groups


def _unmatched(src: Shape, dst: Shape, next_extents: list[int]) -> VerifyException:
    """The error for axes left without a partner: a `?` among them is why, else the counts differ."""
    if DYNAMIC_INDEX in next_extents:  # `?x?x? -> ?x?`: the element counts may well agree
        return VerifyException(
            f"cannot reshape {fmt(src)} to {fmt(dst)}: a dynamic extent must stay one axis of its own, "
            "facing a dynamic extent on the other side"
        )
    return VerifyException(f"cannot reshape {fmt(src)} to {fmt(dst)}: the element counts differ")


def reshape_map(src: Shape, dst: Shape) -> AxisMap:
    """
    A result axis maps to an operand axis only when the two form a group of their own (an axis the
    reshape keeps): then result[.., i, ..] is the reshape of operand[.., i, ..]. A merged axis
    (6 = 2x3) or one part of a split axis iterates the operand in strides that no single operand
    axis walks, so it maps to nothing and a stream loop cannot slice it.
    """
    sources: list[AxisSources] = [() for _ in dst]
    groups = reshape_groups(src, dst)
    for group_a, group_b in groups:
        if len(group_a) == 1 and len(group_b) == 1:
            sources[group_b[0]] = ((0, group_a[0]),)
    for a, b in _unit_pairs(src, dst, groups):
        sources[b] = ((0, a),)
    return tuple(sources)


def _unit_pairs(src: Shape, dst: Shape, groups: list[ReshapeGroup]) -> list[tuple[int, int]]:
    """
    Extent-1 axes of `src` and `dst` that lie between the same two groups, paired from the group
    after them backwards: a slice of one such axis is the whole tensor, so any pairing commutes
    with the reshape. Pairing them keeps a didx axis of a one-device mesh (or a stream of one
    chunk) through a view that adds or drops other unit axes, as the same view keeps it on more
    devices, where the axis is a group of its own.
    """
    if 0 in src or 0 in dst:  # empty tensors reshape freely: no axis maps
        return []

    def gaps(shape: Shape, side: int) -> dict[int, list[int]]:
        firsts = [group[side][0] for group in groups]
        by_gap: dict[int, list[int]] = {}
        for axis, extent in enumerate(shape):
            if extent == 1:
                by_gap.setdefault(sum(first < axis for first in firsts), []).append(axis)
        return by_gap

    src_gaps, dst_gaps = gaps(src, 0), gaps(dst, 1)
    return [pair for gap, units in src_gaps.items() for pair in zip(reversed(units), reversed(dst_gaps.get(gap, [])))]


@dataclass(frozen=True)
class Slicing:
    """
    What iteration i of a stream loop takes of a value. `chunks` None: index i of `axes`, which
    are consecutive axes read as one row-major index (one axis but behind a merging reshape), so
    the iteration's tensor lacks them. `chunks` N: chunk i of N along the one axis of `axes`
    (ceil(extent/N) elements), which the iteration's tensor keeps.
    """

    axes: tuple[int, ...]
    chunks: int | None = None

    @property
    def axis(self) -> int:
        """The outermost axis taken."""
        return self.axes[0]

    def describe(self) -> str:
        if self.chunks is not None:
            return f"chunks of {self.chunks} along axis {self.axis}"
        if len(self.axes) == 1:
            return f"axis {self.axis}"
        return f"axes {self.axes[0]}..{self.axes[-1]} as one index"


class SlicingError(Exception):
    """A loop cannot take one slice of an op's operand for one slice of its result; the message says why."""


def reshape_slicing(src: Shape, dst: Shape, result: Slicing) -> Slicing | None:
    """
    The slice of a reshape's operand that iteration i needs for its slice `result` of the result,
    when the iterated axes are split or merged by the reshape (None: an axis the reshape keeps,
    or one outside every group, which the axis map handles).

    Row-major, the iterated result axes take the leading factors of their group (`reshape_groups`)
    in P pieces (P: the product of their extents, or the chunk count N): piece i of the group's
    elements. On the operand side that is one slice when the leading operand axes of the group
    multiply to P (index i of them as one index) or when P divides the outermost one (chunk i of
    P along it). An inner factor of a split, or a chunk that cuts the operand's rows, is refused.
    """
    if not result.axes:
        return None
    group = next(((a, b) for a, b in reshape_groups(src, dst) if result.axis in b), None)
    if group is None:
        return None
    group_a, group_b = group
    if len(group_a) == 1 and len(group_b) == 1 and len(result.axes) == 1:
        return None  # an axis the reshape keeps
    how = "splits" if len(group_a) == 1 else "merges" if len(group_b) == 1 else "regroups"
    change = (
        f"the reshape {how} operand axes {list(group_a)} ({fmt([src[a] for a in group_a])}) into result axes "
        f"{list(group_b)} ({fmt([dst[b] for b in group_b])})"
    )
    kind = "stream" if result.chunks is None else f"stream({result.chunks})"
    named = f"{kind} axis {result.axis}" if len(result.axes) == 1 else f"stream axes {list(result.axes)}"
    leading = group_b[: len(result.axes)]
    if result.axes != leading:
        raise SlicingError(
            f"{change}, and its {named} is an inner factor: each iteration's slice is strided in the operand; "
            f"stream result axis {group_b[0]} (the outer factor) instead"
        )
    if result.chunks is None:
        pieces = math.prod(dst[b] for b in result.axes)
    else:
        pieces = result.chunks
        if dst[result.axis] % pieces:
            raise SlicingError(f"{change}, and its {named} needs {pieces} chunks to divide {dst[result.axis]}")
    product = 1
    for k, a in enumerate(group_a):
        product *= src[a]
        if product == pieces and (result.chunks is None or k > 0):
            return Slicing(group_a[: k + 1])
        if product >= pieces:
            break
    if src[group_a[0]] % pieces == 0:
        return Slicing((group_a[0],), pieces)
    raise SlicingError(
        f"{change}, and the {pieces} slices of its {named} cut operand axis {group_a[0]} "
        f"(extent {src[group_a[0]]}) into pieces that are not whole rows: use a stream(N) whose N divides "
        f"{src[group_a[0]]}"
    )


def slice_rule(src: Shape, offsets: Sequence[int], strides: Sequence[int], dst: Shape) -> AxisMap:
    """
    `x[o0 : o0 + n0*s0 : s0, ...]` with `n` the result's extents. An axis the slice keeps whole
    (offset 0, stride 1, the full extent) maps to the operand's; a sliced axis maps to nothing
    (result index i reads operand index o + i*s, which a loop slicing both at i does not).
    """
    rank = len(src)
    if len(offsets) != rank or len(strides) != rank or len(dst) != rank:
        raise VerifyException(
            f"slice of a rank-{rank} operand needs {rank} offsets, strides and result extents, got "
            f"{len(offsets)}, {len(strides)} and {len(dst)}"
        )
    sources: list[AxisSources] = []
    for k, (extent, offset, stride, size) in enumerate(zip(src, offsets, strides, dst)):
        if offset < 0 or stride < 1:
            raise VerifyException(f"slice axis {k}: offset {offset} must be >= 0 and stride {stride} >= 1")
        kept = offset == 0 and stride == 1 and size == extent
        if DYNAMIC_INDEX in (extent, size) and not kept:
            raise VerifyException(
                f"slice axis {k}: an axis of dynamic extent can only be kept whole (offset 0, stride 1, "
                f"? to ?), got {fmt([extent])} to {fmt([size])} from {offset} by {stride}"
            )
        if not kept and (offset > extent or (size > 0 and offset + (size - 1) * stride >= extent)):
            raise VerifyException(
                f"slice axis {k}: {size} elements from offset {offset} with stride {stride} overrun extent {extent}"
            )
        sources.append(((0, k),) if kept else ())
    return tuple(sources)


def concat_rule(shapes: Sequence[Shape], dim: int) -> tuple[Shape, AxisMap]:
    """
    `torch.cat(xs, dim)`: equal ranks, equal extents off `dim`, the extents along `dim` add up.
    Axes off `dim` map to every operand's; `dim` maps to nothing (result index i comes from one
    operand or another depending on i).
    """
    if not shapes:
        raise VerifyException("concat needs at least one operand")
    rank = len(shapes[0])
    if not 0 <= dim < rank:
        raise VerifyException(f"concat dim {dim} is out of range for rank {rank}")
    shape = list(shapes[0])
    for k, other in enumerate(shapes[1:], 1):
        if len(other) != rank:
            raise VerifyException(f"concat operand #{k} has rank {len(other)}, operand #0 rank {rank}")
        for a, extent in enumerate(other):
            if a == dim:
                shape[a] = DYNAMIC_INDEX if DYNAMIC_INDEX in (shape[a], extent) else shape[a] + extent
            elif not extents_match(shape[a], extent):
                raise VerifyException(
                    f"concat operand #{k} has shape {fmt(other)}, operand #0 {fmt(shapes[0])}: "
                    f"they differ off the concat dim {dim}"
                )
            elif shape[a] == DYNAMIC_INDEX:
                shape[a] = extent
    axis_map = tuple(() if a == dim else tuple((k, a) for k in range(len(shapes))) for a in range(rank))
    return tuple(shape), axis_map


def operand_axis_to_result_axis(axis_map: AxisMap, operand: int, axis: int) -> int | None:
    """The result axis an operand axis maps to, or None (reduced, contracted or broadcast away)."""
    for r, sources in enumerate(axis_map):
        if (operand, axis) in sources:
            return r
    return None
