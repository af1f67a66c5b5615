"""
What the runtime asks of the other devices of a multi-device run: the `Communicator` protocol,
one method per hir communication op and per symmetric-memory op. `runtime/distributed.py`
implements it over torch.distributed process groups; another transport implements the same
methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch

Mesh = tuple[int, ...]
"""Device ids (global ranks), in the order of a `mesh = [...]` property."""


class Work(Protocol):
    """A communication in flight, as `hir.wait` waits for it."""

    def wait(self) -> None:
        """The current stream waits for the communication (the host does not block on a GPU)."""
        ...


class Communicator(Protocol):
    """
    Collectives and P2P transfers among the devices of a mesh, enqueued on the current stream.
    Each returns the pending `Work`, or None when this device is not in the mesh (it takes no
    part, and its buffers are not meaningful). Reductions are "sum", "max" or "min"; `root` and
    `peer` are positions in the mesh.
    """

    def allgather(self, input: torch.Tensor, output: torch.Tensor, axis: int, mesh: Mesh) -> Work | None:
        """`output` = the `input`s of all mesh devices, concatenated along `axis` in mesh order."""
        ...

    def allreduce(self, input: torch.Tensor, output: torch.Tensor, kind: str, mesh: Mesh) -> Work | None:
        """`output` = the reduction of the `input`s of all mesh devices (may be the same buffer)."""
        ...

    def reduce_scatter(
        self, input: torch.Tensor, output: torch.Tensor, axis: int, kind: str, mesh: Mesh
    ) -> Work | None:
        """Reduces the `input`s; mesh position k gets chunk k along `axis` in `output`."""
        ...

    def broadcast(self, input: torch.Tensor, output: torch.Tensor, root: int, mesh: Mesh) -> Work | None:
        """Every mesh device's `output` receives the `input` of mesh position `root`."""
        ...

    def reduce(self, input: torch.Tensor, output: torch.Tensor, root: int, kind: str, mesh: Mesh) -> Work | None:
        """The reduction of the `input`s into the `output` of mesh position `root`; other devices'
        `output`s and every `input` (unless it is the root's `output`) are left as they are."""
        ...

    def all_to_all(
        self, input: torch.Tensor, output: torch.Tensor, split_axis: int, concat_axis: int, mesh: Mesh
    ) -> Work | None:
        """Chunk k of `input` along `split_axis` goes to mesh position k; `output` holds the received
        chunks along `concat_axis`, in mesh order."""
        ...

    def collective_permute(self, send: torch.Tensor, recv: torch.Tensor, offset: int, mesh: Mesh) -> Work | None:
        """Sends `send` to mesh position (p + offset) mod D and receives into `recv` from (p - offset) mod D,
        where p is this device's position and D the mesh size."""
        ...

    def send(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work | None: ...

    def recv(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work | None: ...

    def position_in(self, mesh: Mesh) -> int | None:
        """This device's position in `mesh` (`hir.device_index`), None on a device outside it."""
        ...

    def empty_symmetric(
        self, key: object, shape: Sequence[int], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        """A buffer every device allocates alike (`hir.allocate symmetric`), cached per `key`."""
        ...

    def peer_view(self, buffer: torch.Tensor, device_id: int) -> torch.Tensor:
        """Device `device_id`'s copy of a symmetric buffer, mapped here (`hir.peer_view`)."""
        ...

    def barrier(self, mesh: Mesh) -> None:
        """Every device of `mesh` reaches this point of its current stream before any goes on."""
        ...


class OneDevice:
    """
    The collectives of a mesh of one device where there is no communicator (a program run by one
    process, without torch.distributed): they move nothing between devices, so each is a copy of
    its input into its output on the current stream (nothing when they are the same buffer), done
    when the step returns, and its `hir.wait` waits for nothing. A send or a receive has no peer on
    such a mesh. `Program` refuses a program that communicates over more devices before it runs.
    """

    @staticmethod
    def _copy(input: torch.Tensor, output: torch.Tensor, what: str) -> None:
        if input.shape != output.shape:
            raise ValueError(
                f"{what} over a mesh of one device copies its input, but the buffers' shapes differ: "
                f"{tuple(input.shape)} and {tuple(output.shape)}"
            )
        same = input.data_ptr() == output.data_ptr() and input.stride() == output.stride()
        if not same or input.dtype != output.dtype:
            output.copy_(input)

    def allgather(self, input: torch.Tensor, output: torch.Tensor, axis: int, mesh: Mesh) -> Work | None:
        self._copy(input, output, "hir.allgather")
        return None

    def allreduce(self, input: torch.Tensor, output: torch.Tensor, kind: str, mesh: Mesh) -> Work | None:
        self._copy(input, output, "hir.allreduce")
        return None

    def reduce_scatter(
        self, input: torch.Tensor, output: torch.Tensor, axis: int, kind: str, mesh: Mesh
    ) -> Work | None:
        self._copy(input, output, "hir.reduce_scatter")
        return None

    def broadcast(self, input: torch.Tensor, output: torch.Tensor, root: int, mesh: Mesh) -> Work | None:
        self._copy(input, output, "hir.broadcast")
        return None

    def reduce(self, input: torch.Tensor, output: torch.Tensor, root: int, kind: str, mesh: Mesh) -> Work | None:
        self._copy(input, output, "hir.reduce")
        return None

    def all_to_all(
        self, input: torch.Tensor, output: torch.Tensor, split_axis: int, concat_axis: int, mesh: Mesh
    ) -> Work | None:
        self._copy(input, output, "hir.all_to_all")
        return None

    def collective_permute(self, send: torch.Tensor, recv: torch.Tensor, offset: int, mesh: Mesh) -> Work | None:
        self._copy(send, recv, "hir.collective_permute")
        return None

    def send(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work | None:
        raise ValueError(f"hir.send over mesh {list(mesh)}: a mesh of one device has no peer to send to")

    def recv(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work | None:
        raise ValueError(f"hir.recv over mesh {list(mesh)}: a mesh of one device has no peer to receive from")


ONE_DEVICE = OneDevice()
"""The collectives of one-device meshes in a run without a communicator."""
