"""
How a run is placed: one process on one device, or, under torchrun, one process per device, each
running the same hir program on its own shards (SPMD). Device id == global rank.

`Session` turns the user's global inputs into this rank's shards (by the `fusion.type` each
argument of a lowered function records) and gathers the outputs back; `ProcessGroupCommunicator`
implements the runtime's `Communicator` over torch.distributed process groups, one per mesh, on
the transport of the device kind (`runtime/device.py`: gloo on CPU, NCCL on CUDA), posted
asynchronously and waited by `hir.wait` on the current stream.

Every collective, barrier and process-group set-up has a timeout (`Session(timeout=...)`,
`hir-run --timeout`, `HIR_DIST_TIMEOUT`; default 120 s), so a rank that stops, hangs or dies
makes its peers fail with a message naming the op, their rank and the ranks that did not respond,
instead of keeping the job alive.
"""

from __future__ import annotations

import atexit
import functools
import os
import time
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from hir.diagnostics import LocatedError, UserError
from hir.dialects.parallel_encoding import didx_bounds, is_uneven, layout_of
from hir.runtime import cuda_graph
from hir.runtime.communicator import Mesh, Work
from hir.runtime.device import DeviceKind, kind_of, requested_kind
from hir.runtime.executor import Program
from hir.runtime.poison import enabled as poisoned
from hir.runtime.poison import poison

_REDUCE_OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}

# The collectives into and from one tensor; torch 2.13 renamed them (the old names warn).
_all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor

TIMEOUT_VARIABLE = "HIR_DIST_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
"""Seconds a collective, a barrier or the set-up of a process group may take before it fails."""


def enable_symmetric_memory(group_name: str) -> None:
    """
    Symmetric memory on the process group `group_name`: torch before 2.10 needs it enabled per
    group; later torch enables every group and deprecates the call (a FutureWarning per rank).
    """
    import warnings

    import torch.distributed._symmetric_memory as symm_mem

    if not hasattr(symm_mem, "enable_symm_mem_for_group"):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        if not symm_mem.is_symm_mem_enabled_for_group(group_name):
            symm_mem.enable_symm_mem_for_group(group_name)


def timeout_from_environment() -> float:
    """`HIR_DIST_TIMEOUT` in seconds, or the default."""
    text = os.environ.get(TIMEOUT_VARIABLE)
    if text is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise UserError(f"{TIMEOUT_VARIABLE}={text!r}: expected a number of seconds > 0")
    return seconds


_WIRE_DTYPES = {torch.int16: torch.int32}
"""
Element types that neither gloo nor NCCL communicate, and the wider type each travels as. Exact:
widening keeps every value and the order (max, min), and a sum of int32s narrowed back to int16
wraps modulo 2**16 exactly as int16 arithmetic does.
"""


def _wire_dtype(dtype: torch.dtype) -> torch.dtype:
    return _WIRE_DTYPES.get(dtype, dtype)


def _on_the_wire(t: torch.Tensor) -> torch.Tensor:
    """`t`, contiguous, in a type the transports communicate."""
    return t.contiguous().to(_wire_dtype(t.dtype))


def _direct(output: torch.Tensor) -> bool:
    """Whether a collective can write `output` itself, with no temporary."""
    return output.is_contiguous() and _wire_dtype(output.dtype) == output.dtype


def _staging(output: torch.Tensor) -> torch.Tensor:
    """A contiguous temporary, in a type the transports communicate, for a collective into `output`."""
    return torch.empty(output.shape, dtype=_wire_dtype(output.dtype), device=output.device)


class _CopyBack:
    """A pending collective that wrote into a contiguous temporary: waiting also copies it out."""

    def __init__(self, work: Any, target: torch.Tensor, temporary: torch.Tensor):
        self.work, self.target, self.temporary = work, target, temporary

    def wait(self) -> None:
        self.work.wait()
        self.target.copy_(self.temporary)


class _AllOf:
    """Pending transfers waited for together (the send and the receive of a collective-permute)."""

    def __init__(self, works: Sequence[Any]):
        self.works = list(works)

    def wait(self) -> None:
        for work in self.works:
            work.wait()


