"""
`hir.compile`: import a torch program, lower it with a pass pipeline, and call it like the original.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import BlockArgument
from xdsl.utils.exceptions import PassFailedException

from hir.diagnostics import LocatedError, located_text, location_of
from hir.dialects import fusion
from hir.frontend.autocast import autocast_state
from hir.frontend.autotune import WARMUP_SECONDS, any_rank, medians_interleaved, slowest_rank, synchronize_ranks
from hir.frontend.batch_streams import batch_stream_candidates
from hir.frontend.errors import FrontendError, NotPickled, at_line, user_stacklevel
from hir.frontend.function_state import function_environment
from hir.frontend.handed_outputs import HandedOutputs, marks_stale
from hir.frontend.hot_replay import MISSED, HotReplay, hot_replay, replays
from hir.frontend.importer import (
    ImportedProgram,
    InputSource,
    Layouts,
    Signature,
    SingleDevice,
    _per_entry,
    capturing_module,
    check_example_args,
    import_program,
    keyword_only_count,
    static_defaults,
    tensor_defaults,
    with_static_defaults,
)
from hir.frontend.layouts import check_mesh, check_param_layouts
from hir.frontend.lowering_choice import DEFAULT_PIPELINE, candidates, choose_options
from hir.frontend.module_state import AttributeWatch, HeldState, TrainFlags, removed, state_table, take
from hir.frontend.pytree_args import LateContainers, PytreeFunction, has_containers, refuse_on_mesh
from hir.frontend.rank_agreement import ValueCheck
from hir.frontend.specialize import (
    DEFAULT_MAX_SPECIALIZATIONS,
    CallError,
    CallSignature,
    Specializations,
    arg_spec,
    fast_key,
    spec_of,
)
from hir.passes.hide_communication import HideCommunicationPass
from hir.passes.stream_overlap import Lowering
from hir.runtime.cuda_graph import CaptureError

if TYPE_CHECKING:
    from hir.frontend.training import TrainingFunction

EAGER_MARGIN = 0.02
"""The kept lowering runs eagerly instead of replayed when measured this much faster so (noise aside)."""
LAYOUT_MARGIN = 0.03
"""
A candidate with the batch in stream chunks is kept only when measured this much faster than the
other lowerings: it runs on several streams, so its buffers are not released after their last use
(runtime/release.py) and a graph of it holds every intermediate, several times the memory.
"""


def pipeline_with_options(pipeline: str, options: Mapping[str, Any]) -> str:
    """
    `stream-lowering` + {backend: "copy-engine", propagate_sharding: True} ->
    `stream-lowering{backend=copy-engine propagate-sharding=true}`.
    """
    if not options:
        return pipeline
    if "{" in pipeline or "," in pipeline:
        raise FrontendError(
            f"<compile>: error: pass options {sorted(options)} go with a single pass, not with the pipeline "
            f"{pipeline!r}: write them into it"
        )
    return pipeline + "{" + " ".join(f"{k.replace('_', '-')}={_option_text(v)}" for k, v in options.items()) + "}"


def _option_text(value: Any) -> str:
    """An option value as `-p` spells it: booleans are `true` / `false`."""
    return str(value).lower() if isinstance(value, bool) else str(value)


class CudaGraphFallbackWarning(RuntimeWarning):
    """`hir.compile`'s automatic CUDA-graph mode could not capture a function: it runs without a graph."""


def _no_ranks() -> None:
    """Nothing to wait for: a one-device program is timed by its own process."""


def graph_by_default(device: torch.device) -> bool:
    """
    Whether `cuda_graph=None` (automatic) captures a call on `device`: on a GPU, unless the caller's
    stream is being captured already (a call inside the caller's own CUDA graph is recorded there).
    """
    return device.type == "cuda" and not torch.cuda.is_current_stream_capturing()


