"""
`fusion-stream-overlap{overlap=always|auto|never|by-shard backend=nccl|copy-engine|ring replay=false|true}`:
whether a fusion function's stream axes are pipelined at all, and over what.

- `always` (the default) leaves the function as written: every stream axis becomes a host loop over
  streams.
- `never` makes every stream axis serial (`stream` and `stream(N)` become `serial`), so the
  function is lowered to whole collectives and whole launches on the caller's stream: for the
  all-gather + GEMM, one all-gather then one GEMM.
- `auto` asks the cost model (passes/overlap_cost.py) whether a function that communicates gains
  from overlapping its communication with its compute on this `backend`, and makes its stream
  axes serial when it does not. Functions that do not communicate are left as written.
  `replay=true` predicts for a program replayed as a CUDA graph, whose host time does not count.
- `by-shard` moves stream axes of extent 1 (rows in one chunk) onto the devices' shards, so the
  loop pipelines the all-gather and the reduce-scatter shard by shard (passes/stream_by_shard.py).

`choose_lowering` makes the same decision for a whole module and also picks the backend and,
where the rows are in one chunk, whether to pipeline by shard: what `hir.compile` lowers with on a
GPU unless told otherwise.

The serial form must be lowerable: a gathered operand whose didx axis has a larger axis before it
(the chunked form `A[S, didx, M/(S*D), K]`, S > 1) would need an all-gather along an inner axis,
which the collectives do not take. `never` reports such a function; `auto` keeps its pipeline.

Cost: linear in the module. `always` (the default) returns at once; otherwise each function's ops
are visited a constant number of times (whether it has a stream axis, the cost model's sums, the
serial form's check, and the retyping of its values).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from hir.diagnostics import located
from hir.dialects import fusion
from hir.dialects.functions import is_fusion_function
from hir.dialects.parallel_encoding import SERIAL, STREAM, ParallelAttr, layout_of
from hir.passes.device_constants import DeviceConstants, load_constants
from hir.passes.lower_communication import BACKENDS
from hir.passes.overlap_cost import MARGIN, Estimate, estimate
from hir.passes.sharding import is_partial_sum, resharded_operands
from hir.passes.stream_by_shard import can_pipeline_by_shard, pipeline_by_shard, values_of
from hir.pipeline import one_of, require_one_of

OVERLAP_MODES = ("always", "auto", "never", "by-shard")


def without_stream_axis(t: Attribute) -> Attribute:
    """The tensor type with its stream axis serial (the encoding dropped when nothing else is left)."""
    if not isinstance(t, TensorType) or not isinstance(enc := t.encoding, ParallelAttr) or enc.stream_axis is None:
        return t
    kinds = [SERIAL if k == STREAM else k for k in enc.axis_kinds]
    if set(kinds) == {SERIAL} and not enc.mesh_ids:
        return TensorType(t.element_type, t.get_shape())
    return TensorType(t.element_type, t.get_shape(), ParallelAttr(kinds, None, enc.mesh_ids))


def has_stream_axis(function: func.FuncOp) -> bool:
    return any(without_stream_axis(v.type) is not v.type for v in values_of(function))


def serial_form_blocker(function: func.FuncOp) -> tuple[Operation, str] | None:
    """An op whose serial form the lowering could not take, and why; None when there is none."""
    for op in function.body.walk():
        if not isinstance(op, fusion.FusionOp):
            continue
        if is_partial_sum(op):
            # A sum over the didx axis reduces whole buffers: an all-reduce, or a reduce-scatter,
            # which scatters along the result's didx axis and needs it outermost too.
            t = op.results[0].type
            assert isinstance(t, TensorType)
            didx = layout_of(t).didx_axis
            outer = [] if didx is None else [d for d in t.get_shape()[:didx] if d != 1]
            if outer:
                return op, (
                    f"its partial sums would be reduce-scattered whole along the result's didx axis {didx}, which "
                    f"has axes of extent {', '.join(map(str, outer))} before it (collectives need the scattered "
                    "axis outermost)"
                )
            continue
        for k in resharded_operands(op):
            t = op.operands[k].type
            assert isinstance(t, TensorType)
            didx = layout_of(t).didx_axis
            if didx is None:
                continue
            outer = [d for d in t.get_shape()[:didx] if d != 1]
            if outer:
                return op, (
                    f"operand #{k} would be gathered whole along its didx axis {didx}, which has axes of extent "
                    f"{', '.join(map(str, outer))} before it (collectives need the gathered axis outermost)"
                )
    return None


def make_serial(function: func.FuncOp) -> None:
    """Every stream axis of the function's values becomes serial, in place (ops and locations kept)."""
    for value in values_of(function):
        new = without_stream_axis(value.type)
        if new is not value.type:
            Rewriter.replace_value_with_new_type(value, new)
    function.update_function_type()


