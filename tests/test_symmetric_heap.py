"""
The symmetric heap's cache (runtime/distributed.py `SymmetricHeap`): one buffer per allocating op
of a compiled program, keyed by a `BufferKey` that is never reused, and never freed. With
`id(op)` as the key, a program freed on one rank and not yet on another could let the first
rank's next program find a buffer the others do not (the ids of freed ops are reused), so that it
skipped an allocation, a collective, the others made: a hang. A freed buffer's address could be
reused by a new one, whose rendezvous torch may answer from its cache on one rank only.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
import torch
import torch.distributed as dist

from hir.runtime.distributed import ProcessGroupCommunicator
from hir.runtime.hir_ops import BufferKey


@pytest.fixture
def heap() -> Iterator[object]:
    if not dist.is_available() or not dist.is_gloo_available() or dist.is_initialized():
        pytest.skip("needs torch.distributed with gloo, not yet initialized")
    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    communicator = ProcessGroupCommunicator(0, 1)
    yield communicator.symmetric
    communicator.symmetric.close()
    dist.destroy_process_group()


def test_a_key_keeps_its_buffer_and_a_new_key_gets_its_own(heap) -> None:  # type: ignore[no-untyped-def]
    cpu = torch.device("cpu")
    first, second = BufferKey(), BufferKey()
    a = heap.empty(first, (4, 3), torch.float32, cpu)
    assert heap.empty(first, (4, 3), torch.float32, cpu) is a  # every run of the program: the same buffer
    b = heap.empty(second, (4, 3), torch.float32, cpu)
    assert b is not a
    assert b.data_ptr() != a.data_ptr()  # two ops never share a buffer


def test_no_buffer_is_freed_while_the_job_runs(heap) -> None:  # type: ignore[no-untyped-def]
    """A program's buffers outlive it, and a key's buffer of another extent keeps the old one: no address is reused."""
    cpu = torch.device("cpu")
    pointers = set()
    for _ in range(3):  # three programs, each dropped
        key = BufferKey()
        pointers.add(heap.empty(key, (64,), torch.float32, cpu).data_ptr())
        del key
        gc.collect()
    key = BufferKey()
    pointers.add(heap.empty(key, (64,), torch.float32, cpu).data_ptr())
    pointers.add(heap.empty(key, (128,), torch.float32, cpu).data_ptr())  # a dynamic extent
    assert len(pointers) == 5
    assert all(pointer in heap.peers for pointer in pointers)