class CompiledFunction(NotPickled):
    """Takes and returns torch tensors like the function it was compiled from (its local shards on a mesh)."""

    def __init__(
        self, imported: ImportedProgram, pipeline: str, num_streams: int, name: str, cuda_graph: bool | None = None
    ):
        import hir

        self.signature = imported.signature
        self.mode = imported.mode
        self.num_streams = num_streams
        self.name = name
        """The compiled function's name, as `<fn>` (also the name of the imported module's text)."""
        self.cuda_graph = cuda_graph
        """
        True: each call replays the CUDA graph of its input signature (captured at the first such
        call); False: each call runs the program; None (automatic): a graph for calls on a GPU, and
        a run, after one `CudaGraphFallbackWarning`, once a capture was refused or failed.
        """
        self.lowering: Lowering | None = None
        """The cost model's choice of backend and overlap, with its reason (`compile_torch` on a GPU
        when the caller names neither); None where the pipeline was used as given."""
        self.eager_reason: str | None = None
        """Why the automatic mode runs this function without a graph (the located error), or None."""
        self.eager_measured_faster = False
        """Whether the first call measured the kept lowering faster run eagerly than replayed (by
        EAGER_MARGIN): the automatic mode then runs this specialization without a graph."""
        self.replay_measured = False
        """Whether a first call on a GPU has timed the program replayed and eagerly (automatic mode)."""
        self.graph_decision: str | None = None
        """The automatic mode's replayed and eager times and its verdict, once measured."""
        self.measure_first_call = True
        """Whether the first call may time the program (`measure_candidates`): False keeps replaying."""
        self.replay_must_win = False
        """Whether a replay must be EAGER_MARGIN faster than the fastest eager run to be kept (a
        training program's: its replay copies the saved activations and holds a second copy of
        them), rather than an eager run EAGER_MARGIN faster than the fastest replay."""
        self.pipeline = pipeline
        self.fusion_text, self._located = located_text(imported.module, name)
        """The imported fusion-level module, as text (what `hir-opt` takes); a copy of the module
        whose ops are located at their lines of that text (each lowering starts from a copy of it)."""
        self._imported = imported
        """Kept for the user's lines of its ops (`_in_users_terms`)."""
        self.module: ModuleOp = self._lowered(pipeline)
        """The lowered module."""
        self.program = hir.compile_program(self.module)
        self.candidates: list[tuple[str, Lowering]] = []
        """Other lowerings (pipeline text, the model's description) that the first call measures against this one."""
        self.layout_candidates: list[tuple[str, CompiledFunction]] = []
        """
        The same function imported with other layouts (frontend/batch_streams.py: the batch in
        stream chunks), each with what it is, which the first call measures against this one;
        the one kept lends this function its program.
        """
        self.measured: dict[str, float] = {}
        """What the first call measured, ms per lowering (pipeline text), when there were candidates."""
        self._shared_state: dict[tuple[str, torch.device], HeldState] = {}
        """The parameters and buffers as held per device (moved, sharded), by name, shared by every specialization."""
        self._constants: dict[tuple[int, torch.device], HeldState] = {}
        """The constants no module attribute holds, as held per device, by input position: this
        specialization's own (another trace's `torch.tensor([x.shape[0]])` is another value)."""
        self._module: torch.nn.Module | None = None
        self._ties: Ties = []
        """Tensors the module held under several names when traced, which each call checks it still does."""
        """The module compiled, whose parameters and buffers each call reads as they are now; None: a function."""
        self._input_plans: dict[torch.device, Any] = {}
        """Per device: the program's inputs with the constants in place, where the user's tensors go and
        where the module's come from (`_input_plan`)."""
        self._communicator: Any = None
        self._replay: _Replay | None = None
        """The last call's replay, which a call with the same arguments' key runs without the checks."""
        self.lent_outputs: frozenset[int] = frozenset()
        """
        Outputs a replay returns as views of the graph's output buffers, not copies: a training
        forward's saved activations, which only its backward reads. Before a replay overwrites the
        buffers, the tensors lent by the one before that are still referenced (a second
        micro-batch's forward before the first one's backward) are moved to memory of their own.
        """
        self.borrowed_inputs: frozenset[int] = frozenset()
        """
        User inputs (by position) that a graph reads where they are, not from copies: a training
        backward's saved activations, lent by its forward's replay. A call that passes one at other
        memory than at the capture (the forward ran eagerly, or moved it) runs without the graph.
        """
        self._lent: list[weakref.ref[torch.Tensor]] = []
        self.hands_out_results = True
        """
        Whether a replay's results are handed out as aliases of the graph's buffers, moved only
        where the caller still holds them at the next replay (frontend/handed_outputs.py), rather
        than copied at every call: inference programs (on a mesh, where torch can mark a result
        stale: `_hands_out_here`). Off for a training step's programs (their forward lends what
        its backward reads).
        """
        self._handed = HandedOutputs()
        self._hot: HotReplay | None = None
        """The call path of the last call's replay (frontend/hot_replay.py), for the next calls like it."""
        self._held_calls = 0
        """Calls in a row that ran eagerly because the caller held views of a replay's results."""
        self._moved_calls = 0
        """Calls in a row that passed a borrowed input elsewhere than the graph reads it."""
        self._borrowed_at: dict[int, int] | None = None
        """Program input -> the data pointer the graph reads a borrowed input at."""
        self.modes: TrainEvalModes | None = None
        """A module's functions by its train / eval flags (on the function compiled first)."""
        self.specializations: Specializations | None = None
        """
        The specializations by input signature (frontend/specialize.py), this one (the example
        arguments') among them; the attributes above describe this one. None on the others.
        """
        self.containers: LateContainers | None = None
        """Compiles the function for a call whose arguments are containers of tensors (set on the first one)."""

    def _lowered(self, pipeline: str) -> ModuleOp:
        import hir

        module = self._located.clone()
        try:
            hir.run_pipeline(module, pipeline, verify_each=False)
        except hir.PipelineError as err:
            raise FrontendError(f"<compile>: error: {err}") from None
        except LocatedError as err:  # a pass's error at an op: the user's line it was imported from
            raise self._in_users_terms(err) from None
        except PassFailedException as err:  # a pass's refusal, `<fn>:line:col: error: ...` of fusion_text
            raise FrontendError(self._refusal_in_users_terms(str(err))) from None
        return module

    def _refusal_in_users_terms(self, message: str) -> str:
        """A pass's located message (`<fn>:line:col: error: ...`) told at the user's line of that op, where known."""
        where, sep, rest = message.partition(": error: ")
        return (self._at_users_line(where, rest) if sep else None) or message

    def _at_users_line(self, where: str, message: str) -> str | None:
        """
        `message` about the op at `where` (`<fn>:line:col` of `fusion_text`) told at the user's
        line that op was imported from, with that line of code; None where unknown.
        """
        prefix = f"{self.name}:"
        line = where[len(prefix) :].split(":")[0]
        if not where.startswith(prefix) or not line.isdigit() or "\n" in message:
            return None
        source = self._origin_lines.get(int(line))
        if source is None:
            return None
        return at_line(source, message) + f"\n  (at {where} of `fusion_text`)"

    def __call__(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        hot = self._hot
        if hot is not None:
            if not kwargs and (result := hot(self, args)) is not MISSED:
                return result
            self._hot = None
        if self.containers is not None and self.containers.wanted(args, kwargs):  # `past_key_values` after None
            return self.containers(args, kwargs)
        if self.specializations is not None:  # by name, and the static defaults left out (`attention_mask=None`)
            args = self.specializations.signature.positional(args, kwargs)
        elif kwargs:
            raise TypeError(f"{self.name} takes its tensors by position, got {', '.join(kwargs)} by name")
        replays.last_call_replayed = False
        result = self.call_into(args)
        if replays.last_call_replayed and not kwargs:
            self._hot = hot_replay(self, args)
        return result

    def call_into(
        self,
        args: Sequence[torch.Tensor],
        outputs: Sequence[torch.Tensor | None] | None = None,
        key: tuple[Any, ...] | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor | None, ...] | None:
        """
        A call whose program writes its results into `outputs` where given (its fusion-level local
        tensors, as `Program.__call__` takes them; a replay copies them there): the training
        step's backward writes a weight's gradient into the block of the full-shaped `.grad`.
        `key`: the arguments' `fast_key`, where the caller has it.
        """
        key = fast_key(args) if key is None else key
        if self.modes is not None and (other := self.modes.function(self, args)) is not self:
            return other.call_into(args, outputs, key)
        if self.specializations is not None:
            target = self.specializations.lookup(self, args, key)
            if target is not self:
                return self._delegate(target, args, outputs, key)
        try:
            return self._call(args, outputs, key)
        except LocatedError as err:
            raise self._in_users_terms(err) from None

    def _call(
        self, args: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor | None] | None, key: tuple[Any, ...] | None
    ) -> Any:
        """This specialization's call (`call_into`)."""
        if self.signature.updates:
            self._check_updated_memory(args)
        replay = self._replay
        if (
            replay is not None
            and outputs is None
            and replay.fits(self, key)
            and not self._borrowed_moved(args)
            and self._handed.reclaim(self._on_mesh)  # else the checked path below counts the call and runs it eagerly
        ):
            # The previous call's graph, for arguments of the same shapes, dtypes and devices: the
            # checks it passed hold, so the replay goes first (the GPU waits for it).
            self._move_lent()
            results = replay.run(self._inputs(args, replay.device))
            self._handed.mark_stale(self.name)
            if results is not None:
                replays.last_call_replayed = True
                return self._returned(results, args, True, replay.device)
        self._replay = None
        if len(args) != self.signature.num_user_inputs:
            raise TypeError(f"the compiled function takes {self.signature.num_user_inputs} tensors, got {len(args)}")
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        inputs = self._inputs(args, device)
        communicator = self._communicator_for_run()
        graph = self._graph_for(device)
        if (
            self.candidates
            or self.layout_candidates
            or (graph and self.cuda_graph is None and not self.replay_measured and self.measure_first_call)
        ):
            self._measure_first_call(inputs, communicator, graph, device)
        graph = self._graph_for(device) and not self._note_moved(self._borrowed_moved(args))
        graph = graph and self._may_overwrite_results()
        try:
            results = self._run(inputs, communicator, device, graph, outputs=outputs)
        except CaptureError as err:
            if self.cuda_graph is not None:
                raise
            self._fall_back(err)
            graph = False
            results = self._run(inputs, communicator, device, graph, outputs=outputs)
        self._handed.mark_stale(self.name)
        if graph and outputs is None and key is not None:
            run = self.program.replayer(inputs, num_streams=self.num_streams, communicator=communicator)
            self._replay = None if run is None else _Replay(key, device, self.program, self.num_streams, run)
        return self._returned(results, args, graph, device, outputs)

    def _returned(
        self,
        results: list[Any],
        args: Sequence[torch.Tensor],
        graph: bool,
        device: torch.device,
        preallocated: Sequence[torch.Tensor | None] | None = None,
    ) -> Any:
        """A run's results in the structure the function returns (a dict, `(h,)`, ...), its updates written back."""
        results, updated = self._split_updates(results)
        if updated:
            self._write_back(updated, args, device)
        handed = self._results(results, graph, preallocated)
        if self.signature.output_views:  # `x.view(-1)`, `(y, y.t())`: views of the same memory, as eager's
            handed = list(handed)
            for view in self.signature.output_views:
                if (tensor := view.of(args, handed)) is not None:
                    handed[view.index] = tensor
        return self.signature.structured(handed)

    def _split_updates(self, results: list[Any]) -> tuple[list[Any], list[Any]]:
        """A run's results: the user's outputs, then the new values of what the function updates in place."""
        first = len(results) - len(self.signature.updates)
        return results[:first], results[first:]

    def _write_back(self, values: Sequence[torch.Tensor], args: Sequence[torch.Tensor], device: torch.device) -> None:
        """
        The new values of the buffers and arguments the function updates in place, copied into
        them as eager's in-place ops would have left them; a buffer this function holds a copy of
        (moved to the call's device) gets the value too, so that the next call does not take it again.
        """
        with torch.no_grad():
            for update, value in zip(self.signature.updates, values):
                if update.kind == "input":
                    args[update.index].copy_(value)
                    continue
                target = self._module_tensor(update.name)
                if not isinstance(target, torch.Tensor):
                    raise removed(self.name, [update.name])
                if not _same_memory(target, value):  # a donated update is there already
                    target.copy_(value)
                held = self._shared_state.get((update.name, device))
                if held is not None and held.origin is target:
                    if held.private and not _same_memory(held.tensor, value):
                        held.tensor.copy_(value)
                    held.version = target._version

    def _check_updated_memory(self, args: Sequence[Any]) -> None:
        """
        A tensor the function updates in place (an argument, a buffer) that shares memory with
        another argument is a CallError: torch.export's program reads every argument as it was
        at the call, where eager's later reads of the other one see the update.
        """
        if len(args) != self.signature.num_user_inputs:
            return  # the call's own check says what is wrong
        tensors = [(k, a) for k, a in enumerate(args) if isinstance(a, torch.Tensor) and a.numel() > 0]
        names = self.signature.arg_names
        for update in self.signature.updates:
            itself = update.index if update.kind == "input" else None
            if itself is not None:
                updated, what = args[itself], f"argument '{names[itself]}'"
            else:
                updated, what = self._module_tensor(update.name), f"the module's buffer '{update.name}'"
            if not isinstance(updated, torch.Tensor) or updated.numel() == 0:
                continue
            pointer = updated.untyped_storage().data_ptr()
            for k, other in tensors:
                if k != itself and other.untyped_storage().data_ptr() == pointer:
                    raise CallError(
                        f"<call>: error: {self.name} updates {what} in place, and argument '{names[k]}' shares its "
                        "memory: pass a copy (the compiled program reads each argument as it was at the call)"
                    )

    @cached_property
    def _donated(self) -> dict[int, int]:
        """
        Updates the program writes into the buffer's own memory (output -> input), not into a
        buffer of its own that the call then copies: a buffer whose only reader is the
        `fusion.index_copy` that computes its new value (a KV cache's `cache[:, :, pos] = k`).
        Writing in place is then safe (the op reads each slice before it writes it), and running
        the program twice, as the first call's measurement does, leaves what one run leaves.
        """
        if not self.signature.updates or not isinstance(self.mode, SingleDevice):
            return {}
        main = next(op for op in self._imported.module.walk() if isinstance(op, func.FuncOp))
        returned = list(main.body.block.last_op.operands)  # type: ignore[union-attr]
        first = len(returned) - len(self.signature.updates)
        donated: dict[int, int] = {}
        for j, update in enumerate(self.signature.updates):
            owner = returned[first + j].owner
            if update.kind != "buffer" or not isinstance(owner, fusion.IndexCopyOp):
                continue
            cache = owner.x
            if not isinstance(cache, BlockArgument) or cache.owner is not main.body.block or len(list(cache.uses)) != 1:
                continue
            if self.signature.inputs[cache.index].name == update.name:
                donated[first + j] = cache.index
        return donated

    def _module_tensor(self, name: str) -> Any:
        """What the module holds now under `name` (`kv_cache.k_cache`); None where it holds nothing."""
        where = self._updated_tables.get(name)
        return where[0].get(where[1]) if where is not None else None

    @cached_property
    def _updated_tables(self) -> dict[str, Any]:
        """Where the module keeps each buffer the function updates, found once as `_input_plan` finds them."""
        if self._module is None:
            return {}
        found = {u.name: state_table(self._module, u.name) for u in self.signature.updates if u.kind == "buffer"}
        return {name: where for name, where in found.items() if where is not None}

    def specialization(self, *args: torch.Tensor) -> CompiledFunction:
        """The specialization that runs a call with these arguments (compiled now if new): its
        `lowering`, `module`, `program` and `measured` are that call's."""
        if self.specializations is None:
            return self
        return self.specializations.lookup(self, args)

    def _delegate(
        self,
        target: CompiledFunction,
        args: Sequence[torch.Tensor],
        outputs: Sequence[torch.Tensor | None] | None,
        key: tuple[Any, ...] | None,
    ) -> Any:
        """A call with another input signature: the settings are this function's, so is a fallback."""
        target.cuda_graph, target.num_streams = self.cuda_graph, self.num_streams
        target.eager_reason = target.eager_reason or self.eager_reason
        try:
            return target.call_into(args, outputs, key)
        finally:
            self.eager_reason = self.eager_reason or target.eager_reason

    def _measure_first_call(self, inputs: list[Any], communicator: Any, graph: bool, device: torch.device) -> None:
        """
        Times this lowering and each candidate on the call's inputs, as the calls may run, and keeps
        the fastest by the slowest rank's time (frontend/autotune.py). In the automatic graph mode
        each is timed both replayed (its input and output copies included) and eagerly: a pipeline
        whose host work hides behind its GPU work can run faster launched by the host (a graph's
        peer copies and joins are scheduled differently), and a small program's replay can cost
        more in copies than it saves in launches. The fastest replay is kept unless an eager run is
        faster by EAGER_MARGIN. A candidate that cannot be captured loses; where none can, the
        function runs eagerly from now on, with the one warning.
        """
        import hir

        first = self.lowering
        contenders = [(self.pipeline, first, self.module, self.program)]
        for pipeline, lowering in self.candidates:
            module = self._lowered(pipeline)
            contenders.append((pipeline, lowering, module, hir.compile_program(module)))
        self.candidates = []
        for what, other in self.layout_candidates:
            contenders.append((f"{other.pipeline}, {what}", None, other.module, other.program))
        first_again = len(contenders) - len(self.layout_candidates)
        imported_again = {first_again + j: other for j, (_, other) in enumerate(self.layout_candidates)}
        self.layout_candidates = []
        both = graph and self.cuda_graph is None
        modes = (True, False) if both else (graph,)
        entries = [(k, replayed) for k in range(len(contenders)) for replayed in modes]

        def run(k: int, replayed: bool) -> None:
            try:
                results = self._run(inputs, communicator, device, replayed, contenders[k][3])
                self._results(self._split_updates(results)[0], replayed)
            except torch.OutOfMemoryError as err:
                if k == 0:  # the program as written: the caller's call fails as it would without candidates
                    raise
                # A candidate that does not fit beside the others (its graph's own memory) loses.
                contenders[k][3].graphs.clear()
                message = f"ran out of device memory when measured at the first call: {str(err).splitlines()[0]}"
                raise CaptureError(contenders[k][3].func, message) from None

        runs = [lambda k=k, replayed=replayed: run(k, replayed) for k, replayed in entries]
        ranks = _no_ranks if communicator is None else synchronize_ranks  # a one-device program: this process
        agree = bool if communicator is None else lambda flag: any_rank(flag, device)
        warm = WARMUP_SECONDS if communicator is None and device.type == "cuda" else 0.0  # the GPU's sustained clocks
        times, errors = medians_interleaved(
            runs, device, ranks, lambda err: isinstance(err, CaptureError), failed_anywhere=agree, warmup_seconds=warm
        )
        if communicator is not None:
            times = slowest_rank(times, device)
        for j, err in enumerate(errors):  # a run that failed on another rank only: its capture did
            if err is not None and not isinstance(err, CaptureError):
                message = "could not be captured in a CUDA graph on another rank of the job (see its warning or error)"
                errors[j] = CaptureError(contenders[entries[j][0]][3].func, message)

        def cost(j: int) -> float:
            return times[j] * (1 + LAYOUT_MARGIN) if entries[j][0] in imported_again else times[j]

        def fastest(replayed: bool) -> int:
            return min((j for j, (_, r) in enumerate(entries) if r == replayed), key=cost)

        best = fastest(modes[0])
        if both:
            best_replayed, best_eager = best, fastest(False)
            self.replay_measured = True
            if not math.isfinite(times[best_replayed]):  # no lowering could be captured
                self._fall_back(next(e for e in errors if isinstance(e, CaptureError)))
                best = best_eager
            else:
                if self.replay_must_win:
                    self.eager_measured_faster = times[best_replayed] >= times[best_eager] * (1 - EAGER_MARGIN)
                else:
                    self.eager_measured_faster = times[best_eager] < times[best_replayed] * (1 - EAGER_MARGIN)
                best = best_eager if self.eager_measured_faster else best_replayed
                verdict = "runs eagerly" if self.eager_measured_faster else "replays"
                self.graph_decision = (
                    f"replayed {times[best_replayed]:.3f} ms, eagerly {times[best_eager]:.3f} ms: {verdict}"
                )
        elif not math.isfinite(times[best]):  # cuda_graph=True and no lowering could be captured
            raise next(e for e in errors if e is not None)
        self.measured = {}
        for (k, replayed), ms in zip(entries, times):
            mode = "" if not both else " (replayed)" if replayed else " (eager)"
            self.measured[contenders[k][0] + mode] = ms
        k = entries[best][0]
        self.pipeline, chosen, self.module, self.program = contenders[k]
        if (other := imported_again.get(k)) is not None:  # its program, its IR and its ops' lines from now on
            self.pipeline, self.fusion_text, self._imported = other.pipeline, other.fusion_text, other._imported
            self._located = other._located
            self.__dict__.pop("_origin_lines", None)
        if first is not None and chosen is not None:
            self.lowering = replace(
                chosen,
                reason=f"{first.reason}; measured at the first call: {self._measured_text(contenders, entries, times)}",
            )
        if not entries[best][1]:
            self.program.graphs.clear()  # the measurement's graphs give their memory back: no replays from now on

    def _measured_text(self, contenders: list[Any], entries: list[tuple[int, bool]], times: list[float]) -> str:
        """Each lowering's measured times (replayed and eagerly, where both were timed) and the verdict."""
        parts = []
        for k, (_, lowering, *_) in enumerate(contenders):
            mine = [(replayed, ms) for (j, replayed), ms in zip(entries, times) if j == k]
            name = f"{lowering.backend} overlap={lowering.overlap}" if lowering is not None else contenders[k][0]
            if len(mine) == 1:
                parts.append(f"{name} {mine[0][1]:.3f} ms")
            else:
                parts.append(f"{name} {mine[0][1]:.3f} ms replayed, {mine[1][1]:.3f} ms eagerly")
        text = ", ".join(parts)
        if self.graph_decision is not None:
            text += "; " + self.graph_decision.rsplit(": ", 1)[1]
        return text

    def _run(
        self,
        inputs: list[Any],
        communicator: Any,
        device: torch.device,
        graph: bool,
        program: Any = None,
        outputs: Sequence[torch.Tensor | None] | None = None,
    ) -> list[Any]:
        """One run of `program` (default: the kept one), replayed or not, the module's own parameters read in place."""
        program = self.program if program is None else program
        if graph:
            self._move_lent()
            if self._borrowed_at is None and self.borrowed_inputs:
                self._borrowed_at = {k: inputs[k].data_ptr() for k in self._borrowed_positions}
        return program(
            inputs, num_streams=self.num_streams, communicator=communicator, cuda_graph=graph, outputs=outputs,
            in_place_inputs=self._read_in_place if graph else (), donated=self._donated,
        )  # fmt: skip

    def _in_users_terms(self, err: LocatedError) -> LocatedError:
        """
        A pass's or the runtime's error at an op of the program (`<fn>:line:col` of `fusion_text`),
        told at the user's line that op was imported from, with that line of code; unchanged where
        unknown.
        """
        told = self._at_users_line(location_of(err.op) or "", f"'{err.op.name}' op {err.message}")
        if told is not None:
            err.args = (told,)
        return err

    @cached_property
    def _origin_lines(self) -> dict[int, Any]:
        """Line of `fusion_text` -> the user's line (`SourceLine`) its op was imported from."""

        origins = self._imported.origins
        if not origins:
            return {}
        lines: dict[int, Any] = {}
        for imported, located in zip(self._imported.module.walk(), self._located.walk()):
            source, location = origins.get(imported), located.location
            if source is not None and isinstance(location, FileLineColLoc):
                lines[location.line.data] = source
        return lines

    def _may_overwrite_results(self) -> bool:
        """
        Whether a replay may overwrite the results the previous replays handed out: the aliases the
        caller holds alone are moved to memory of their own; where it holds other views of them the
        call runs eagerly. After two such calls in a row the caller keeps the buffers it holds (a
        parameter's `.grad` that later backwards accumulate into, in place, holds one for good):
        the graphs are dropped, this call captures a graph with buffers of its own, and its
        results are copied from then on.
        """
        if self._handed.reclaim(self._on_mesh):
            self._held_calls = 0
            return True
        self._held_calls += 1
        if self._held_calls < 2:
            return False
        self.hands_out_results = False
        self._handed = HandedOutputs()  # what the caller holds is its own now: the graph that wrote it is dropped
        self.program.graphs.clear()
        self._replay = None
        self._borrowed_at = None  # recorded again at the next capture
        self._held_calls = 0
        return True

    def _move_lent(self) -> None:
        """Before a replay overwrites its output buffers: the lent views still referenced get memory of their own."""
        for ref in self._lent:
            lent = ref()
            if lent is not None:
                lent.data = lent.clone()  # `.data`: the tensor autograd saved sees the copy, at its version
        self._lent.clear()

    @cached_property
    def _borrowed_positions(self) -> tuple[int, ...]:
        """The program inputs of the borrowed user inputs."""
        return tuple(
            k for k, s in enumerate(self.signature.inputs) if s.kind == "user" and s.index in self.borrowed_inputs
        )

    def _borrowed_moved(self, args: Sequence[torch.Tensor]) -> bool:
        """Whether a borrowed input is at other memory than the graph reads (then the call runs eagerly)."""
        at = self._borrowed_at
        if not at:
            return False
        sources = self.signature.inputs
        return any(args[sources[k].index].data_ptr() != pointer for k, pointer in at.items())

    def _note_moved(self, moved: bool) -> bool:
        """
        Counts the calls in a row whose borrowed inputs moved: two mean that they are not lent
        (the forward runs eagerly), and the automatic mode runs eagerly from now on, its graphs,
        which hold the first call's inputs, giving their memory back. Returns `moved`.
        """
        self._moved_calls = self._moved_calls + 1 if moved else 0
        if self._moved_calls >= 2 and self.cuda_graph is None and not self.eager_measured_faster:
            self.eager_measured_faster = True
            self.graph_decision = f"{self.graph_decision}; its borrowed inputs are not lent: runs eagerly"
            self.program.graphs.clear()
            self._replay = None
        return moved

    @cached_property
    def _read_in_place(self) -> tuple[int, ...]:
        """
        The parameters and buffers, which a graph reads where this function holds them, not from
        copies made at every replay: the module's own tensors (already on the device, not
        sharded), so that an in-place update of the module is seen, and the copies this function
        made once per device (moved or sharded), which stay where they are as long as it lives;
        and the borrowed user inputs (`borrowed_inputs`).
        """
        return (*(k for k, s in enumerate(self.signature.inputs) if s.kind != "user"), *self._borrowed_positions)

    def _fall_back(self, err: CaptureError) -> None:
        """The automatic mode's fallback when a capture was refused or failed: eagerly from now on, one warning."""
        self.eager_reason = str(err)
        warnings.warn(
            f"{self.name} runs eagerly, without a CUDA graph, from now on: {err} (hir.compile's cuda_graph=False "
            "runs eagerly without trying to capture; cuda_graph=True makes this an error)",
            CudaGraphFallbackWarning,
            stacklevel=user_stacklevel(),  # the user's call, through any of hir's frames
        )

    def _results(
        self, outputs: list[Any], graph: bool, preallocated: Sequence[torch.Tensor | None] | None = None
    ) -> tuple[Any, ...]:
        """
        The user's outputs of one run: a replay's static buffers handed out or copied
        (`hands_out_results`), except where preallocated.
        """
        given = preallocated or [None] * len(outputs)
        if graph and self.hands_out_results and _buffers_shared(outputs):
            self.hands_out_results = False  # outputs over one buffer: an alias's references would count the other's
        return tuple(self._result(t, k, graph and given[k] is None) for k, t in enumerate(outputs))

    def _graph_for(self, device: torch.device) -> bool:
        """Whether this call replays a CUDA graph (`cuda_graph`)."""
        if self.cuda_graph is not None:
            return self.cuda_graph
        return self.eager_reason is None and not self.eager_measured_faster and graph_by_default(device)

    def _result(self, output: Any, k: int, graph: bool) -> Any:
        """
        The user's output `k`. A replay's outputs are the graph's static buffers, which the next
        replay overwrites: the user gets a copy (one device copy of each output), unless the local
        form of the output is a copy already. None for an output this device does not hold (its
        mesh leaves the device out: `Program.held_outputs`).
        """
        if output is None:
            return None
        result = self.mode.local_output(output, k)
        if graph and isinstance(result, torch.Tensor) and isinstance(output, torch.Tensor):
            if k in self.lent_outputs:
                if result is output:  # a tensor of its own, whose memory `_move_lent` may replace
                    result = output.view(output.shape)
                self._lent.append(weakref.ref(result))
            elif _shares_memory(result, output):
                hand_out = self.hands_out_results and self._hands_out_here() and not result.requires_grad
                result = self._handed.hand_out(result, output, self._on_mesh) if hand_out else result.clone()
        return result

    def _hands_out_here(self) -> bool:
        """
        Whether a replay's results may be handed out as aliases of its buffers (`hands_out_results`):
        on one device, and on a mesh where a result held as a view can be marked stale (handed_outputs.py),
        but not a training step's programs there (`replay_must_win`): autograd keeps their gradients.
        """
        return self._communicator is None or (marks_stale() and not self.replay_must_win)

    @property
    def _on_mesh(self) -> bool:
        """Whether the calls run on a mesh, whose ranks must all replay when one does (handed_outputs.py)."""
        return self._communicator is not None

    def replicated_state(self) -> list[ValueCheck]:
        """
        The module's parameters and buffers, as they are now, and the constants no module attribute
        holds, that the program reads whole on every rank of its mesh (no didx axis in their
        param_layouts entry): the ranks compare their values at a new signature (frontend/rank_agreement.py).
        """
        checks = []
        for source in self.signature.inputs:
            if source.kind != "state" or (source.layout is not None and "didx" in source.layout):
                continue
            where = state_table(self._module, source.name) if self._module is not None else None
            tensor = where[0].get(where[1]) if where is not None else source.tensor
            if isinstance(tensor, torch.Tensor) and tensor.device.type != "meta":
                what = "parameter" if isinstance(tensor, torch.nn.Parameter) else "buffer"
                what = "constant" if where is None else what
                checks.append(ValueCheck(source.name, tensor, what=what))
        return checks

    def _inputs(self, args: Sequence[torch.Tensor], device: torch.device) -> list[Any]:
        """
        The program's inputs for a call: the user's tensors, and the module's parameters and
        buffers as held for `device`, each taken again where the module's has changed since
        (frontend/module_state.py); where each goes is worked out once per device.
        """
        plan = self._input_plans.get(device)
        if plan is None:
            plan = self._input_plans[device] = self._input_plan(device)
        template, users, states = plan
        for name, table, attr, others in self._ties:
            held = table.get(attr)
            for other, other_table, other_attr in others:
                if other_table.get(other_attr) is not held:
                    raise CallError(
                        f"<call>: error: {self.name}: the module's {other!r} was {name!r} (one tensor, which the "
                        "program reads once) when it was compiled, and is another tensor now: compile the module again"
                    )
        inputs = list(template)
        local_input = self.mode.local_input
        for k, source in users:
            inputs[k] = local_input(args[source.index], source)
        shared = self._shared_state
        cut = getattr(self.mode, "held_cut", None)
        for k, source, table, attr in states:
            held = shared.get((source.name, device))
            origin = table.get(attr)
            wanted = cut(source) if cut is not None else ()
            if held is None or not held.current(origin) or held.cut != wanted:
                held = shared[source.name, device] = self._take(source, device, origin, held)
                held.cut = wanted
            inputs[k] = held.tensor
        return inputs

    def _input_plan(
        self, device: torch.device
    ) -> tuple[list[Any], list[tuple[int, InputSource]], list[tuple[int, InputSource, dict[str, Any], str]]]:
        """
        The inputs with the constants in place (the state no module attribute holds: taken once),
        where each user tensor goes, and where each module tensor comes from.
        """
        template: list[Any] = [None] * len(self.signature.inputs)
        users, states = [], []
        for k, source in enumerate(self.signature.inputs):
            if source.kind == "user":
                users.append((k, source))
                continue
            where = state_table(self._module, source.name) if self._module is not None else None
            if where is not None:
                states.append((k, source, *where))
                # Read from the module from now on: the capture's tensor is only the shape and dtype
                # compiled for (held, it would keep replaced weights' memory alive).
                assert source.tensor is not None
                source.tensor = source.tensor.to("meta")
                continue
            held = self._constants.get((k, device))
            if held is None:
                held = self._constants[k, device] = self._take(source, device, None, None)
            template[k] = held.tensor
        return template, users, states

    def _take(
        self, source: InputSource, device: torch.device, origin: torch.Tensor | None, previous: HeldState | None
    ) -> HeldState:
        """The held form of a parameter, buffer or constant (`origin`: the module's tensor now, if it holds one)."""
        assert source.tensor is not None

        def local(t: torch.Tensor) -> torch.Tensor:
            return self.mode.local_input(t.to(device), source)

        if origin is not None:
            return take(origin, source.tensor, source.name, self.name, local, previous)
        if previous is not None:  # the module held it at the previous call
            raise removed(self.name, [source.name])
        return HeldState(local(source.tensor), None, 0, 0, private=True)

    def _communicator_for_run(self) -> Any:
        """Programs compiled for a mesh run with one (collectives, or symmetric memory alone)."""
        mesh = getattr(self.mode, "mesh", None)
        if mesh is None and not self.program.meshes:
            return None
        if self._communicator is None:
            import torch.distributed as dist

            from hir.runtime.distributed import ProcessGroupCommunicator

            if not dist.is_initialized():
                meshes = {*self.program.meshes, *([tuple(mesh)] if mesh else [])}
                if meshes <= {(0,)}:  # one device, this process: its collectives are copies (docs/multidevice.md)
                    return None
                raise RuntimeError(
                    "a program compiled for a mesh runs under torch.distributed: init_process_group first"
                )
            self._communicator = ProcessGroupCommunicator(dist.get_rank(), dist.get_world_size())
            self._communicator.prepare(sorted({*self.program.meshes, *([tuple(mesh)] if mesh else [])}))
        return self._communicator


