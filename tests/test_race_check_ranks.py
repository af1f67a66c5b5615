"""The clock exchange of the race checker's `hir.barrier` across ranks (runtime/race_check_ranks.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch.distributed as dist

from hir.runtime.race_check_ranks import CLOCK_PAIRS, gather_clocks


@pytest.fixture
def one_process_group() -> Iterator[None]:
    if not dist.is_available() or not dist.is_gloo_available() or dist.is_initialized():
        pytest.skip("needs torch.distributed with gloo, not yet initialized")
    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("streams", [0, 1, 5, CLOCK_PAIRS, CLOCK_PAIRS + 1, 3 * CLOCK_PAIRS])
def test_a_clock_comes_back_whole(one_process_group: None, streams: int) -> None:
    """Short clocks travel in the tensor, longer ones through all_gather_object: every entry arrives."""
    clock = {7 * k + 3: 1000 * k + 1 for k in range(streams)}  # ids and epochs of any size
    assert gather_clocks(clock, dist.group.WORLD) == [clock]
