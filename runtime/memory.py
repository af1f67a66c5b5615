"""
Exact memory overlap of strided tensors: whether two views touch a common byte.

`overlaps(a, b)` compares the memory itself, by addresses, not storages: two tensors over the same
bytes from different storages (`torch.from_numpy` of two numpy views of one array) overlap, and
two interleaved views of one storage (`x[:, 0]` and `x[:, 1]`, `x[::2]` and `x[1::2]`) do not,
although their byte spans do. Memory mapped twice at two addresses of one process is not seen as
shared (no such mapping is made by the runtime).

The question is integer feasibility: element `k` of a view starts at byte
`start + sum(k_i * stride_i)` (0 <= k_i < extent_i) and covers `itemsize` bytes, so the views
share a byte when some combination of both index vectors lands in a small interval. In general
this is a bounded subset-sum problem (NP-complete); `layouts_overlap` solves it exactly by
branch and bound over the axes, largest stride first, after cheap reductions:

- empty views, views whose byte spans are disjoint: no overlap, O(rank);
- extent-1 and stride-0 (expanded) axes move no bytes and are dropped; axes of equal stride are
  merged (their indices add up), and so are axes whose strides nest exactly (stride of one =
  stride * extent of the other: a contiguous run), so a contiguous block, a row, a column, a
  chunk become one or two axes;
- a gcd test: all strides and the offset share a factor, or no solution exists;
- the search: when every stride exceeds the span of the smaller ones (any layout torch makes from
  a contiguous tensor by view ops: select, narrow, slicing with steps, transpose, expand), at
  most two indices per axis survive the bounds, so it costs O(rank^2) steps. Other layouts
  (`as_strided` with strides smaller than the inner axes' span) may need more; past `budget`
  search nodes (default 100,000, a few tens of ms) the answer is "overlap", never a false "no".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

DEFAULT_BUDGET = 100_000


@dataclass(frozen=True)
class Layout:
    """The bytes a strided tensor covers, in the process's address space."""

    start: int
    """Address of element [0, ..., 0]."""
    itemsize: int
    dims: tuple[tuple[int, int], ...]
    """(extent, byte stride) of the axes that move: extent > 1 and stride != 0."""
    lo: int
    hi: int
    """[lo, hi): the smallest byte range that holds every element; empty when lo == hi."""


def layout_of(t: torch.Tensor) -> Layout:
    item = t.element_size()
    start = t.data_ptr()
    if t.numel() == 0:
        return Layout(start, item, (), start, start)
    dims = tuple((n, s * item) for n, s in zip(t.shape, t.stride()) if n > 1 and s != 0)
    lo = start + sum(min(0, (n - 1) * s) for n, s in dims)
    hi = start + sum(max(0, (n - 1) * s) for n, s in dims) + item
    return Layout(start, item, dims, lo, hi)


def overlaps(a: torch.Tensor, b: torch.Tensor, budget: int = DEFAULT_BUDGET) -> bool:
    """Whether `a` and `b` share any byte of memory (exact; see the module docstring for the cost)."""
    if storages_apart(a, b):
        return False
    return layouts_overlap(layout_of(a), layout_of(b), budget)


def storages_apart(a: torch.Tensor, b: torch.Tensor) -> bool:
    """
    The cheapest test: whether the byte ranges of the two storages are disjoint (then no view of
    one can share a byte with a view of the other); tensors of two allocations always are.
    """
    return not ranges_meet(storage_range(a), storage_range(b))


