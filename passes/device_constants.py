"""
The device constants the overlap cost model (passes/overlap_cost.py) predicts with: GEMM
throughput, NCCL and copy-engine transfer rates, the symmetric-memory barrier and the host's cost
per hir op. They are measured once per machine by `hir-calibrate` (tools/calibrate.py) and cached
in a JSON file; the passes read that file, and fall back to the built-in constants (measured on
2x H200 with NVLink) where there is none.

Where the file is: `$HIR_DEVICE_CONSTANTS` when set (a path, or `builtin` for the built-in
constants whatever the cache holds), else `$HIR_CACHE_DIR/device-constants.json`, else
`~/.cache/hir/device-constants.json`. The passes never import torch: the file says which machine
it was measured on, and the machine's own cache is the one they read.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

ENVIRONMENT_VARIABLE = "HIR_DEVICE_CONSTANTS"
CACHE_DIR_VARIABLE = "HIR_CACHE_DIR"
FILE_NAME = "device-constants.json"


@dataclass(frozen=True)
class DeviceConstants:
    """Rates and latencies of one machine; times in ms, rates per ms."""

    machine: str
    """What they were measured on (GPU model and count, torch version)."""
    gemm_latency_ms: float
    gemm_flop_per_ms: float
    """A bf16 GEMM of F flops takes gemm_latency_ms + F / gemm_flop_per_ms."""
    nccl_latency_ms: float
    nccl_bytes_per_ms: float
    """An NCCL all-gather or reduce-scatter that receives (or reduces) B bytes per device."""
    copy_engine_latency_ms: float
    copy_engine_bytes_per_ms: float
    """Each device pushing B bytes to its peers' symmetric memory at once, on the copy engines."""
    barrier_ms: float
    """One symmetric-memory barrier over the mesh."""
    host_ms_per_op: float
    """Host time per hir op of an eager run (launches, stream switches, views)."""
    source: str = "built-in"
    """Where the constants were read from: `built-in` or the cache file's path."""

    def to_json(self) -> str:
        values = {k: v for k, v in asdict(self).items() if k != "source"}
        return json.dumps(values, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> DeviceConstants:
        try:
            values = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{source}: not a JSON file of device constants ({err}; recalibrate: hir-calibrate)"
            ) from None
        if not isinstance(values, dict):
            raise ValueError(f"{source}: not a JSON object of device constants (recalibrate: hir-calibrate)")
        names = {f.name for f in fields(cls)} - {"source"}
        missing = sorted(names - set(values))
        if missing:
            raise ValueError(f"{source}: device constants lack {', '.join(missing)} (recalibrate: hir-calibrate)")
        for name in names - {"machine"}:
            if not isinstance(values[name], int | float) or values[name] < 0:
                raise ValueError(f"{source}: {name} must be a non-negative number, got {values[name]!r}")
        return cls(**{k: values[k] for k in names}, source=source)


BUILTIN = DeviceConstants(
    machine="2x NVIDIA H200, NVLink (built-in)",
    # 0.019 ms + flops / 802 TFLOP/s: exact at M = 1024 and 4096 (N = 4096, K = 8192), 1.39 ms
    # predicted for M = 16384 where 1.44 was measured.
    gemm_latency_ms=0.019,
    gemm_flop_per_ms=802e9,
    # All-gather of [M/2, 8192] bf16 shards: 0.033 ms + received bytes / 240 GB/s.
    nccl_latency_ms=0.033,
    nccl_bytes_per_ms=240e6,
    copy_engine_latency_ms=0.010,
    copy_engine_bytes_per_ms=300e6,
    barrier_ms=0.012,
    host_ms_per_op=0.0036,
)
"""Measured on 2x H200 (NVLink NV18), bf16, torch 2.11: benchmarks/ag_gemm.py and host_overhead.py."""


def cache_path() -> Path:
    """Where `hir-calibrate` writes this machine's constants and the passes read them."""
    directory = os.environ.get(CACHE_DIR_VARIABLE)
    base = Path(directory) if directory else Path.home() / ".cache" / "hir"
    return base / FILE_NAME


def load_constants() -> DeviceConstants:
    """This machine's constants: `$HIR_DEVICE_CONSTANTS`, the cache, else the built-in ones."""
    chosen = os.environ.get(ENVIRONMENT_VARIABLE)
    if chosen == "builtin":
        return BUILTIN
    path = Path(chosen) if chosen else cache_path()
    if not path.is_file():
        if chosen:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}={chosen}: no such file (or `builtin`)")
        return BUILTIN
    return DeviceConstants.from_json(path.read_text(), str(path))


def save_constants(constants: DeviceConstants, path: Path | None = None) -> Path:
    """Writes the constants atomically (several processes may read the cache meanwhile)."""
    target = path or cache_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(constants.to_json())
    temporary.replace(target)
    return target


def with_source(constants: DeviceConstants, source: str) -> DeviceConstants:
    return replace(constants, source=source)