def _buffers_shared(outputs: Sequence[Any]) -> bool:
    """Whether two of a replay's outputs are over one storage."""
    storages = [t.untyped_storage().data_ptr() for t in outputs if isinstance(t, torch.Tensor) and t.numel() > 0]
    return len(set(storages)) != len(storages)


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether `a` and `b` are the same elements (a donated update and its buffer)."""
    return a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether `a` is a view of `b`'s memory (a reshape of a replay's static buffer) rather than a copy."""
    return a.numel() > 0 and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


@dataclass(frozen=True)
class _Replay:
    """A call's replay without its checks, for the next calls with the same arguments' key (`Program.replayer`)."""

    key: tuple[Any, ...]
    device: torch.device
    program: Any
    num_streams: int
    run: Callable[[Sequence[Any]], list[Any] | None]

    def fits(self, function: CompiledFunction, key: tuple[Any, ...] | None) -> bool:
        """Whether a call with `key` may replay: the same arguments, program, streams, and graphs still on."""
        return (
            key == self.key
            and function.program is self.program
            and function.num_streams == self.num_streams
            and function._graph_for(self.device)
        )


Ties = list[tuple[str, dict[str, Any], str, list[tuple[str, dict[str, Any], str]]]]


def tied_state(module: torch.nn.Module | None, signature: Signature) -> Ties:
    """
    The module's tensors held under several names (tied weights: `lm_head.weight = wte.weight`),
    which torch.export's program reads under one name alone, found when the program is traced:
    each with where the module keeps it and its other names, which a call checks still hold it.
    """
    if module is None:
        return []
    names: dict[int, list[str]] = {}
    state = [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]
    for name, tensor in state:
        names.setdefault(id(tensor), []).append(name)
    read = {source.name for source in signature.inputs if source.kind == "state"}
    ties = []
    for group in names.values():
        first = next((n for n in group if n in read), None)
        where = {n: state_table(module, n) for n in group}
        if first is None or len(group) < 2 or any(w is None for w in where.values()):
            continue
        others = [(n, *w) for n, w in where.items() if n != first and w is not None]
        table, attr = where[first]  # type: ignore[misc]
        ties.append((first, table, attr, others))
    return ties


