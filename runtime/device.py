"""
Devices: which torch device a run uses, its `Streams`, the torch.distributed transport between
processes on such devices, and how a process of a multi-device job finds its device. Adding a
kind of device (or changing its transport) touches `DEVICE_KINDS` only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch

from hir.diagnostics import UserError
from hir.runtime.streams import CpuStreams, CudaStreams, Streams


@dataclass(frozen=True)
class DeviceKind:
    """What the runtime needs to know about one kind of device."""

    name: str
    """`torch.device(name).type`, and what `hir-run --device` accepts."""
    transport: str
    """The torch.distributed process-group backend that carries the collectives between them."""
    is_available: Callable[[], bool]
    make_streams: Callable[[torch.device], Streams]
    synchronize: Callable[[torch.device], None]
    """Blocks the host until the device has finished its work."""
    count_per_host: Callable[[], int] | None = None
    """How many there are to give each process of a job its own (by local rank), made current
    with `make_current` and named to the process group; None: the processes share one."""
    make_current: Callable[[torch.device], None] = lambda device: None

    def process_device(self, local_rank: int) -> torch.device:
        """The device of the process with this local rank on its host, made current for it."""
        if self.count_per_host is None:
            return torch.device(self.name)
        if local_rank >= (count := self.count_per_host()):
            raise UserError(f"local rank {local_rank} but only {count} {self.name.upper()} devices")
        device = torch.device(self.name, local_rank)
        self.make_current(device)
        return device

    def init_process_group(self, device: torch.device, timeout: timedelta) -> None:
        """Joins this process to the job's process group, over this kind's transport."""
        import torch.distributed as dist

        options: dict[str, Any] = {"device_id": device} if self.count_per_host is not None else {}
        dist.init_process_group(self.transport, timeout=timeout, **options)


DEVICE_KINDS: dict[str, DeviceKind] = {
    # CPU work is done when the call that enqueued it returns: nothing to wait for.
    "cpu": DeviceKind("cpu", "gloo", lambda: True, lambda device: CpuStreams(), lambda device: None),
    "cuda": DeviceKind(
        "cuda",
        "nccl",
        torch.cuda.is_available,
        CudaStreams,
        torch.cuda.synchronize,
        count_per_host=torch.cuda.device_count,
        make_current=torch.cuda.set_device,
    ),
}


def kind_of(device: torch.device) -> DeviceKind:
    if (kind := DEVICE_KINDS.get(device.type)) is None:
        raise UserError(f"the runtime does not run on {device.type} devices (it knows {', '.join(DEVICE_KINDS)})")
    return kind


def requested_kind(name: str | None) -> DeviceKind:
    """The kind the user asked for (`hir-run --device`), by default CUDA when torch sees a GPU, else CPU."""
    if name is None:
        return DEVICE_KINDS["cuda"] if torch.cuda.is_available() else DEVICE_KINDS["cpu"]
    kind = kind_of(torch_device(name))
    if not kind.is_available():
        raise UserError(f"--device {name}, but torch sees no {name.upper()} device")
    return kind


def torch_device(device: str | torch.device) -> torch.device:
    """
    `torch.device(device)` (a CPU has one device: `cpu:0` is `cpu`, as where torch puts a tensor
    asked for on `cpu:0`); a name torch does not know, or what is no device, is a UserError.
    """
    if not isinstance(device, torch.device):
        if not isinstance(device, str | int) or isinstance(device, bool):
            raise UserError(f"the device must be a torch.device or a name such as 'cpu' or 'cuda:0', got {device!r}")
        try:
            device = torch.device(device)
        except RuntimeError:
            raise UserError(
                f"unknown device {device!r}: the runtime knows {', '.join(DEVICE_KINDS)} (as 'cuda' or 'cuda:0')"
            ) from None
    return torch.device("cpu") if device.type == "cpu" else device


def run_device(device: str | torch.device | None, inputs: Sequence[Any]) -> torch.device:
    """Where a program call runs: the device asked for, else that of the first tensor input, else CPU."""
    if device is not None:
        return torch_device(device)
    for value in inputs:
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


def streams_for(device: torch.device) -> Streams:
    return kind_of(device).make_streams(device)
