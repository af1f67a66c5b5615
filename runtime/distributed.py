"""
How a run is placed: one process on one device, or, under torchrun, one process per device, each
running the same hir program on its own shards (SPMD). Device id == global rank.

`Session` turns the user's global inputs into this rank's shards (by the `fusion.type` each
argument of a lowered function records) and gathers the outputs back; `ProcessGroupCommunicator`
implements the runtime's `Communicator` over torch.distributed process groups, one per mesh, on
the transport of the device kind (`runtime/device.py`: gloo on CPU, NCCL on CUDA), posted
asynchronously and waited by `hir.wait` on the current stream.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from hir.dialects.parallel_encoding import layout_of
from hir.runtime.communicator import Mesh, Work
from hir.runtime.device import DeviceKind, kind_of, requested_kind
from hir.runtime.executor import Program

# torch 2.13 renamed the tensor collectives (the old names warn once per rank); older torch has only those.
_all_gather_single = getattr(dist, "all_gather_single", dist.all_gather_into_tensor)
_reduce_scatter_single = getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)

_REDUCE_OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}


class _CopyBack:
    """A pending collective that wrote into a contiguous temporary: waiting also copies it out."""

    def __init__(self, work: Any, target: torch.Tensor, temporary: torch.Tensor):
        self.work, self.target, self.temporary = work, target, temporary

    def wait(self) -> None:
        self.work.wait()
        self.target.copy_(self.temporary)


def _from_axis(t: torch.Tensor, axis: int) -> torch.Tensor:
    """A contiguous `t` without its extent-1 axes before `axis`: torch concatenates and splits along dim 0."""
    return t.view(t.shape[axis:])


class ProcessGroupCommunicator:
    """The runtime's `Communicator` among the processes of a torch.distributed job."""

    def __init__(self, rank: int, world_size: int):
        self.rank = rank
        self.world_size = world_size
        self.groups: dict[Mesh, Any] = {}
        self.symmetric = SymmetricHeap(self)

    def position_in(self, mesh: Mesh) -> int:
        if self.rank not in mesh:
            raise ValueError(f"device {self.rank} is not in mesh {list(mesh)}")
        return mesh.index(self.rank)

    def empty_symmetric(
        self, key: object, shape: Sequence[int], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        return self.symmetric.empty(key, tuple(shape), dtype, device)

    def peer_view(self, buffer: torch.Tensor, device_id: int) -> torch.Tensor:
        return self.symmetric.peer_view(buffer, device_id)

    def barrier(self, mesh: Mesh) -> None:
        if self.rank in mesh:
            self.symmetric.barrier(mesh)

    def prepare(self, meshes: Iterable[Mesh]) -> None:
        """Creates a process group per mesh; every rank calls this with the same meshes (collective)."""
        for mesh in sorted(set(meshes)):
            if mesh in self.groups:
                continue
            if max(mesh) >= self.world_size:
                raise ValueError(f"mesh {list(mesh)} needs {max(mesh) + 1} processes, the job has {self.world_size}")
            if list(mesh) != sorted(mesh):
                raise ValueError(f"collectives need a mesh in ascending device order, got {list(mesh)}")
            full = mesh == tuple(range(self.world_size))
            self.groups[mesh] = dist.group.WORLD if full else dist.new_group(list(mesh))

    def group(self, mesh: Mesh) -> Any:
        """The process group of `mesh`, or None when this device is not in it."""
        if self.rank not in mesh:
            return None
        if mesh not in self.groups:
            self.prepare([mesh])
        return self.groups[mesh]

    def allgather(self, input: torch.Tensor, output: torch.Tensor, axis: int, mesh: Mesh) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        if any(d != 1 for d in output.shape[:axis]):
            raise ValueError(
                f"all-gather along axis {axis} needs it outermost in memory, got shape {tuple(output.shape)}"
            )
        source = _from_axis(input.contiguous(), axis)
        if output.is_contiguous():
            return _all_gather_single(_from_axis(output, axis), source, group=group, async_op=True)
        temporary = torch.empty(output.shape, dtype=output.dtype, device=output.device)
        work = _all_gather_single(_from_axis(temporary, axis), source, group=group, async_op=True)
        return _CopyBack(work, output, temporary)

    def allreduce(self, input: torch.Tensor, output: torch.Tensor, kind: str, mesh: Mesh) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        if input.data_ptr() != output.data_ptr():
            output.copy_(input)
        if output.is_contiguous():
            return dist.all_reduce(output, op=_REDUCE_OPS[kind], group=group, async_op=True)
        temporary = output.contiguous()
        work = dist.all_reduce(temporary, op=_REDUCE_OPS[kind], group=group, async_op=True)
        return _CopyBack(work, output, temporary)

    def reduce_scatter(
        self, input: torch.Tensor, output: torch.Tensor, axis: int, kind: str, mesh: Mesh
    ) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        if any(d != 1 for d in input.shape[:axis]):
            raise ValueError(f"reduce-scatter along axis {axis} needs it outermost in memory, got {tuple(input.shape)}")
        op = _REDUCE_OPS[kind]
        source = _from_axis(input.contiguous(), axis)
        if output.is_contiguous():
            return _reduce_scatter_single(_from_axis(output, axis), source, op=op, group=group, async_op=True)
        temporary = torch.empty(output.shape, dtype=output.dtype, device=output.device)
        work = _reduce_scatter_single(_from_axis(temporary, axis), source, op=op, group=group, async_op=True)
        return _CopyBack(work, output, temporary)

    def broadcast(self, input: torch.Tensor, output: torch.Tensor, root: int, mesh: Mesh) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        if self.rank == mesh[root] and input.data_ptr() != output.data_ptr():
            output.copy_(input)
        if output.is_contiguous():
            return dist.broadcast(output, src=mesh[root], group=group, async_op=True)
        temporary = output.contiguous()
        return _CopyBack(dist.broadcast(temporary, src=mesh[root], group=group, async_op=True), output, temporary)

    def send(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work | None:
        if self.group(mesh) is None:
            return None
        return dist.isend(buffer.contiguous(), dst=mesh[peer])

    def recv(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work | None:
        if self.group(mesh) is None:
            return None
        if buffer.is_contiguous():
            return dist.irecv(buffer, src=mesh[peer])
        temporary = torch.empty(buffer.shape, dtype=buffer.dtype, device=buffer.device)
        return _CopyBack(dist.irecv(temporary, src=mesh[peer]), buffer, temporary)


class SymmetricHeap:
    """
    Buffers every device allocates alike, so that peers can read and write each other's copies.

    On CUDA this is torch's symmetric memory (`torch.distributed._symmetric_memory`): a peer view
    maps the peer's buffer into this device's address space, copies to or from it run on the copy
    engines over NVLink, and the barrier runs on the current stream. On CPU the processes of the
    job share the buffers through POSIX shared memory, with the same semantics (a barrier is a
    process-group barrier, since CPU work runs in order).
    """

    def __init__(self, communicator: ProcessGroupCommunicator):
        self.communicator = communicator
        self.buffers: dict[object, torch.Tensor] = {}
        self.handles: dict[int, Any] = {}
        self.peers: dict[int, list[torch.Tensor]] = {}
        self.peer_views: dict[tuple[int, int], torch.Tensor] = {}
        self._segments: list[Any] = []
        self._owned: list[Any] = []

    def empty(self, key: object, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        cached = self.buffers.get(key)
        if cached is not None and tuple(cached.shape) == shape and cached.dtype == dtype:
            return cached
        buffer = self._cuda_buffer(shape, dtype, device) if device.type == "cuda" else self._shared_buffer(shape, dtype)
        self.buffers[key] = buffer
        return buffer

    def _cuda_buffer(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        import torch.distributed._symmetric_memory as symm_mem

        group_name = dist.group.WORLD.group_name
        if hasattr(symm_mem, "enable_symm_mem_for_group") and not symm_mem.is_symm_mem_enabled_for_group(group_name):
            symm_mem.enable_symm_mem_for_group(group_name)
        buffer = symm_mem.empty(shape, dtype=dtype, device=device)
        self.handles[buffer.data_ptr()] = symm_mem.rendezvous(buffer, group_name)
        return buffer

    def _shared_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        import math
        import uuid
        from multiprocessing import resource_tracker, shared_memory

        nbytes = max(1, math.prod(shape) * torch.empty((), dtype=dtype).element_size())
        own = shared_memory.SharedMemory(name=f"hir_{uuid.uuid4().hex[:16]}", create=True, size=nbytes)
        self._owned.append(own)
        atexit.register(_unlink_quietly, own)
        names: list[str] = [""] * self.communicator.world_size
        dist.all_gather_object(names, own.name)
        tensors = []
        for rank, name in enumerate(names):
            segment = own if rank == self.communicator.rank else shared_memory.SharedMemory(name=name)
            if segment is not own:  # the owner unlinks it; attaching must not register it again
                resource_tracker.unregister(segment._name, "shared_memory")  # type: ignore[attr-defined]
            self._segments.append(segment)
            count = math.prod(shape)
            tensors.append(torch.frombuffer(segment.buf, dtype=dtype, count=count).view(shape))
        buffer = tensors[self.communicator.rank]
        self.peers[buffer.data_ptr()] = tensors
        return buffer

    def peer_view(self, buffer: torch.Tensor, device_id: int) -> torch.Tensor:
        if device_id == self.communicator.rank:
            return buffer
        key = (buffer.data_ptr(), device_id)
        if (view := self.peer_views.get(key)) is not None:
            return view
        if (handle := self.handles.get(buffer.data_ptr())) is not None:
            # Mapping a peer's buffer costs host time: do it once.
            view = handle.get_buffer(device_id, tuple(buffer.shape), buffer.dtype, 0)
        elif (tensors := self.peers.get(buffer.data_ptr())) is not None:
            view = tensors[device_id]
        else:
            raise ValueError("hir.peer_view needs a buffer from `hir.allocate symmetric`")
        self.peer_views[key] = view
        return view

    def barrier(self, mesh: Mesh) -> None:
        if self.handles:
            next(iter(self.handles.values())).barrier(channel=0)
        else:
            dist.barrier(group=self.communicator.groups.get(mesh, dist.group.WORLD))

    def close(self) -> None:
        """Drops the buffers and unmaps the shared segments (the owner also removes its own)."""
        self.peer_views.clear()
        self.peers.clear()
        self.buffers.clear()
        for segment in self._segments:
            try:
                segment.close()
            except BufferError:  # a caller still holds a tensor on it: the OS unmaps it at exit
                pass
        for segment in self._owned:
            _unlink_quietly(segment)
        self._segments.clear()
        self._owned.clear()


def _unlink_quietly(segment: Any) -> None:
    try:
        segment.unlink()
    except FileNotFoundError:
        pass


def shard(value: Any, global_type: Attribute, rank: int) -> Any:
    """This rank's shard of a global input: extent 1 along the didx axis, at the rank's mesh position."""
    if not isinstance(value, torch.Tensor) or not isinstance(global_type, TensorType):
        return value
    layout = layout_of(global_type)
    if layout.didx_axis is None:
        return value
    position = layout.mesh.index(rank) if rank in layout.mesh else 0
    return value.narrow(layout.didx_axis, position, 1).contiguous()


class Session:
    """The processes and device of a run; SPMD over torch.distributed when WORLD_SIZE > 1."""

    def __init__(self, device: torch.device, rank: int = 0, world_size: int = 1):
        self.device = device
        self.kind: DeviceKind = kind_of(device)
        self.rank = rank
        self.world_size = world_size
        self.communicator = ProcessGroupCommunicator(rank, world_size) if world_size > 1 else None

    @classmethod
    def from_environment(cls, device: str | None = None) -> Session:
        """The session torchrun's environment describes (one process, when there is none) on `device`'s kind."""
        kind = requested_kind(device)
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size == 1:
            return cls(torch.device(kind.name))
        rank = int(os.environ["RANK"])
        run_device = kind.process_device(int(os.environ.get("LOCAL_RANK", rank)))
        kind.init_process_group(run_device, timedelta(seconds=float(os.environ.get("HIR_DIST_TIMEOUT", "120"))))
        return cls(run_device, rank, world_size)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def describe(self) -> str:
        return f"{self.device}" + (f", rank {self.rank} of {self.world_size}" if self.world_size > 1 else "")

    def run(self, program: Program, inputs: Sequence[Any], num_streams: int = 4) -> list[Any]:
        """Runs a lowered program on this rank's shards and returns the global outputs."""
        if self.communicator is not None and program.is_hir:
            # The meshes of sharded outputs too (gathered back below), so that every rank, in a
            # mesh or not, refuses a mesh the job cannot hold before anything runs.
            gathered = [
                tuple(layout_of(t).mesh)
                for t in program.global_output_types
                if isinstance(t, TensorType) and layout_of(t).didx_axis is not None
            ]
            self.communicator.prepare([*program.meshes, *gathered])
            inputs = [shard(v, t, self.rank) for v, t in zip(inputs, program.global_input_types)]
        local = [t.to(self.device) if isinstance(t, torch.Tensor) else t for t in inputs]
        outputs = program(local, device=self.device, num_streams=num_streams, communicator=self.communicator)
        if self.communicator is not None and program.is_hir:
            outputs = [self.unshard(v, t) for v, t in zip(outputs, program.global_output_types)]
        self.synchronize()
        return outputs

    def run_reference(self, program: Program, inputs: Sequence[Any]) -> list[Any]:
        """The fusion-level reference: eager torch on the unsharded inputs."""
        outputs = program([t.to(self.device) if isinstance(t, torch.Tensor) else t for t in inputs], device=self.device)
        self.synchronize()
        return outputs

    def unshard(self, value: Any, global_type: Attribute) -> Any:
        """Gathers a sharded output along its didx axis (every mesh member gets the global tensor)."""
        if not isinstance(value, torch.Tensor) or not isinstance(global_type, TensorType):
            return value
        layout = layout_of(global_type)
        if layout.didx_axis is None or self.communicator is None or self.rank not in layout.mesh:
            return value
        self.communicator.prepare([layout.mesh])
        parts = [torch.empty_like(value) for _ in layout.mesh]
        dist.all_gather(parts, value.contiguous(), group=self.communicator.groups[layout.mesh])
        return torch.cat(parts, dim=layout.didx_axis)

    def synchronize(self) -> None:
        self.kind.synchronize(self.device)

    def close(self) -> None:
        if self.communicator is not None:
            self.communicator.symmetric.close()
            # The communicator and its heap refer to each other: drop the process groups here, or
            # gloo's are only freed at interpreter exit, with live threads (std::terminate, SIGABRT).
            self.communicator.groups.clear()
        if self.world_size > 1 and dist.is_initialized():
            dist.barrier()  # no rank tears its connections down while a peer still uses them
            dist.destroy_process_group()
