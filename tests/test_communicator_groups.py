"""
The communicator's process groups for meshes in any device order, without a job: one group per
set of devices, the mesh-order permutation of a group's ranks, and the refusal of a mesh with
more devices than the job has processes.
"""

from __future__ import annotations

import pytest

from hir.diagnostics import UserError
from hir.runtime.distributed import ProcessGroupCommunicator, group_order, in_mesh_order


@pytest.mark.parametrize(
    ("mesh", "order"),
    [((0, 1), None), ((1, 0), (1, 0)), ((3, 1, 0, 2), (3, 1, 0, 2)), ((2, 0, 3, 1), (2, 0, 3, 1)), ((5, 2), (1, 0))],
)
def test_group_order_is_each_mesh_positions_group_rank(mesh: tuple[int, ...], order: tuple[int, ...] | None) -> None:
    assert group_order(mesh) == order


def test_parts_in_group_order_come_back_in_mesh_order() -> None:
    # all_gather lists the parts of devices 0, 1, 2, 3 (ascending); the mesh lists 3, 1, 0, 2.
    parts = ["from 0", "from 1", "from 2", "from 3"]
    assert in_mesh_order(parts, (3, 1, 0, 2)) == ["from 3", "from 1", "from 0", "from 2"]
    assert in_mesh_order(parts, (0, 1, 2, 3)) is parts


def test_meshes_of_the_same_devices_share_one_group() -> None:
    communicator = ProcessGroupCommunicator(rank=0, world_size=2)
    communicator.prepare([(1, 0), (0, 1)])  # both are the whole job: the world group, no new one
    assert list(communicator.groups) == [(0, 1)]
    assert communicator.prepared_group((1, 0)) is communicator.prepared_group((0, 1))
    assert communicator.prepared_group((0, 2)) is None


def test_a_mesh_beyond_the_job_is_refused() -> None:
    communicator = ProcessGroupCommunicator(rank=0, world_size=2)
    with pytest.raises(UserError, match=r"mesh \[0, 2\] needs 3 processes, the job has 2"):
        communicator.prepare([(2, 0)])