def compile_torch(
    fn: Callable[..., Any] | torch.nn.Module,
    example_args: Sequence[Any],
    in_layouts: Layouts = None,
    out_layouts: Layouts = None,
    mesh: Sequence[int] | None = None,
    pipeline: str = "stream-lowering",
    *,
    param_layouts: Mapping[str, str | None] | None = None,
    num_streams: int = 4,
    cuda_graph: bool | None = None,
    measure_candidates: bool = True,
    max_specializations: int = DEFAULT_MAX_SPECIALIZATIONS,
    training: bool = False,
    **options: Any,
) -> CompiledFunction | TrainingFunction | PytreeFunction:
    name = f"<{getattr(fn, '__name__', type(fn).__name__)}>"
    fn = capturing_module(fn)  # a function reading a global model: a module holding it, read at every call
    if tensors := [k for k, v in options.items() if isinstance(v, torch.Tensor)]:
        # Keyword options are the passes' (`chunks=2`): a tensor among them is an example argument.
        raise FrontendError(
            f"<inputs>: error: {', '.join(tensors)}: a tensor passed to hir.compile by name; the example "
            "arguments are one sequence, in the function's order (`hir.compile(model, (x, mask))`), and a "
            "call may then pass them by name (`compiled(x, mask=mask)`)"
        )
    check_param_layouts(param_layouts)
    mesh = check_mesh(mesh, name)
    common = dict(
        param_layouts=param_layouts, num_streams=num_streams, cuda_graph=cuda_graph,
        measure_candidates=measure_candidates, max_specializations=max_specializations, **options,
    )  # fmt: skip
    settings = dict(common, training=training)
    if has_containers(example_args):  # `past_key_values`, a `batch` dict: their leaves are the arguments
        return _of_containers(fn, example_args, in_layouts, out_layouts, mesh, pipeline, **settings)
    late = None
    if mesh is None:  # a later call that passes containers (`past_key_values` after None) compiles for them then

        def with_containers(args: Sequence[Any], kwargs: Mapping[str, Any]) -> PytreeFunction:
            return _of_containers(fn, args, in_layouts, out_layouts, None, pipeline, call_kwargs=kwargs, **settings)

        late = LateContainers(with_containers)
    if training:
        from hir.frontend.training import compile_training

        trained = compile_training(fn, example_args, in_layouts, out_layouts, mesh, pipeline, **common)
        trained.containers = late
        return trained
    shared_state: dict[tuple[str, torch.device], HeldState] = {}
    check_example_args(example_args)
    layouts = _per_entry(in_layouts, len(example_args), "in_layouts")
    example_args = with_static_defaults(fn, example_args)  # `labels=None` after them: a call may pass a tensor
    layouts += [None] * (len(example_args) - len(layouts))

    watch = AttributeWatch(function_environment(fn, name))  # globals and closure variables, then attributes

    def specialize(examples: Sequence[Any]) -> CompiledFunction:
        imported = import_program(fn, examples, layouts, out_layouts, mesh, param_layouts)
        on_cuda = any(isinstance(a, torch.Tensor) and a.is_cuda for a in examples)
        compiled = compile_imported(
            imported, name, pipeline, options, on_cuda, num_streams, cuda_graph, measure_candidates
        )
        if on_cuda and measure_candidates and mesh is None and in_layouts is None and out_layouts is None:

            def compile_again(again: ImportedProgram) -> CompiledFunction:
                return compile_imported(again, name, pipeline, options, on_cuda, num_streams, cuda_graph, False)

            compiled.layout_candidates = batch_stream_candidates(fn, examples, imported, compile_again)
        watch.add(getattr(imported.exported, "hir_attributes", None))
        imported.exported = None  # the capture holds the module's tensors as they were: a replaced one stays dead
        compiled._shared_state = shared_state  # parameters moved and sharded once, whatever the shapes
        compiled._module = fn if isinstance(fn, torch.nn.Module) else None
        compiled._ties = tied_state(compiled._module, compiled.signature)
        return compiled

    compiled = specialize(example_args)
    devices = len(mesh) if mesh is not None else 1
    call = CallSignature(
        name,
        compiled.signature.arg_names,
        layouts,
        devices,
        ranks=tuple(mesh or ()),
        defaults=static_defaults(fn),
        tensor_defaults=tensor_defaults(fn),
        keyword_only=keyword_only_count(fn, compiled.signature.arg_names),
    )
    example = tuple(
        replace(spec_of(a), shape=call.local_shape(k, tuple(a.shape))) if isinstance(a, torch.Tensor) else arg_spec(a)
        for k, a in enumerate(example_args)
    )
    compiled.specializations = Specializations(call, example, specialize, max_specializations)
    compiled.modes = TrainEvalModes(fn if isinstance(fn, torch.nn.Module) else None, compiled, watch)
    compiled.containers = late
    return compiled