@dataclass(frozen=True)
class StreamOverlapPass(ModulePass):
    """
    Decides whether stream axes are pipelined: as written, never, or as the cost model says.

    `overlap=always` leaves them, `never` makes them serial, `auto` asks passes/overlap_cost.py
    for functions that communicate over `backend`.
    """

    name = "fusion-stream-overlap"

    overlap: str = one_of("always", OVERLAP_MODES)
    backend: str = one_of("nccl", BACKENDS)
    replay: bool = False

    def __post_init__(self) -> None:
        # Checked when the pass is built, so a pipeline with a bad option fails before any input is read.
        require_one_of("overlap", self.overlap, OVERLAP_MODES)
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown communication backend '{self.backend}', expected one of {', '.join(BACKENDS)}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.overlap == "always":
            return
        if self.overlap == "by-shard":
            for function in [f for f in op.walk() if is_fusion_function(f)]:
                assert isinstance(function, func.FuncOp)
                if can_pipeline_by_shard(function):
                    pipeline_by_shard(function)
            return
        constants = None
        if self.overlap == "auto":
            try:
                constants = load_constants()
            except ValueError as err:  # a cache or $HIR_DEVICE_CONSTANTS file that does not read
                raise PassFailedException(f"overlap=auto: {err}") from None
        for function in [f for f in op.walk() if is_fusion_function(f)]:
            assert isinstance(function, func.FuncOp)
            if not has_stream_axis(function):
                continue
            if self.overlap == "auto":
                prediction = estimate(function, self.backend, constants, replay=self.replay)
                if prediction is None or prediction.overlap:
                    continue
            if (blocker := serial_form_blocker(function)) is not None:
                if self.overlap == "auto":
                    continue  # the pipeline is the only form the lowering takes
                where, why = blocker
                raise PassFailedException(located(where, f"overlap=never: cannot make the stream axes serial: {why}"))
            make_serial(function)


@dataclass(frozen=True)
class Lowering:
    """The lowering `choose_lowering` picks for a module: stream-lowering's `backend` and `overlap`."""

    backend: str
    overlap: str
    """`always` (the stream axes as written: the pipeline), `never` (the serial form) or
    `by-shard` (the copy-engine pipeline over the devices' shards, for rows in one chunk)."""
    reason: str
    serial_ms: float | None = None
    pipelined_ms: float | None = None
    """The model's predictions, summed over the functions that communicate."""
    has_serial_form: bool = True
    by_shard_ms: float | None = None
    """The model's prediction of the pipeline by shard, where the module has one."""

    def options(self) -> dict[str, str]:
        return {"backend": self.backend, "overlap": self.overlap}

    @property
    def predicted_ms(self) -> float | None:
        return {"never": self.serial_ms, "always": self.pipelined_ms, "by-shard": self.by_shard_ms}.get(self.overlap)

    def others(self) -> list[Lowering]:
        """The lowerings the model did not pick, each with its prediction (none without communication)."""
        if self.serial_ms is None or self.pipelined_ms is None:
            return []
        forms = [("copy-engine", "always", "the copy-engine pipeline")]
        if self.has_serial_form:
            forms.append(("nccl", "never", "the serial form"))
        if self.by_shard_ms is not None:
            forms.append(("copy-engine", "by-shard", "the copy-engine pipeline by shard"))
        keep = (self.serial_ms, self.pipelined_ms, self.has_serial_form, self.by_shard_ms)
        return [Lowering(b, o, why, *keep) for b, o, why in forms if o != self.overlap]

    def other(self) -> Lowering | None:
        """The first of `others()`: the serial form of a pipeline, the copy-engine pipeline of the serial form."""
        others = self.others()
        return others[0] if others and (self.overlap != "never" or self.has_serial_form) else None


