"""
When overlapping communication with compute pays: the cost model behind `overlap=auto` of
`fusion-stream-overlap` (and `stream-lowering{overlap=auto}`), and behind the lowering
`hir.compile` picks by default (`choose_lowering`).

For a function that communicates, the model predicts two programs from the device constants of
this machine (passes/device_constants.py, measured by `hir-calibrate`):

- the serial form (stream axes serial): each all-gather or reduce-scatter is one NCCL collective
  on the caller's stream, before or after its GEMM: the times add up;
- the copy-engine pipeline: each GEMM that consumes a gathered operand, or produces a partial sum
  to be reduce-scattered, is split into one piece per shard and stream chunk, and each device
  pushes its pieces into its peers' symmetric memory on the copy engines while it computes the
  others. A pair takes max(GEMM pieces, pushes + one GEMM piece) (the first or last piece cannot
  hide), plus a barrier per stream chunk and one to release the buffers. Every piece adds a GEMM
  launch's latency.

Eager, a run also pays its host time: the ops before the first launch delay the whole run, and
the GPU cannot finish before the host has enqueued everything (`max(GPU, host)`). Replayed as a
CUDA graph (`replay=true`) the host's share disappears.

The pipeline is chosen only when it is predicted faster than the serial form by MARGIN (3 %):
the serial form is what eager PyTorch runs, so a wrong "serial" costs a missed gain, a wrong
"pipeline" a slowdown. NCCL per-chunk pipelines (one collective per chunk) were slower than the
serial form at every size measured (docs/benchmarks.md): their kernels compete with the GEMMs for
SMs, so `auto` never pipelines over NCCL, and never builds the ring pipelines (`backend=ring`),
which have not been measured on GPUs.

Only GEMMs (matmul, linear) count as compute: elementwise ops are memory-bound and small beside
them. The rates are bf16's; other dtypes use the same byte and flop rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from hir.dialects import fusion
from hir.dialects.parallel_encoding import layout_of, local_shape
from hir.dialects.shape_rules import operand_axis_to_result_axis
from hir.passes.device_constants import DeviceConstants, load_constants
from hir.passes.sharding import is_partial_sum, resharded_operands
from hir.passes.symmetric_memory import byte_width

MARGIN = 0.03
"""The pipeline must be predicted this much faster than the serial form to be chosen."""
PIPELINE_PROLOGUE_OPS = 20
"""Host ops of a copy-engine pipeline before its first launch (device index, symmetric buffers,
peer views, the stream fork), counted from the lowered all-gather + GEMM and GEMM + reduce-scatter."""
OPS_PER_PIECE = 10
"""Host ops per GEMM piece of a pipeline: its views, push or add, launch, stream switch and join."""
OPS_PER_SERIAL_OP = 2
"""Host ops per fusion op of the serial form: an allocation and a launch (a collective and its wait)."""


@dataclass(frozen=True)
class Transfer:
    """One all-gather feeding a GEMM, or one reduce-scatter of a GEMM's partial sums."""

    kind: str
    """`gather` or `reduce`."""
    bytes_per_device: float
    """What each device receives (a gather) or sends (a reduce-scatter)."""
    devices: int
    gemm_flops: float
    """The GEMM it overlaps with (0 when it is next to none)."""
    pieces: int
    """The GEMM pieces of the pipeline: one per shard and stream chunk; 0 where the copy-engine
    lowering does not pipeline it (a whole all-gather, over NCCL, as in the serial form)."""


@dataclass(frozen=True)
class Estimate:
    """What the model predicts for one function, and its decision."""

    communication_ms: float
    """The serial form's collectives."""
    compute_ms: float
    """The GEMMs, whole."""
    serial_ms: float
    pipelined_ms: float | None
    """The copy-engine pipeline; None where the backend builds none the model knows."""
    overlap: bool
    reason: str


