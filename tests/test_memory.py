"""
runtime/memory.py: `overlaps` is exact for strided views (interleaved views that share a byte span
do not overlap), sees the same memory through different storages, and never says "no" wrongly,
checked against the sets of bytes each view covers.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import torch

from hir.runtime.memory import Layout, layout_of, layouts_overlap, overlaps, overlaps_itself, storages_apart


def covered_bytes(t: torch.Tensor) -> set[int]:
    """Every byte address `t` covers, by enumeration: the ground truth."""
    item = t.element_size()
    found: set[int] = set()
    for index in itertools.product(*(range(n) for n in t.shape)):
        start = t.data_ptr() + sum(i * s for i, s in zip(index, t.stride())) * item
        found.update(range(start, start + item))
    return found


def truly_overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(covered_bytes(a) & covered_bytes(b))


def check(a: torch.Tensor, b: torch.Tensor, expected: bool) -> None:
    assert truly_overlap(a, b) == expected, "the test's own expectation is wrong"
    assert overlaps(a, b) == expected
    assert overlaps(b, a) == expected


X = torch.arange(24, dtype=torch.float32).reshape(4, 6)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (X[0], X[1], False),  # rows
        (X[1], X[1], True),
        (X[:, 0], X[:, 1], False),  # columns: spans overlap, elements do not
        (X[:, 2], X[1], True),  # a column and a row meet at one element
        (X[:, 5], X[3, :5], False),  # the last column and all but the last element of the last row
        (X.narrow(1, 0, 3), X.narrow(1, 3, 3), False),
        (X.narrow(1, 0, 4), X.narrow(1, 3, 3), True),
        (X.narrow(0, 1, 2)[:, 1:3], X.narrow(0, 2, 2)[:, 3:], False),  # blocks of a matrix
        (X.narrow(0, 1, 2)[:, 1:4], X.narrow(0, 2, 2)[:, 3:], True),
        (X.t()[0], X[:, 1], False),  # transpose: row 0 of X^T is column 0 of X
        (X.t()[0], X[:, 0], True),
        (X.t()[2:4].t(), X[:, 1], False),  # a transposed block
        (X[0:1].expand(5, 6), X[1], False),  # expand: stride 0
        (X[0:1].expand(5, 6), X[0, 3], True),
        (X[:, 0:1].expand(4, 3), X[:, 1], False),
        (X[::2], X[1::2], False),  # interleaved rows
        (X[:, ::2], X[:, 1::2], False),  # interleaved columns
        (X[:, ::3], X[:, 1::3], False),
        (X[:, ::2], X[:, 2::3], True),  # element [*, 2] is in both
        (X.flatten()[1::4], X.flatten()[3::4], False),
        (X.flatten()[1::4], X.flatten()[5::8], True),
        (X.as_strided((3, 4), (2, 1)), X.as_strided((2,), (7,), 12), False),  # sliding windows (rows overlap)
        (X.as_strided((3, 4), (2, 1)), X.as_strided((2,), (7,), 7), True),
        (X.as_strided((2, 3), (5, 2), 1), X.as_strided((2, 3), (5, 2), 7), False),
        (X.as_strided((2, 3), (5, 2), 1), X.as_strided((2, 3), (5, 2), 6), True),
        (X[:0], X, False),  # empty
        (X, torch.zeros(4, 6), False),  # different memory
    ],
)
def test_views(a: torch.Tensor, b: torch.Tensor, expected: bool) -> None:
    check(a, b, expected)


def test_views_of_other_dtypes() -> None:
    """Element sizes differ: halves of float32s as int16, the real and imaginary parts of complex numbers."""
    halves = X.view(torch.int16)
    check(halves[:, ::2], halves[:, 1::2], False)  # low and high halves of every float
    check(halves[:, 1::2], X[:, 3], True)
    check(halves[1, 4:6], X[1, 3], False)  # element 2 of row 1, as halves, against element 3
    check(halves[1, 5:7], X[1, 3], True)  # the high half of element 2 and the low half of element 3
    pairs = torch.view_as_real(torch.zeros(3, 4, dtype=torch.complex64))
    check(pairs[..., 0], pairs[..., 1], False)
    check(pairs[..., 0], torch.view_as_complex(pairs)[2], True)
    as_bytes = X.view(torch.uint8)
    check(as_bytes[0, 3::4], X[0], True)  # the most significant byte of each float
    check(as_bytes[0, 3::4], X[1], False)


def test_same_memory_through_different_storages() -> None:
    """torch.from_numpy of two numpy views of one array: two storages over the same bytes."""
    array = np.zeros((4, 6), dtype=np.float32)
    column0, column1 = torch.from_numpy(array[:, 0]), torch.from_numpy(array[:, 1])
    row1 = torch.from_numpy(array[1])
    assert column0.untyped_storage().data_ptr() != row1.untyped_storage().data_ptr()
    check(column0, column1, False)
    check(row1, torch.from_numpy(array[:, 2]), True)
    check(torch.from_numpy(array[2:]), torch.from_numpy(array[:2]), False)
    check(torch.from_numpy(array[1:3, 1:3]), torch.from_numpy(array[2, 2:]), True)
    # The storages' byte ranges meet, so the quick test leaves the answer to the exact one.
    assert not storages_apart(row1, torch.from_numpy(array[:, 2]))


def test_two_allocations_are_apart_without_the_exact_test() -> None:
    a, b = torch.zeros(4, 8), torch.zeros(4, 8)
    assert storages_apart(a[:, 1::2], b.t())
    assert not storages_apart(a[:, 1::2], a[0])
    assert storages_apart(torch.zeros(0), a)  # no bytes: apart from everything


def test_random_strided_views_against_enumeration() -> None:
    """Random `as_strided` views of one buffer (overlapping strides, stride 0, other dtypes), as ground truth says."""
    rng = random.Random(20261123)
    base = torch.zeros(2048, dtype=torch.uint8)
    dtypes = (torch.uint8, torch.int16, torch.float32, torch.float64)

    def view() -> torch.Tensor:
        typed = base.view(rng.choice(dtypes))
        rank = rng.randint(0, 3)
        shape = [rng.randint(0, 5) for _ in range(rank)]
        strides = [rng.randint(0, 12) for _ in range(rank)]
        return typed.as_strided(shape, strides, rng.randint(0, 40))

    seen = {True: 0, False: 0}
    for _ in range(3000):
        a, b = view(), view()
        expected = truly_overlap(a, b)
        assert overlaps(a, b) == expected, (a.shape, a.stride(), a.storage_offset(), a.dtype, b.shape, b.stride())
        seen[expected] += 1
    assert min(seen.values()) > 200  # both answers were exercised


def test_large_views_are_fast_and_exact() -> None:
    """Millions of elements: no enumeration, the strides decide."""
    big = torch.empty(1024, 2048)
    assert not overlaps(big[:, 0::2], big[:, 1::2])
    assert not overlaps(big[:512], big[512:])
    assert overlaps(big[:, 7], big[100])
    assert not overlaps(big.t()[3], big.t()[4])
    assert overlaps(big[3:5, 100:200].t(), big[4])


def test_out_of_budget_says_overlap() -> None:
    """Past the search budget the answer is "overlap": never a false "no"."""
    base = torch.zeros(4096, dtype=torch.uint8)
    a = base.as_strided((6, 6, 6), (13, 17, 19))
    b = base.as_strided((6,), (34,), 12)
    assert not truly_overlap(a, b)
    assert not overlaps(a, b)
    assert overlaps(a, b, budget=1)


def test_layouts_of_unmoving_axes() -> None:
    """Extent-1 and stride-0 axes move no bytes; the span covers the last element's bytes."""
    t = X[1:2, 2:5].expand(7, 3)
    layout = layout_of(t)
    assert layout.dims == ((3, 4),)
    assert (layout.lo, layout.hi) == (t.data_ptr(), t.data_ptr() + 12)
    empty = Layout(100, 4, (), 100, 100)
    assert not layouts_overlap(empty, layout_of(X))