def _by_shard_predictions(
    module: ModuleOp, names: list[str], constants: DeviceConstants, replay: bool
) -> list[Estimate] | None:
    """The model's predictions of the named functions pipelined by shard (on a copy), or None where one cannot be."""
    copy = module.clone()
    found = {f.sym_name.data: f for f in copy.walk() if isinstance(f, func.FuncOp) and is_fusion_function(f)}
    predictions = []
    for name in names:
        function = found[name]
        if not can_pipeline_by_shard(function):
            return None
        pipeline_by_shard(function)
        prediction = estimate(function, "copy-engine", constants, replay)
        if prediction is None or prediction.pipelined_ms is None:
            return None
        predictions.append(prediction)
    return predictions


def choose_lowering(module: ModuleOp, replay: bool, constants: DeviceConstants | None = None) -> Lowering:
    """
    Whether to pipeline at all, and how. The serial form over NCCL collectives unless the model
    predicts that a copy-engine pipeline (as written, or by shard where the rows are in one chunk)
    beats it by MARGIN in the functions that communicate, or the serial form cannot be lowered
    (then the faster pipeline, which the measurements put ahead of NCCL's per-chunk pipelines). A
    module that does not communicate keeps its stream axes (overlap=always).
    """
    constants = constants or load_constants()
    functions = [f for f in module.walk() if isinstance(f, func.FuncOp) and is_fusion_function(f)]
    predictions = [(f, p) for f in functions if (p := estimate(f, "copy-engine", constants, replay)) is not None]
    if not predictions:
        return Lowering("nccl", "always", "no communication: the stream axes stay as written")
    described = "; ".join(f"@{f.sym_name.data}: {p.reason}" for f, p in predictions)
    source = f"{'replayed' if replay else 'eager'}, constants of {constants.machine}"
    serial = sum(p.serial_ms for _, p in predictions)
    pipelined = sum(p.pipelined_ms or 0.0 for _, p in predictions)
    by_shard = _by_shard_predictions(module, [f.sym_name.data for f, _ in predictions], constants, replay)
    by_shard_ms = None if by_shard is None else sum(p.pipelined_ms or 0.0 for p in by_shard)
    if by_shard_ms is not None:
        described += f"; by shard: copy-engine pipeline {by_shard_ms:.3f} ms"
    blocked = [f for f, _ in predictions if has_stream_axis(f) and serial_form_blocker(f) is not None]
    keep = (serial, pipelined, not blocked, by_shard_ms)
    best_pipeline = "by-shard" if by_shard_ms is not None and by_shard_ms < pipelined else "always"
    best_ms = by_shard_ms if best_pipeline == "by-shard" else pipelined
    if blocked:
        names = ", ".join(f"@{f.sym_name.data}" for f in blocked)
        why = f"{described}; {names}: no serial form for this layout, so the pipeline ({source})"
        return Lowering("copy-engine", best_pipeline, why, *keep)
    if all(p.overlap for _, p in predictions) or (best_ms is not None and best_ms < serial * (1 - MARGIN)):
        return Lowering("copy-engine", best_pipeline, f"{described}: pipeline ({source})", *keep)
    return Lowering("nccl", "never", f"{described} ({source})", *keep)