def gathered_bytes(t: TensorType) -> float:
    """Bytes each device receives to hold all of `t`: D - 1 of its D shards."""
    devices = len(layout_of(t).mesh)
    return math.prod(t.get_shape()) * byte_width(t) * (devices - 1) / devices


def reduced_bytes(partial: TensorType) -> float:
    """
    Bytes each device sends in a reduce-scatter of `partial` (its didx axis holds the devices'
    partial sums, so each holds 1/D of the global type, and keeps 1/D of that).
    """
    devices = len(layout_of(partial).mesh)
    return math.prod(partial.get_shape()) * byte_width(partial) / devices * (devices - 1) / devices


def gemm_flops(op: Operation) -> float:
    """A matmul or linear on this device's shards: 2 * (result elements) * (contracted extent)."""
    if not isinstance(op, fusion.MatmulOp | fusion.LinearOp):
        return 0.0
    a, out = op.operands[0].type, op.results[0].type
    if not isinstance(a, TensorType) or not isinstance(out, TensorType):
        return 0.0
    return 2.0 * math.prod(local_shape(out)) * local_shape(a)[-1]


def stream_iterations(t: TensorType) -> int:
    """Iterations of the stream loop over `t`: its stream axis's extent or chunk count (1 without one)."""
    layout = layout_of(t)
    if (axis := layout.stream_axis) is None:
        return 1
    return layout.stream_chunks or t.get_shape()[axis]


def gather_pieces(op: fusion.FusionOp, k: int, devices: int) -> int:
    """
    GEMM pieces of the copy-engine pipeline of a gather of operand #k. When the stream loop
    iterates over the gathered shards themselves (its axis is the one the didx axis maps to), one
    per iteration: each shard's GEMM as it lands. When it iterates over S > 1 chunks of rows, one
    per shard and chunk. With a single iteration (rows in one chunk, S = 1) nothing is left to
    overlap the all-gather with: the copy-engine lowering gathers the operand whole, over NCCL,
    as the serial form does (0 pieces).
    """
    result = op.results[0].type
    assert isinstance(result, TensorType)
    iterations = stream_iterations(result)
    didx = layout_of(op.operands[k].type).didx_axis
    stream = layout_of(result).stream_axis
    if didx is not None and stream is not None and operand_axis_to_result_axis(op.axis_map(), k, didx) == stream:
        return iterations
    return devices * iterations if iterations > 1 else 0


@dataclass(frozen=True)
class Workload:
    transfers: tuple[Transfer, ...]
    gemms: tuple[float, ...]
    """Flops of every GEMM of the function."""
    fusion_ops: int


def workload(function: func.FuncOp) -> Workload:
    transfers: list[Transfer] = []
    gemms: list[float] = []
    count = 0
    for op in function.body.walk():
        if not isinstance(op, fusion.FusionOp):
            continue
        count += 1
        flops = gemm_flops(op)
        if flops:
            gemms.append(flops)
        if is_partial_sum(op):  # a reduce-scatter (or all-reduce) of the partial sums its producer made
            partial = op.operands[0].type
            assert isinstance(partial, TensorType)
            producer = op.operands[0].owner
            devices = len(layout_of(partial).mesh)
            pieces = devices * stream_iterations(op.results[0].type)  # type: ignore[arg-type]
            transfers.append(Transfer("reduce", reduced_bytes(partial), devices, gemm_flops(producer), pieces))
            continue
        for k in resharded_operands(op):
            t = op.operands[k].type
            if not isinstance(t, TensorType) or layout_of(t).didx_axis is None:
                continue
            devices = len(layout_of(t).mesh)
            transfers.append(Transfer("gather", gathered_bytes(t), devices, flops, gather_pieces(op, k, devices)))
    return Workload(tuple(transfers), tuple(gemms), count)


def gemm_ms(flops: float, constants: DeviceConstants, pieces: int = 1) -> float:
    return pieces * constants.gemm_latency_ms + flops / constants.gemm_flop_per_ms