def storage_range(t: torch.Tensor) -> tuple[int, int]:
    """The byte range [start, end) of the storage `t` views."""
    storage = t.untyped_storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def ranges_meet(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def overlaps_itself(t: torch.Tensor, budget: int = DEFAULT_BUDGET) -> bool:
    """
    Whether two different elements of `t` share a byte: an expanded (stride-0) view, or an
    `as_strided` view whose strides make elements meet. Exact, with the same search as `overlaps`
    (past `budget` nodes the answer is "overlap").
    """
    if t.numel() == 0:  # no elements: none can meet another, whatever the strides of the other axes
        return False
    if any(n > 1 and s == 0 for n, s in zip(t.shape, t.stride())):
        return True
    layout = layout_of(t)
    dims = sorted(((n, abs(s)) for n, s in layout.dims), key=lambda d: d[1])
    reach = layout.itemsize  # the bytes one element and the axes of smaller stride cover
    for n, s in dims:
        if s < reach:
            break
        reach += (n - 1) * s
    else:
        return False  # each stride passes what the smaller axes reach: the common, cheap case
    # Elements k != l meet when, for the first axis j (in `dims` order) where they differ, with
    # k_j > l_j: d_j = k_j - l_j is in [1, n_j - 1], d_i = 0 on the axes before j, d_i is in
    # [-(n_i - 1), n_i - 1] on the axes after it, and |sum(d_i * s_i)| < itemsize. Each d is an
    # index range shifted by a constant, which moves the interval.
    limit = layout.itemsize - 1
    for j, (n_j, s_j) in enumerate(dims):
        later = dims[j + 1 :]
        shift = s_j - sum((n - 1) * s for n, s in later)
        terms = [(s_j, n_j - 2)] + [(s, 2 * (n - 1)) for n, s in later]
        if _sum_hits_interval(terms, -limit - shift, limit - shift, budget):
            return True
    return False


def spans_overlap(a: Layout, b: Layout) -> bool:
    """The cheap first test: whether the byte spans intersect (necessary, not sufficient)."""
    return a.lo < b.hi and b.lo < a.hi and a.lo < a.hi and b.lo < b.hi


def layouts_overlap(a: Layout, b: Layout, budget: int = DEFAULT_BUDGET) -> bool:
    """Whether two layouts share a byte: `spans_overlap`, then the exact test."""
    if not spans_overlap(a, b):
        return False
    # Bytes [x, x + a.itemsize) and [y, y + b.itemsize) meet iff x - y lies in
    # [-(a.itemsize - 1), b.itemsize - 1], with x - y = a.start - b.start + sum(k * sa) - sum(l * sb).
    lo = b.start - a.start - (a.itemsize - 1)
    hi = b.start - a.start + (b.itemsize - 1)
    terms: list[tuple[int, int]] = [(s, n - 1) for n, s in a.dims] + [(-s, n - 1) for n, s in b.dims]
    return _sum_hits_interval(terms, lo, hi, budget)


def _sum_hits_interval(terms: list[tuple[int, int]], lo: int, hi: int, budget: int) -> bool:
    """Whether sum(c * k) for 0 <= k <= count, over the (c, count) terms, can lie in [lo, hi]."""
    positive: list[tuple[int, int]] = []
    for c, count in terms:
        if c < 0:  # c * k = c * count + |c| * (count - k): shift the interval, flip the index
            lo, hi = lo - c * count, hi - c * count
            c = -c
        if c != 0 and count > 0:
            positive.append((c, count))
    merged = _merge(positive)
    if not merged:
        return lo <= 0 <= hi
    g = 0
    for c, _ in merged:
        g = math.gcd(g, c)
    lo, hi = -((-lo) // g), hi // g  # the sum is a multiple of g: shrink to the multiples in [lo, hi]
    if lo > hi:
        return False
    merged = sorted(((c // g, count) for c, count in merged), reverse=True)
    reach = [0] * (len(merged) + 1)  # reach[i]: the largest sum of the terms from i on
    for i in range(len(merged) - 1, -1, -1):
        reach[i] = reach[i + 1] + merged[i][0] * merged[i][1]
    search = _Search(merged, reach, budget)
    try:
        return search.hits(0, lo, hi)
    except _OutOfBudget:
        return True  # unknown: say "overlap", never a false "no"


def _merge(terms: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Equal strides add their counts; strides that nest exactly (c2 == c1 * (count1 + 1)) become one axis."""
    by_stride: dict[int, int] = {}
    for c, count in terms:
        by_stride[c] = by_stride.get(c, 0) + count
    changed = True
    while changed:
        changed = False
        for c in sorted(by_stride):
            count = by_stride.get(c)
            if count is None:
                continue
            outer = c * (count + 1)
            if outer in by_stride:  # k1 + (count + 1) * k2 covers 0 .. (count + 1) * (count2 + 1) - 1
                outer_count = by_stride.pop(outer)
                by_stride[c] = (count + 1) * (outer_count + 1) - 1
                changed = True
    return list(by_stride.items())


class _OutOfBudget(Exception):
    pass


class _Search:
    """Branch and bound over the terms, largest stride first; each level's index range is cut by the bounds."""

    def __init__(self, terms: list[tuple[int, int]], reach: list[int], budget: int):
        self.terms, self.reach, self.budget = terms, reach, budget

    def hits(self, i: int, lo: int, hi: int) -> bool:
        self.budget -= 1
        if self.budget < 0:
            raise _OutOfBudget
        rest = self.reach[i + 1]
        c, count = self.terms[i]
        # k * c + (a sum in [0, rest]) must meet [lo, hi]
        first = max(0, -((rest - lo) // c))  # ceil((lo - rest) / c)
        last = min(count, hi // c)
        if first > last:
            return False
        if i + 1 == len(self.terms):
            return True  # rest == 0: any k in [first, last] has k * c in [lo, hi]
        if lo <= 0 <= hi:
            return True  # every remaining index 0
        return any(self.hits(i + 1, lo - k * c, hi - k * c) for k in range(first, last + 1))