class _FromSelf:
    """
    A receive from this device itself (nvFuser's SendRecvToSelf): a local copy of what its send
    posted, made when the receive is waited for (the send may be posted after the receive).
    """

    def __init__(self, pending: list[tuple[torch.Tensor, Any]], target: torch.Tensor):
        self.pending, self.target = pending, target

    def wait(self) -> None:
        if not self.pending:
            raise ValueError("a receive from this device itself has no send to itself posted before its wait")
        sent, ready = self.pending.pop(0)
        if ready is not None:  # the send's copy ran on the stream that posted it
            torch.cuda.current_stream(self.target.device).wait_event(ready)
        self.target.copy_(sent)


class _Holding:
    """A pending collective on a temporary that nothing copies back: kept alive until waited for."""

    def __init__(self, work: Any, temporary: torch.Tensor):
        self.work, self.temporary = work, temporary

    def wait(self) -> None:
        self.work.wait()


class _Reordered:
    """
    A pending collective whose pieces along `axis` came in process-group order: waiting copies
    piece `order[p]` of the temporary to piece p of the target (mesh order).
    """

    def __init__(self, work: Any, target: torch.Tensor, temporary: torch.Tensor, axis: int, order: Sequence[int]):
        self.work, self.target, self.temporary, self.axis, self.order = work, target, temporary, axis, order

    def wait(self) -> None:
        self.work.wait()
        for position, group_rank in enumerate(self.order):
            _piece(self.target, self.axis, position, len(self.order)).copy_(
                _piece(self.temporary, self.axis, group_rank, len(self.order))
            )


def _capturing() -> bool:
    """Whether the current CUDA stream is being captured into a graph (CUDA not in use: never)."""
    # is_initialized first: a CPU run on a GPU host must not create a CUDA context to ask.
    return torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing()


def _piece(t: torch.Tensor, axis: int, index: int, pieces: int) -> torch.Tensor:
    size = t.shape[axis] // pieces
    return t.narrow(axis, index * size, size)


@functools.lru_cache(maxsize=256)  # asked by every collective; a job has a few meshes
def group_order(mesh: Mesh) -> tuple[int, ...] | None:
    """
    The process-group rank of the device at each mesh position, or None when they are the same
    (an ascending mesh). A process group ranks its processes in ascending order whatever the
    order they are listed in; a mesh's positions are in the order written.
    """
    ranked = sorted(mesh)
    order = tuple(ranked.index(device) for device in mesh)
    return None if order == tuple(range(len(mesh))) else order


def in_mesh_order(parts: list[Any], mesh: Mesh) -> list[Any]:
    """Per-device parts listed in process-group order (as all_gather gives them), put in mesh order."""
    order = group_order(mesh)
    return parts if order is None else [parts[group_rank] for group_rank in order]


def _in_group_order(t: torch.Tensor, axis: int, order: Sequence[int]) -> torch.Tensor:
    """A contiguous copy of `t` (wire type) whose piece `order[p]` along `axis` is piece p of `t`."""
    moved = torch.empty(t.shape, dtype=_wire_dtype(t.dtype), device=t.device)
    for position, group_rank in enumerate(order):
        _piece(moved, axis, group_rank, len(order)).copy_(_piece(t, axis, position, len(order)))
    return moved


def _from_axis(t: torch.Tensor, axis: int) -> torch.Tensor:
    """A contiguous `t` without its extent-1 axes before `axis`: torch concatenates and splits along dim 0."""
    return t.view(t.shape[axis:])