def nccl_ms(t: Transfer, constants: DeviceConstants) -> float:
    """The transfer as one NCCL collective."""
    return collective_ms(t.bytes_per_device, constants)


def collective_ms(bytes_per_device: float, constants: DeviceConstants) -> float:
    """One NCCL collective in which each device sends or receives `bytes_per_device`."""
    return constants.nccl_latency_ms + bytes_per_device / constants.nccl_bytes_per_ms


def serial_ms(work: Workload, constants: DeviceConstants, replay: bool) -> tuple[float, float]:
    """(the serial form's time, its collectives' share)."""
    communication = sum(nccl_ms(t, constants) for t in work.transfers)
    gpu = sum(gemm_ms(f, constants) for f in work.gemms) + communication
    if replay:
        return gpu, communication
    ops = OPS_PER_SERIAL_OP * (work.fusion_ops + len(work.transfers))
    return max(gpu, ops * constants.host_ms_per_op), communication


def pipelined_ms(work: Workload, constants: DeviceConstants, replay: bool) -> float:
    """The copy-engine pipeline: each transfer it pipelines overlapped with its GEMM, piece by piece."""
    gpu = sum(gemm_ms(f, constants) for f in work.gemms)
    pieces_total = 0
    for t in work.transfers:
        if not t.pieces:  # gathered whole over NCCL before its GEMM, as in the serial form
            gpu += nccl_ms(t, constants)
            continue
        pieces, chunks = t.pieces, max(1, t.pieces // t.devices)
        pieces_total += pieces
        compute = gemm_ms(t.gemm_flops, constants, pieces) if t.gemm_flops else 0.0
        pushes = (t.devices - 1) * chunks
        push_ms = pushes * constants.copy_engine_latency_ms + t.bytes_per_device / constants.copy_engine_bytes_per_ms
        barriers = (chunks + 1) * constants.barrier_ms
        whole = gemm_ms(t.gemm_flops, constants) if t.gemm_flops else 0.0
        # The pair replaces its whole GEMM: the pieces, or the pushes and one piece, which cannot hide.
        gpu += max(compute, push_ms + compute / pieces) + barriers - whole
    if replay:
        return gpu
    pipelined = sum(1 for t in work.transfers if t.pieces)
    prologue = PIPELINE_PROLOGUE_OPS * pipelined * constants.host_ms_per_op
    host = prologue + (OPS_PER_PIECE * pieces_total + OPS_PER_SERIAL_OP * work.fusion_ops) * constants.host_ms_per_op
    return prologue + max(gpu, host - prologue)


def estimate(
    function: func.FuncOp, backend: str, constants: DeviceConstants | None = None, replay: bool = False
) -> Estimate | None:
    """The model's prediction and decision for a function; None when it does not communicate."""
    if backend == "ring":
        return None  # the ring pipelines: not measured yet, left as written
    constants = constants or load_constants()
    work = workload(function)
    if not work.transfers:
        return None
    serial, communication = serial_ms(work, constants, replay)
    compute = sum(gemm_ms(f, constants) for f in work.gemms)
    summary = f"communication {communication:.3f} ms, GEMMs {compute:.3f} ms, serial {serial:.3f} ms"
    if backend != "copy-engine":
        return Estimate(
            communication,
            compute,
            serial,
            None,
            False,
            f"{summary}; its collectives go over NCCL, whose per-chunk pipelines never beat the serial form",
        )
    pipelined = pipelined_ms(work, constants, replay)
    summary += f", copy-engine pipeline {pipelined:.3f} ms"
    if pipelined < serial * (1 - MARGIN):
        return Estimate(communication, compute, serial, pipelined, True, f"{summary}: pipeline")
    why = f"{summary}: serial (the pipeline gains less than {MARGIN:.0%})"
    return Estimate(communication, compute, serial, pipelined, False, why)
