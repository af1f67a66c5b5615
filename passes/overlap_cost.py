"""
When overlapping communication with compute pays: the cost model behind `overlap=auto` of
`fusion-stream-overlap` (and `stream-lowering{overlap=auto}`).

A stream-parallel program that communicates can hide at most the shorter of its communication and
its compute behind the other, and pays for the pipeline: a barrier and a launch per pushed chunk,
the host time of a dozen hir ops per iteration, GEMMs split into smaller ones, a final barrier.
So: overlap when the part it can hide, min(communication, compute), is worth more than that cost.

The constants are fits to one table, measured on 2x H200 (NVLink NV18), bf16, K = 8192, D = 2,
N/rank = 4096, with `benchmarks/ag_gemm.py` (docs/benchmarks.md, "Small M"; ms):

    M      GEMM   all-gather  AG then GEMM  copy-engine pipeline
    1024   0.105  0.068       0.160         0.201-0.208
    2048   0.191  0.107       0.281         0.275
    4096   0.362  0.173       0.519         0.449

- GEMM_LATENCY_MS, GEMM_FLOP_PER_MS: the GEMM column is 0.019 ms + flops / 802 TFLOP/s (exact at
  M = 1024 and 4096; 1.39 ms predicted for M=16384 where 1.44 was measured).
- GATHER_LATENCY_MS, GATHER_BYTES_PER_MS: the all-gather column is 0.033 ms + received bytes /
  240 GB/s (exact at M = 1024 and 4096; 0.59 predicted for M=16384 where 0.58 was measured).
- MIN_HIDDEN_MS: what the copy-engine pipeline gained over AG then GEMM, against the shorter of
  the two: M=1024: -0.045 for 0.068 hideable, M=2048: +0.006 for 0.107, M=4096: +0.070 for 0.173.
  The pipeline costs about 0.10-0.11 ms at these sizes; 0.12 ms of hideable time is where it
  starts to win (larger shapes gain far more: 0.39 ms at M=16384, N=4096).
- NCCL: the collective-based pipelines (one NCCL collective per chunk) were slower than the two
  steps one after the other at every size measured, all-gather + GEMM and GEMM + reduce-scatter
  alike (docs/benchmarks.md): their kernels compete with the GEMMs for SMs. So `auto` never
  pipelines communication that the lowering will carry over NCCL. The copy-engine reduce-scatter
  and all-reduce pipelines are not modelled: `auto` leaves functions that reduce over the copy
  engine as written; nor are the ring pipelines (`backend=ring`, NCCL send/receive steps): `auto`
  leaves every function that communicates over the ring as written.

The rates are bf16's; other dtypes use the same byte and flop rates (not measured). Only GEMMs
(matmul, linear) count as compute: elementwise ops are memory-bound and small beside them. The
model decides whether to pipeline; the pushes per shard stay `auto_chunks` of passes/copy_engine.py
and the backend the user's option. The constants were measured on eager runs: replayed as a CUDA
graph the pipeline's host share disappears, so MIN_HIDDEN_MS should be measured again for graphs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType

from hir.dialects import fusion
from hir.dialects.parallel_encoding import layout_of, local_shape
from hir.passes.sharding import is_partial_sum, resharded_operands

GEMM_LATENCY_MS = 0.019
GEMM_FLOP_PER_MS = 802e9
GATHER_LATENCY_MS = 0.033
GATHER_BYTES_PER_MS = 240e6
MIN_HIDDEN_MS = 0.12


@dataclass(frozen=True)
class Estimate:
    """What the model predicts for one function, and its decision."""

    communication_ms: float
    compute_ms: float
    overlap: bool
    reason: str


def element_bytes(t: TensorType) -> int:
    width = getattr(t.element_type, "bitwidth", None) or getattr(t.element_type, "width", None)
    bits = width.data if hasattr(width, "data") else width
    return max(1, int(bits or 32) // 8)


def moved_operands(op: fusion.FusionOp) -> list[TensorType]:
    """The operands the op needs resharded (passes/sharding.py): each an all-gather or an exchange of shards."""
    types = [op.operands[k].type for k in resharded_operands(op)]
    return [t for t in types if isinstance(t, TensorType) and layout_of(t).didx_axis is not None]


def transfer_ms(t: TensorType) -> float:
    """Time to receive the peers' shards of `t` (D - 1 of its D shards)."""
    devices = len(layout_of(t).mesh)
    nbytes = math.prod(t.get_shape()) * element_bytes(t) * (devices - 1) / devices
    return GATHER_LATENCY_MS + nbytes / GATHER_BYTES_PER_MS


def gemm_ms(op: fusion.FusionOp) -> float:
    """A matmul or linear on this device's shards: 2 * (result elements) * (contracted extent) flops."""
    a, out = op.operands[0].type, op.results[0].type
    if not isinstance(a, TensorType) or not isinstance(out, TensorType):
        return 0.0
    contracted = local_shape(a)[-1]
    return GEMM_LATENCY_MS + 2 * math.prod(local_shape(out)) * contracted / GEMM_FLOP_PER_MS


def estimate(function: func.FuncOp, backend: str) -> Estimate | None:
    """The model's prediction and decision for a function; None when it does not communicate."""
    gathered_ms = reduced_ms = compute_ms = 0.0
    for op in function.walk():
        if not isinstance(op, fusion.FusionOp):
            continue
        if is_partial_sum(op):  # an all-reduce or a reduce-scatter
            reduced_ms += transfer_ms(op.operands[0].type)  # type: ignore[arg-type]
        else:
            gathered_ms += sum(transfer_ms(t) for t in moved_operands(op))
        if isinstance(op, fusion.MatmulOp | fusion.LinearOp):
            compute_ms += gemm_ms(op)
    communication_ms = gathered_ms + reduced_ms
    if communication_ms == 0.0:
        return None
    hidden = min(communication_ms, compute_ms)
    summary = f"communication {communication_ms:.3f} ms, GEMMs {compute_ms:.3f} ms"
    if backend == "ring":
        return None  # the ring pipelines: not measured yet, left as written
    if backend == "copy-engine" and reduced_ms:
        return None  # the copy-engine reduce-scatter and all-reduce pipelines: not modelled, left as written
    if backend != "copy-engine":
        return Estimate(
            communication_ms,
            compute_ms,
            False,
            f"{summary}; its collectives go over NCCL, whose per-chunk pipelines never beat the serial form",
        )
    if hidden < MIN_HIDDEN_MS:
        return Estimate(
            communication_ms,
            compute_ms,
            False,
            f"{summary}; at most {hidden:.3f} ms to hide, less than the pipeline's cost ({MIN_HIDDEN_MS} ms)",
        )
    return Estimate(communication_ms, compute_ms, True, f"{summary}; {hidden:.3f} ms to hide")
