"""
How a run is placed: one process on one device, or (under torchrun) one process per device, each
running the same program on its shards (SPMD).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


class Session:
    """The processes and device of a run; single-process unless WORLD_SIZE says otherwise."""

    def __init__(self, device: torch.device, rank: int = 0, world_size: int = 1):
        self.device = device
        self.rank = rank
        self.world_size = world_size

    @classmethod
    def from_environment(cls, device: str | None = None) -> Session:
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device cuda, but torch sees no CUDA device")
        return cls(torch.device(device))

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def describe(self) -> str:
        return f"{self.device}" + (f", rank {self.rank} of {self.world_size}" if self.world_size > 1 else "")

    def run(self, program: Any, inputs: Sequence[Any], num_streams: int = 4) -> list[Any]:
        local = [t.to(self.device) if isinstance(t, torch.Tensor) else t for t in inputs]
        outputs = program(local, device=self.device, num_streams=num_streams)
        self.synchronize()
        return outputs

    def run_reference(self, program: Any, inputs: Sequence[Any]) -> list[Any]:
        return self.run(program, inputs)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def close(self) -> None:
        pass
