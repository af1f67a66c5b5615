"""
The symmetric heap's cache (runtime/distributed.py `SymmetricHeap`): one buffer per allocating op
of a live program, keyed by a `BufferKey` that is never reused. With `id(op)` as the key, a
program freed on one rank and not yet on another could let the first rank's next program find a
buffer the others do not (the ids of freed ops are reused), so that it skipped an allocation, a
collective, the others made: a hang (a TP layer's training benchmark, one size after another).
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
    assert b.data_ptr() != a.data_ptr()


def test_a_programs_buffers_go_with_it(heap) -> None:  # type: ignore[no-untyped-def]
    key = BufferKey()
    buffer = heap.empty(key, (8,), torch.float32, torch.device("cpu"))
    pointer = buffer.data_ptr()
    assert pointer in heap.peers
    del key, buffer
    gc.collect()
    assert len(heap.buffers) == 0
    assert pointer not in heap.peers  # nothing maps the freed memory any more