def _of_containers(
    fn: Callable[..., Any] | torch.nn.Module,
    example_args: Sequence[Any],
    in_layouts: Layouts,
    out_layouts: Layouts,
    mesh: Sequence[int] | None,
    pipeline: str,
    *,
    max_specializations: int,
    call_kwargs: Mapping[str, Any] | None = None,
    **settings: Any,
) -> PytreeFunction:
    """`fn` compiled for arguments that are containers of tensors: per structure, on their leaves."""
    refuse_on_mesh(example_args, mesh)

    def compile_flat(flat: Any, leaves: list[Any], layouts: Layouts) -> Any:
        return compile_torch(
            flat, leaves, layouts, out_layouts, None, pipeline, max_specializations=max_specializations, **settings
        )

    return PytreeFunction(fn, example_args, in_layouts, compile_flat, max_specializations, call_kwargs)


class TrainEvalModes:
    """
    A function's programs by its module's train / eval flags and the autocast regions of the call
    (frontend/autocast.py): the trace follows both (dropout, batch norm; autocast's casts), so a
    call after `model.train()` or `model.eval()`, or inside or outside `torch.autocast`, runs a
    function compiled again, once, for its mode (its specializations of their own), never another
    mode's programs.
    """

    def __init__(self, module: torch.nn.Module | None, compiled: CompiledFunction, attributes: AttributeWatch):
        self.flags = TrainFlags(module) if module is not None else None
        self.attributes = attributes
        self._watched = len(attributes)
        self.by_flags: dict[Any, CompiledFunction] = {self.mode(): compiled}

    def mode(self) -> Any:
        """The flags, the autocast regions and the values of the attributes the traces read (AttributeWatch)."""
        if len(self.attributes) != self._watched:  # a trace (a new shape's) read attributes no earlier one did
            extra = self.attributes.since(self._watched)
            self.by_flags = {(*key[:2], key[2] + extra): f for key, f in self.by_flags.items()}
            self._watched = len(self.attributes)
        attributes = self.attributes()  # first: it rebinds a function's reassigned global module (function_state.py)
        return (self.flags() if self.flags is not None else ()), autocast_state(), attributes

    def function(self, first: CompiledFunction, args: Sequence[Any]) -> CompiledFunction:
        """
        The function of the current flags (`first`, the one compiled first, builds the others,
        from tensors like this call's: its shapes, dtypes and device).
        """
        flags = self.mode()
        function = self.by_flags.get(flags)
        if function is None:
            specializations = first.specializations
            assert specializations is not None
            signature = specializations.signature
            key = signature.check(args, specializations.example)
            # One agreement for every mode: the ranks' checks are numbered in call order, so a rank
            # whose mode (a watched attribute) changed compares with its peers' new signatures.
            modes = Specializations(
                signature, key, specializations.build, specializations.limit, agreement=specializations.agreement
            )
            function = modes.build_first(args)
            function.specializations = modes
            function.cuda_graph, function.num_streams = first.cuda_graph, first.num_streams
            self.by_flags[flags] = function
        return function