class ProcessGroupCommunicator:
    """The runtime's `Communicator` among the processes of a torch.distributed job."""

    def __init__(self, rank: int, world_size: int, timeout: float = DEFAULT_TIMEOUT):
        self.rank = rank
        self.world_size = world_size
        self.timeout = timeout
        """Seconds; the process groups' timeout, which bounds every collective and barrier."""
        self.groups: dict[Mesh, Any] = {}
        self.in_flight: list[Any] = []
        """Point-to-point works not known to be complete (`keep_until_complete`)."""
        self.held_for_graphs: list[Any] = []
        """Point-to-point works posted while a caller's own CUDA graph was being captured."""
        self.symmetric = SymmetricHeap(self)
        self.to_self: list[tuple[torch.Tensor, Any]] = []
        """Sends of this device to itself, in order, with their copy's CUDA event, until received."""

    def failure(self, what: str, error: BaseException, mesh: Sequence[int] | None = None) -> str:
        """
        Why `what` (a collective, a barrier) failed on this rank: torch's reason, and the peers
        that did not report a failure of their own within a few seconds (stopped, hung or gone).
        """
        text = str(error).strip().splitlines()
        reason = text[0] if text else type(error).__name__
        if "timed out" in reason.lower() or "timeout" in reason.lower():
            reason = f"it did not complete within the timeout of {self.timeout:g} s ({reason})"
        message = f"rank {self.rank}: {what} failed: {reason}"
        silent = self._silent_peers(list(mesh) if mesh is not None else list(range(self.world_size)))
        if silent:
            ranks = ", ".join(str(r) for r in silent)
            message += f"; rank{'s' if len(silent) > 1 else ''} {ranks} did not respond (stopped, hung or exited)"
        elif silent is not None:
            message += "; every peer failed too (are the ranks running the same program?)"
        return message

    def _silent_peers(self, mesh: list[int]) -> list[int] | None:
        """The mesh peers that did not report a failure through the job's store; None if the store is unreachable."""
        try:
            store = dist.distributed_c10d._get_default_store()
            store.set_timeout(timedelta(seconds=2))
            store.set(f"hir/failed/{self.rank}", "1")
            peers = [r for r in mesh if r != self.rank]
            deadline = time.monotonic() + min(1.0, self.timeout)  # healthy peers fail at about the same time
            while True:
                silent = [r for r in peers if not store.check([f"hir/failed/{r}"])]
                if not silent or time.monotonic() > deadline:
                    return silent
                time.sleep(0.05)
        except Exception:  # the store itself is gone (its host rank stopped): say nothing about the peers
            return None

    def position_in(self, mesh: Mesh) -> int | None:
        return mesh.index(self.rank) if self.rank in mesh else None

    def empty_symmetric(
        self, key: object, shape: Sequence[int], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        return self.symmetric.empty(key, tuple(shape), dtype, device)

    def peer_view(self, buffer: torch.Tensor, device_id: int) -> torch.Tensor:
        return self.symmetric.peer_view(buffer, device_id)

    def barrier(self, mesh: Mesh) -> None:
        # On CUDA the symmetric-memory barrier spans the job (the buffers are rendezvoused over the
        # world): a device outside the mesh joins it too; every device runs the same program.
        if self.rank in mesh or self.symmetric.barrier_handle is not None:
            self.symmetric.barrier(mesh)

    def capture_refusal(self, mesh: Mesh) -> str | None:
        """
        Why the transfers over `mesh` cannot be captured in a CUDA graph (runtime/cuda_graph.py), or
        None: NCCL collectives and symmetric memory can; gloo runs on the host.
        """
        if (group := self.group(mesh)) is None:
            return None
        backend = str(dist.get_backend(group))
        if backend != "nccl":
            return (
                f"its transfers over mesh {list(mesh)} go through torch.distributed's {backend} backend, "
                "which runs them on the host (CUDA graphs capture NCCL and symmetric memory)"
            )
        return None

    def prepare(self, meshes: Iterable[Mesh]) -> None:
        """Creates a process group per mesh; every rank calls this with the same meshes (collective)."""
        # One group per set of devices: a mesh listed in another order shares it (the order of
        # the pieces of a collective is the mesh's; the collectives below reorder, group_order).
        for devices in sorted({tuple(sorted(mesh)) for mesh in meshes}):
            if devices in self.groups:
                continue
            if max(devices) >= self.world_size:
                needed = max(devices) + 1
                raise UserError(f"mesh {list(devices)} needs {needed} processes, the job has {self.world_size}")
            full = devices == tuple(range(self.world_size))
            try:
                group = (
                    dist.group.WORLD if full else dist.new_group(list(devices), timeout=timedelta(seconds=self.timeout))
                )
            except Exception as err:
                raise UserError(self.failure(f"creating the process group of mesh {list(devices)}", err)) from err
            self.groups[devices] = group

    def prepared_group(self, mesh: Mesh) -> Any | None:
        """The process group made for `mesh`'s devices by `prepare`, or None (made by nobody yet)."""
        return self.groups.get(tuple(sorted(mesh)))

    def group(self, mesh: Mesh) -> Any:
        """The process group of `mesh`, or None when this device is not in it."""
        if self.rank not in mesh:
            return None
        devices = tuple(sorted(mesh))
        if devices not in self.groups:
            self.prepare([mesh])
        return self.groups[devices]

    def allgather(self, input: torch.Tensor, output: torch.Tensor, axis: int, mesh: Mesh) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        if any(d != 1 for d in output.shape[:axis]):
            raise ValueError(
                f"all-gather along axis {axis} needs it outermost in memory, got shape {tuple(output.shape)}"
            )
        source = _from_axis(_on_the_wire(input), axis)
        if (order := group_order(mesh)) is not None:
            temporary = _staging(output)
            work = _all_gather_single(_from_axis(temporary, axis), source, group=group, async_op=True)
            return _Reordered(work, output, temporary, axis, order)
        if _direct(output):
            return _all_gather_single(_from_axis(output, axis), source, group=group, async_op=True)
        temporary = _staging(output)
        work = _all_gather_single(_from_axis(temporary, axis), source, group=group, async_op=True)
        return _CopyBack(work, output, temporary)

    def allreduce(self, input: torch.Tensor, output: torch.Tensor, kind: str, mesh: Mesh) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        if _direct(output):
            if input.data_ptr() != output.data_ptr():
                output.copy_(input)
            return dist.all_reduce(output, op=_REDUCE_OPS[kind], group=group, async_op=True)
        temporary = _staging(output)
        temporary.copy_(input)
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
        order = group_order(mesh)
        source = _from_axis(_on_the_wire(input) if order is None else _in_group_order(input, axis, order), axis)
        if _direct(output):
            return _reduce_scatter_single(_from_axis(output, axis), source, op=op, group=group, async_op=True)
        temporary = _staging(output)
        work = _reduce_scatter_single(_from_axis(temporary, axis), source, op=op, group=group, async_op=True)
        return _CopyBack(work, output, temporary)

    def all_to_all(
        self, input: torch.Tensor, output: torch.Tensor, split_axis: int, concat_axis: int, mesh: Mesh
    ) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        for what, t, axis in (("split", input, split_axis), ("concat", output, concat_axis)):
            if any(d != 1 for d in t.shape[:axis]):
                raise ValueError(
                    f"all-to-all: the {what} axis {axis} must be outermost in memory, got {tuple(t.shape)}"
                )
        # torch splits and concatenates along dim 0 of the flat data: the chunks are contiguous.
        if (order := group_order(mesh)) is not None:
            source = _from_axis(_in_group_order(input, split_axis, order), split_axis)
            temporary = _staging(output)
            work = dist.all_to_all_single(_from_axis(temporary, concat_axis), source, group=group, async_op=True)
            return _Reordered(work, output, temporary, concat_axis, order)
        source = _from_axis(_on_the_wire(input), split_axis)
        if _direct(output):
            return dist.all_to_all_single(_from_axis(output, concat_axis), source, group=group, async_op=True)
        temporary = _staging(output)
        work = dist.all_to_all_single(_from_axis(temporary, concat_axis), source, group=group, async_op=True)
        return _CopyBack(work, output, temporary)

    def broadcast(self, input: torch.Tensor, output: torch.Tensor, root: int, mesh: Mesh) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        is_root = self.rank == mesh[root]
        if _direct(output):
            if is_root and input.data_ptr() != output.data_ptr():
                output.copy_(input)
            return dist.broadcast(output, src=mesh[root], group=group, async_op=True)
        temporary = _staging(output)
        if is_root:
            temporary.copy_(input)
        return _CopyBack(dist.broadcast(temporary, src=mesh[root], group=group, async_op=True), output, temporary)

    def reduce(self, input: torch.Tensor, output: torch.Tensor, root: int, kind: str, mesh: Mesh) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        op, dst = _REDUCE_OPS[kind], mesh[root]
        if self.rank == dst:  # torch reduces in place: into `output` itself, or a temporary copied out
            if _direct(output):
                if input.data_ptr() != output.data_ptr():
                    output.copy_(input)
                return dist.reduce(output, dst=dst, op=op, group=group, async_op=True)
            temporary = _staging(output)
            temporary.copy_(input)
            return _CopyBack(dist.reduce(temporary, dst=dst, op=op, group=group, async_op=True), output, temporary)
        # Not the root: NCCL only reads the tensor there; gloo may leave partial sums in it, so it
        # gets a copy and `input` stays as it is. `output` is not touched.
        source = _on_the_wire(input)
        if source is input and dist.get_backend(group) != "nccl":
            source = input.clone()
        return _Holding(dist.reduce(source, dst=dst, op=op, group=group, async_op=True), source)

    def collective_permute(self, send: torch.Tensor, recv: torch.Tensor, offset: int, mesh: Mesh) -> Work | None:
        if (group := self.group(mesh)) is None:
            return None
        position, devices = mesh.index(self.rank), len(mesh)
        to, frm = mesh[(position + offset) % devices], mesh[(position - offset) % devices]
        target = recv if _direct(recv) else _staging(recv)
        # One batch: each device's send and receive are posted together, so no ring order deadlocks.
        works = dist.batch_isend_irecv(
            [
                dist.P2POp(dist.isend, _on_the_wire(send), to, group=group),
                dist.P2POp(dist.irecv, target, frm, group=group),
            ]
        )
        work = _AllOf(self.keep_until_complete(works))
        return work if target is recv else _CopyBack(work, recv, target)

    def forget_sends_to_self(self) -> None:
        """Called at the end of each run (runtime/executor.py)."""
        self.to_self.clear()

    def keep_until_complete(self, works: list[Any]) -> list[Any]:
        """
        Holds point-to-point `works` until they complete, waited for or not: gloo cancels a send or
        receive whose work object is freed, and the peer's matching one then never completes (a
        program that drops a `!hir.work` unwaited would hang its peers, not just race).

        Under CUDA-graph capture nothing completes (the graph runs the transfers at each replay)
        and asking whether a work has (an event query) is not permitted: the works are held as
        long as the graph instead (`cuda_graph.keep_with_capture`), or as long as this
        communicator when the capture is the caller's own.
        """
        if _capturing():
            if not cuda_graph.keep_with_capture(works):
                self.held_for_graphs.extend(works)
            return works
        self.in_flight = [w for w in self.in_flight if not w.is_completed()] + list(works)
        return works

    def send(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work | None:
        if self.group(mesh) is None:
            return None
        if mesh[peer] == self.rank:  # no transport pairs a process with itself: a local copy
            ready = torch.cuda.Event() if buffer.is_cuda else None
            self.to_self.append((buffer.clone(), ready))
            if ready is not None:
                ready.record()
            return None
        (work,) = self.keep_until_complete([dist.isend(_on_the_wire(buffer), dst=mesh[peer])])
        return work

    def recv(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work | None:
        if self.group(mesh) is None:
            return None
        if mesh[peer] == self.rank:
            return _FromSelf(self.to_self, buffer)
        target = buffer if _direct(buffer) else _staging(buffer)
        (work,) = self.keep_until_complete([dist.irecv(target, src=mesh[peer])])
        return work if target is buffer else _CopyBack(work, buffer, target)


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
        """Per allocating op of a compiled program (its key, `hir_ops.allocate`): the op's buffer.
        Keys are never reused, so that every rank allocates (a collective) exactly when the others
        do. Buffers are never freed (until `close`): torch's symmetric memory caches a rendezvous
        by address, so a buffer allocated where a freed one was could find the old rendezvous on
        one rank and exchange anew on another, which then waits forever."""
        self._retired: list[torch.Tensor] = []
        """Buffers a key replaced (another extent): kept, for the same reason."""
        self.handles: dict[int, Any] = {}
        self.barrier_handle: Any = None
        """The first buffer's rendezvous handle, for the barrier: every rank uses the same one."""
        self.peers: dict[int, list[torch.Tensor]] = {}
        self.peer_views: dict[tuple[int, int, tuple[int, ...], torch.dtype], torch.Tensor] = {}
        self._segments: list[Any] = []
        self._owned: list[Any] = []

    def empty(self, key: object, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        cached = self.buffers.get(key)
        if cached is not None and tuple(cached.shape) == shape and cached.dtype == dtype:
            return cached
        if cached is not None:  # another extent (a dynamic shape): a new buffer, the old one kept
            self._retired.append(cached)
        buffer = self._cuda_buffer(shape, dtype, device) if device.type == "cuda" else self._shared_buffer(shape, dtype)
        self.buffers[key] = buffer
        return buffer

    def _cuda_buffer(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        import torch.distributed._symmetric_memory as symm_mem

        group_name = dist.group.WORLD.group_name
        enable_symmetric_memory(group_name)
        buffer = symm_mem.empty(shape, dtype=dtype, device=device)
        if poisoned():  # before the rendezvous: no peer writes into it yet
            poison(buffer)
        handle = self.handles[buffer.data_ptr()] = symm_mem.rendezvous(buffer, group_name)
        if self.barrier_handle is None:
            self.barrier_handle = handle
        return buffer

    def _shared_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        import math
        import uuid
        from multiprocessing import resource_tracker, shared_memory

        if math.prod(shape) == 0:  # nothing to share (torch.frombuffer refuses count 0); alike on every rank
            return torch.empty(shape, dtype=dtype)
        nbytes = max(1, math.prod(shape) * torch.empty((), dtype=dtype).element_size())
        own = shared_memory.SharedMemory(name=f"hir_{uuid.uuid4().hex[:16]}", create=True, size=nbytes)
        self._owned.append(own)
        if poisoned():  # before its name is shared: no peer writes into it yet
            poison(torch.frombuffer(own.buf, dtype=dtype, count=math.prod(shape)))
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
        if device_id == self.communicator.rank or buffer.numel() == 0:
            return buffer  # an empty buffer: no element to read or write, its own view will do
        key = (buffer.data_ptr(), device_id, tuple(buffer.shape), buffer.dtype)
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
        if self.barrier_handle is not None:
            self.barrier_handle.barrier(channel=0)
        else:
            # The mesh's own group, made before the run (Program.meshes): the devices outside it skip it.
            dist.barrier(group=self.communicator.prepared_group(mesh))

    def close(self) -> None:
        """Drops the buffers and unmaps the shared segments (the owner also removes its own)."""
        self.peer_views.clear()
        self.peers.clear()
        self.buffers.clear()
        self._retired.clear()
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
    """
    This rank's shard of a global input: along the didx axis (extent L over D devices), the
    indices [p*c, min((p+1)*c, L)) with c = ceil(L/D) at the rank's mesh position p (torch's
    `Shard(dim)`; one index when L == D). A rank outside the mesh takes position 0's.
    """
    if not isinstance(value, torch.Tensor) or not isinstance(global_type, TensorType):
        return value
    layout = layout_of(global_type)
    if layout.didx_axis is None:
        return value
    position = layout.mesh.index(rank) if rank in layout.mesh else 0
    start, length = didx_bounds(value.shape[layout.didx_axis], len(layout.mesh), position)
    return value.narrow(layout.didx_axis, start, length).contiguous()


class Session:
    """
    The processes and device of a run; SPMD over torch.distributed when WORLD_SIZE > 1. `timeout`
    (seconds) bounds every collective and barrier of the job (default: `HIR_DIST_TIMEOUT`, else 120).
    """

    def __init__(self, device: torch.device, rank: int = 0, world_size: int = 1, timeout: float | None = None):
        self.device = device
        self.kind: DeviceKind = kind_of(device)
        self.rank = rank
        self.world_size = world_size
        self.timeout = timeout if timeout is not None else timeout_from_environment()
        self.communicator = ProcessGroupCommunicator(rank, world_size, self.timeout) if world_size > 1 else None

    @classmethod
    def from_environment(cls, device: str | None = None, timeout: float | None = None) -> Session:
        """The session torchrun's environment describes (one process, when there is none) on `device`'s kind."""
        kind = requested_kind(device)
        seconds = timeout if timeout is not None else timeout_from_environment()
        if not seconds > 0:
            raise UserError(f"the timeout must be > 0 seconds, got {seconds:g}")
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size == 1:
            return cls(torch.device(kind.name), timeout=seconds)
        rank = int(os.environ["RANK"])
        run_device = kind.process_device(int(os.environ.get("LOCAL_RANK", rank)))
        try:
            kind.init_process_group(run_device, timedelta(seconds=seconds))
        except Exception as err:
            raise UserError(f"rank {rank}: joining the job of {world_size} processes failed: {err}") from err
        return cls(run_device, rank, world_size, seconds)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def describe(self) -> str:
        return f"{self.device}" + (f", rank {self.rank} of {self.world_size}" if self.world_size > 1 else "")

    def check_job(self, program: Program) -> None:
        """
        A lowered program over a mesh runs one process per device of its meshes (device id ==
        rank), no more, no fewer; checked on every rank before anything runs.
        """
        if not program.device_ids or program.processes == self.world_size:
            return
        needed = program.processes
        message = (
            f"runs on devices {list(program.device_ids)}, one process each ({needed} processes), "
            f"but the job has {self.world_size}"
        )
        if self.world_size == 1:
            message += (
                f": start one process per device, e.g. python -m torch.distributed.run --nproc-per-node {needed} "
                "-m hir.tools.hir_run FILE ..."
            )
        raise LocatedError(program.func, message)

    def run(
        self, program: Program, inputs: Sequence[Any], num_streams: int = 4, cuda_graph: bool = False, **options: Any
    ) -> list[Any]:
        """
        Runs a lowered program on this rank's shards and returns the global outputs (`cuda_graph`:
        replayed); `options` are more of `Program.__call__`'s (`memory_stats`). An output is held
        by the devices of its global type's mesh (every device, for a type without a mesh): on a
        rank outside that mesh it is None (`Program.held_outputs`; `to_main` sends such outputs
        to rank 0).
        """
        self.check_job(program)
        if self.communicator is not None and program.is_hir:
            program.check_inputs(inputs, global_types=True)  # before they are cut into shards
            # The meshes of sharded outputs too (gathered back below): creating a process group
            # is collective, so every rank, in the mesh or not, takes part here.
            gathered = [
                tuple(layout_of(t).mesh)
                for t in program.global_output_types
                if isinstance(t, TensorType) and layout_of(t).didx_axis is not None
            ]
            self.communicator.prepare([*program.meshes, *gathered])
            inputs = [shard(v, t, self.rank) for v, t in zip(inputs, program.global_input_types)]
        local = [t.to(self.device) if isinstance(t, torch.Tensor) else t for t in inputs]
        outputs = program(
            local,
            device=self.device,
            num_streams=num_streams,
            communicator=self.communicator,
            cuda_graph=cuda_graph,
            **options,
        )
        if self.communicator is not None and program.is_hir:
            outputs = [self.unshard(v, t) for v, t in zip(outputs, program.global_output_types)]
        self.synchronize()
        return outputs

    def run_reference(self, program: Program, inputs: Sequence[Any]) -> list[Any]:
        """The fusion-level reference: eager torch on the unsharded inputs."""
        outputs = program([t.to(self.device) if isinstance(t, torch.Tensor) else t for t in inputs], device=self.device)
        self.synchronize()
        return outputs

    def holds(self, program: Program) -> list[bool]:
        """Per output of `program`, whether this rank holds it (`run` returns None for the others)."""
        return program.held_outputs(self.communicator)

    def to_main(self, program: Program, outputs: Sequence[Any]) -> list[Any]:
        """
        The global outputs of a `run`, on rank 0 every one of them: an output that rank 0 does not
        hold is sent to it by the device at position 0 of the output's mesh (a point-to-point
        transfer of the gathered tensor). Collective: every rank calls it after the same `run`;
        the other ranks get `outputs` back as they are.
        """
        result = list(outputs)
        if self.communicator is None or not program.is_hir:
            return result
        for k, mesh in enumerate(program.output_meshes):
            if mesh is None or 0 in mesh:
                continue
            holder = mesh[0]
            if self.rank not in (0, holder):
                continue
            box: list[Any] = [None]
            try:
                if self.rank == holder:
                    value = outputs[k]
                    box[0] = value.cpu() if isinstance(value, torch.Tensor) else value
                    dist.send_object_list(box, dst=0, device=self.device)
                else:
                    dist.recv_object_list(box, src=holder, device=self.device)
            except Exception as err:
                what = f"sending output #{k} of mesh {list(mesh)} from rank {holder} to rank 0"
                raise UserError(self.communicator.failure(what, err, [0, holder])) from err
            if self.rank == 0:
                value = box[0]
                result[k] = value.to(self.device) if isinstance(value, torch.Tensor) else value
        return result

    def unshard(self, value: Any, global_type: Attribute) -> Any:
        """Gathers a sharded output along its didx axis (every mesh member gets the global tensor)."""
        if not isinstance(value, torch.Tensor) or not isinstance(global_type, TensorType):
            return value
        layout = layout_of(global_type)
        if layout.didx_axis is None or self.communicator is None or self.rank not in layout.mesh:
            return value
        self.communicator.prepare([layout.mesh])
        group = self.communicator.prepared_group(layout.mesh)
        axis = layout.didx_axis
        wire = _on_the_wire(value)
        try:
            if not is_uneven(global_type):
                parts = [torch.empty_like(wire) for _ in layout.mesh]
                dist.all_gather(parts, wire, group=group)
                return torch.cat(in_mesh_order(parts, layout.mesh), dim=axis).to(value.dtype)
            # Uneven shards: the transports gather equal pieces, so each is padded to the largest
            # (c = ceil(L/D)) and cut back to its own extent after.
            extent = torch.tensor([wire.shape[axis]], dtype=torch.int64, device=wire.device)
            extents = [torch.empty_like(extent) for _ in layout.mesh]
            dist.all_gather(extents, extent, group=group)
            sizes = [int(e.item()) for e in extents]
            padded_shape = list(wire.shape)
            padded_shape[axis] = max(sizes)
            padded = torch.zeros(padded_shape, dtype=wire.dtype, device=wire.device)
            padded.narrow(axis, 0, wire.shape[axis]).copy_(wire)
            parts = [torch.empty_like(padded) for _ in layout.mesh]
            dist.all_gather(parts, padded, group=group)
        except Exception as err:
            what = f"gathering an output over mesh {list(layout.mesh)}"
            raise UserError(self.communicator.failure(what, err, layout.mesh)) from err
        pieces = [part.narrow(axis, 0, size) for part, size in zip(parts, sizes)]
        pieces = in_mesh_order(pieces, layout.mesh)
        return torch.cat(pieces, dim=axis).to(value.dtype)

    def synchronize(self) -> None:
        self.kind.synchronize(self.device)

    def close(self) -> None:
        if self.communicator is not None:
            self.communicator.symmetric.close()
            # The communicator and its heap refer to each other: drop the process groups here, or
            # gloo's are only freed at interpreter exit, with live threads (std::terminate, SIGABRT).
            self.communicator.groups.clear()
        if self.world_size > 1 and dist.is_initialized():
            # No rank tears its connections down while a peer still uses them; gloo's monitored
            # barrier names a rank that does not arrive within the timeout.
            try:
                if self.kind.transport == "gloo":
                    dist.monitored_barrier(timeout=timedelta(seconds=self.timeout), wait_all_ranks=True)
                else:
                    dist.barrier()
            except Exception as err:
                assert self.communicator is not None
                raise UserError(self.communicator.failure("the barrier at the end of the run", err)) from err
            dist.destroy_process_group()
