"""
A memo for functions of types, keyed by the type's identity.

Types are immutable, and the passes ask the same questions of the same few type objects thousands
of times (the parser and the type helpers hand out one object per distinct type). `lru_cache`
hashes its key on every call, and hashing a type hashes its shape, element type and encoding
again: for a 1000-op module that was a tenth of the compile time. Keyed by `id`, a hit costs one
dict lookup. An entry holds its type, so the id cannot be reused by another object while the
entry exists; an equal type that is a different object gets an entry of its own, with an equal
answer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")


def cache_by_identity(maxsize: int) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """
    Memoizes `fn(t, *rest)` by the identity of `t` and the value of `rest` (small hashables:
    ints, bools, options). The memo is emptied when it holds `maxsize` entries.
    """

    def decorate(fn: Callable[..., R]) -> Callable[..., R]:
        memo: dict[tuple[Any, ...], tuple[object, R]] = {}

        @functools.wraps(fn)
        def cached(t: object, *rest: Any) -> R:
            key = (id(t), *rest)
            hit = memo.get(key)
            if hit is not None:
                return hit[1]
            value = fn(t, *rest)
            if len(memo) >= maxsize:
                memo.clear()
            memo[key] = (t, value)
            return value

        cached.cache_clear = memo.clear  # type: ignore[attr-defined]
        return cached

    return decorate