def compile_imported(
    imported: ImportedProgram,
    name: str,
    pipeline: str,
    options: Mapping[str, Any],
    on_cuda: bool,
    num_streams: int = 4,
    cuda_graph: bool | None = None,
    measure_candidates: bool = True,
    replay_must_win: bool = False,
) -> CompiledFunction:
    """
    An imported program lowered and compiled: on a GPU, with the lowering the cost model picks
    (`replay_must_win`: a training program's, `CompiledFunction.replay_must_win`).
    """
    if pipeline == DEFAULT_PIPELINE:
        # Work that no collective waits for (a backward's weight gradients) runs while one does.
        import hir

        hir.run_pipeline(imported.module, HideCommunicationPass.name, verify_each=False)
    # The model predicts for the mode the calls will run in: replayed unless graphs are off.
    chosen, lowering = choose_options(imported.module, pipeline, options, on_cuda, replay=cuda_graph is not False)
    compiled = CompiledFunction(imported, pipeline_with_options(pipeline, chosen), num_streams, name, cuda_graph)
    compiled.lowering = lowering
    compiled.measure_first_call = measure_candidates
    compiled.replay_must_win = replay_must_win
    compiled.hands_out_results = not replay_must_win  # a training step's programs copy what they do not lend
    if measure_candidates:
        compiled.candidates = [
            (pipeline_with_options(pipeline, o), other) for o, other in candidates(lowering, options)
        ]
    return compiled