def truly_overlaps_itself(t: torch.Tensor) -> bool:
    """Two different elements share a byte: by enumerating every element's bytes."""
    item = t.element_size()
    seen: set[int] = set()
    for index in itertools.product(*(range(n) for n in t.shape)):
        start = t.data_ptr() + item * sum(k * s for k, s in zip(index, t.stride()))
        element = set(range(start, start + item))
        if seen & element:
            return True
        seen |= element
    return False


def test_overlaps_itself() -> None:
    base = torch.zeros(64, dtype=torch.float32)
    assert overlaps_itself(torch.zeros(3, 1).expand(3, 4))
    assert not overlaps_itself(torch.zeros(4, 6).t())
    assert not overlaps_itself(torch.zeros(2, 0, 2).expand(2, 0, 2).transpose(0, 2))  # empty: no elements
    assert not overlaps_itself(torch.zeros(0, 1).expand(0, 5))
    assert overlaps_itself(base.as_strided((3, 3), (2, 1)))  # rows of 3 every 2 elements
    rng = random.Random(0)
    for _ in range(300):
        rank = rng.randint(1, 3)
        shape = tuple(rng.randint(0, 4) for _ in range(rank))
        strides = tuple(rng.randint(0, 5) for _ in range(rank))
        view = base.as_strided(shape, strides)
        assert overlaps_itself(view) == truly_overlaps_itself(view), (shape, strides)
