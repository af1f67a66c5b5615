"""
Running a module's entry function: a fusion-level function is the reference (eager torch on whole
tensors), a hir function is the lowered program. Inputs and preallocated outputs are checked
against the function's types first; errors name the function's source location.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerType, MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute
from xdsl.traits import MemoryEffectKind, get_effects

from hir.diagnostics import LocatedError
from hir.dialects import hir
from hir.dialects.functions import fusion_types, inline_calls, is_hir_function
from hir.dialects.parallel_encoding import UnevenAxis, didx_bounds, layout_of, uneven_axis
from hir.dialects.shape_rules import fmt
from hir.dialects.shaped_types import check_signature
from hir.runtime import cuda_graph as cuda_graph_mode
from hir.runtime import fusion_ops, hir_ops, std_ops
from hir.runtime.communicator import Communicator
from hir.runtime.compiler import UNSET, CompileContext, CompiledBlock, Frame, profiler_active
from hir.runtime.device import run_device, streams_for
from hir.runtime.dtypes import shaped_dtype
from hir.runtime.memory import overlaps, overlaps_itself, ranges_meet, storage_range
from hir.runtime.memory_stats import MemoryStats
from hir.runtime.poison import enabled as poison_enabled
from hir.runtime.race_check import RaceCheckContext, RaceChecker
from hir.runtime.release import release_after_last_use
from hir.runtime.result_adoption import STREAM_SWITCHES
from hir.runtime.streams import Streams

STEP_COMPILERS = std_ops.COMPILERS | fusion_ops.COMPILERS | hir_ops.COMPILERS
"""How the runtime compiles each op class it can execute, from the tables of the dialect modules."""


@dataclass
class Program:
    """A compiled entry function, ready to run many times."""

    func: func.FuncOp
    body: CompiledBlock
    slots: dict
    arg_slots: list[int]
    result_slots: list[int]
    allocated_results: dict[int, int]
    """Result position -> slot of the `hir.allocate` that produces it (for preallocated outputs)."""
    race_check: bool = False
    """Compiled to check every run for races between streams (runtime/race_check.py)."""
    poison: bool | None = None
    """Fresh `hir.allocate` buffers start as NaN or a sentinel (runtime/poison.py); None: as `HIR_POISON` says."""
    graphs: dict[cuda_graph_mode.Signature, cuda_graph_mode.CapturedRun] = field(default_factory=dict, repr=False)
    """The CUDA graphs captured so far (`cuda_graph=True`), per input signature."""
    _last_replay: _LastReplay | None = field(default=None, repr=False)
    """The last replayed call, which a call with the very same tensors repeats without the checks."""

    @cached_property
    def profiled_body(self) -> CompiledBlock:
        """
        The body with a profiler range around the step of each fusion and hir op, compiled at the
        first run under a profiler; runs without one never pay for the ranges.
        """
        compilation = _compile_context(self.race_check, profile=True)
        compilation.slots = dict(self.slots)  # the same slots: the frame's layout does not change
        body = compilation.compile_block(self.func.body.block)
        if len(compilation.slots) != len(self.slots):
            raise LocatedError(self.func, "the function changed after it was compiled: compile it again")
        return body if self.race_check else release_after_last_use(self.func, body, compilation)

    @cached_property
    def is_hir(self) -> bool:
        return is_hir_function(self.func)

    @property
    def input_types(self) -> Sequence[Attribute]:
        return self.func.function_type.inputs.data

    @property
    def output_types(self) -> Sequence[Attribute]:
        return self.func.function_type.outputs.data

    @cached_property
    def meshes(self) -> list[tuple[int, ...]]:
        """
        The meshes the program communicates or synchronizes over (each needs a process group,
        made by every rank before the run: a `hir.barrier` over a sub-mesh is a barrier of that
        mesh's group, not of the whole job).
        """
        ops = (o for o in self.func.walk() if isinstance(o, hir.CommunicationOp | hir.BarrierOp))
        return sorted({o.mesh_ids for o in ops})

    @cached_property
    def device_ids(self) -> tuple[int, ...]:
        """
        The devices a lowered program runs on: those of its ops' meshes and of the meshes its
        global input and output types are sharded over. Empty for a single-device program and for
        a fusion-level one (the reference runs whole on one device).
        """
        if not self.is_hir:
            return ()
        ids = {d for op in self.func.walk() if isinstance(op, hir.MeshOp) for d in op.mesh_ids}
        for t in (*self.global_input_types, *self.global_output_types):
            if isinstance(t, TensorType):
                ids.update(layout_of(t).mesh)
        return tuple(sorted(ids))

    @property
    def processes(self) -> int:
        """How many processes (one per device, device id == rank) a run needs: 1 on a single device."""
        return max(self.device_ids, default=0) + 1

    @property
    def global_output_types(self) -> list[Attribute]:
        """The unsharded (fusion-level) output types, recorded as result attributes by the lowering."""
        return fusion_types(self.func, results=True)

    @property
    def global_input_types(self) -> list[Attribute]:
        """The unsharded (fusion-level) input types, recorded as argument attributes by the lowering."""
        return fusion_types(self.func)

    def __call__(
        self,
        inputs: Sequence[Any],
        *,
        device: str | torch.device | None = None,
        num_streams: int = 4,
        outputs: Sequence[torch.Tensor | None] | None = None,
        communicator: Communicator | None = None,
        streams: Streams | None = None,
        cuda_graph: bool = False,
        memory_stats: MemoryStats | None = None,
        in_place_inputs: Collection[int] = (),
        donated: Mapping[int, int] | None = None,
    ) -> list[Any]:
        """
        Runs the program on `device` (default: that of the first tensor input, else CPU), with
        `num_streams` worker streams, writing into the preallocated `outputs` where given.
        `communicator` connects the devices of a multi-device run; `streams` replaces the
        device's streams (with a wrapper that records or checks the stream calls). With
        `cuda_graph`, the first call per input signature warms up and captures a CUDA graph, and
        every call replays it (runtime/cuda_graph.py; results are then the graph's static output
        buffers, overwritten by the next replay, unless `outputs` are given).
        `memory_stats` receives the bytes the run's `hir.allocate`s hold (runtime/memory_stats.py);
        a plain run's only, since a replay allocates nothing.
        `in_place_inputs` (numbers of inputs) are read by a graph where they are instead of from a
        copy, e.g. a module's own parameters: updates in place are seen without a copy per replay,
        and a call whose tensor lives elsewhere than at the capture is captured anew.
        With a communicator, an output whose global type's mesh does not contain this device is
        None here, and its preallocated output, if given, is left untouched (`held_outputs`).
        `donated` (output -> input) names outputs written into an input's memory, where the
        caller guarantees that the program reads that input only in the op that computes the
        output, before it writes it, and that running it twice leaves what one run leaves (a KV
        cache's `fusion.index_copy`, hir.compile's `CompiledFunction._donated`); a graph reads
        such an input in place (with `in_place_inputs`) and writes the output there.
        """
        donated = dict(donated or {})
        last = self._last_replay
        in_place = tuple(in_place_inputs)
        settings = (device, num_streams, id(communicator), in_place, tuple(donated.items())) if cuda_graph else ()
        if (
            cuda_graph
            and outputs is None
            and last is not None
            and streams is None
            and memory_stats is None
            and self.graphs.get(last.key) is last.captured  # not dropped since
            and last.repeats(inputs, settings)
        ):
            # The same tensors as the last replay's call, unchanged in shape and place: its checks hold.
            results = last.run(inputs)
            if results is not None:
                return results
        self._last_replay = None
        # Everything that can be checked is checked before the first write (docs/runtime.md, "Errors").
        on = run_device(device, inputs)
        self.check_inputs(inputs, on)
        checked_outputs = self._check_outputs(outputs, inputs, on)
        if not isinstance(num_streams, int) or isinstance(num_streams, bool) or num_streams < 1:
            raise LocatedError(self.func, f"num_streams must be >= 1, got {num_streams!r}")
        self._check_devices(communicator)
        self._check_shards(inputs, communicator)
        if cuda_graph and memory_stats is not None:
            raise LocatedError(
                self.func,
                "memory_stats counts the hir.allocate buffers of a plain run, and a CUDA graph replay allocates "
                "nothing: run without cuda_graph to measure them",
            )
        held = self.held_outputs(communicator)
        # A preallocated output that this device does not hold is neither written nor returned.
        if not all(held):
            checked_outputs = [out if keep else None for out, keep in zip(checked_outputs, held)]
        if not cuda_graph:
            for k, i in donated.items():
                if checked_outputs[k] is None and isinstance(inputs[i], torch.Tensor):
                    checked_outputs[k] = inputs[i]
            results = self._run_once(
                inputs, checked_outputs, on, num_streams, communicator, streams, self.race_check, memory_stats
            )[0]
            return _only_held(results, held)
        key = cuda_graph_mode.signature(inputs, on, num_streams, communicator)
        captured = self.graphs.get(key)
        if captured is not None and not captured.reads_from(inputs):
            captured = None  # an input read in place has moved: its old address is not read again
        if captured is None:
            cuda_graph_mode.capture_refusal(self.func, on, communicator)

            def run_once(ins: list[Any], outs: list[torch.Tensor | None], warm_up: bool) -> tuple[list, list]:
                # The warm-up is a plain run (race-checked if the program is, with the caller's
                # `streams`); the capture uses the device's own streams, which start from the
                # capturing stream.
                given = streams if warm_up else None
                return self._run_once(ins, outs, on, num_streams, communicator, given, warm_up and self.race_check)

            captured = self.graphs[key] = cuda_graph_mode.capture(
                self.func, run_once, inputs, on, in_place_inputs, donated
            )
        results = _only_held(captured.replay(inputs, checked_outputs), held)
        if outputs is None and streams is None and memory_stats is None:
            run = _replay_of(captured, held)
            self._last_replay = _LastReplay.of(inputs, settings, key, captured, run)
        return results

    def replayer(
        self,
        inputs: Sequence[Any],
        *,
        device: str | torch.device | None = None,
        num_streams: int = 4,
        communicator: Communicator | None = None,
    ) -> Callable[[Sequence[Any]], list[Any] | None] | None:
        """
        The replay of the graph that a `cuda_graph` call with `inputs` captured, without that
        call's checks: for a caller that guarantees that every call it replays passes inputs of
        the types, devices and strides of `inputs` (hir.compile's callable, which keys it on its
        arguments' shapes, dtypes and devices and holds the other inputs itself). The replay
        returns None where an input read in place has moved: the caller then calls the program,
        which captures anew. None when no graph was captured for `inputs`.
        """
        captured = self.captured_run(inputs, device=device, num_streams=num_streams, communicator=communicator)
        return None if captured is None else _replay_of(captured, self.held_outputs(communicator))

    def captured_run(
        self,
        inputs: Sequence[Any],
        *,
        device: str | torch.device | None = None,
        num_streams: int = 4,
        communicator: Communicator | None = None,
    ) -> cuda_graph_mode.CapturedRun | None:
        """The graph that a `cuda_graph` call with `inputs` captured, with its buffers; None if none was."""
        on = run_device(device, inputs)
        return self.graphs.get(cuda_graph_mode.signature(inputs, on, num_streams, communicator))

    def held_outputs(self, communicator: Communicator | None) -> list[bool]:
        """
        Per output, whether this device holds it: an output of a lowered program whose global
        (fusion-level) type has a mesh is held by the devices of that mesh only; elsewhere the
        program returns None for it (the device runs the program too, SPMD, but nothing there is
        the output's value). Without a communicator the program runs on one device, which plays
        position 0 of every mesh (`hir.device_index`) and holds every output; so does every
        device for an output without a mesh and for a fusion-level program (the reference).
        """
        if communicator is None or not self.output_meshes:
            return [True] * len(self._expected_outputs)
        return [mesh is None or communicator.position_in(mesh) is not None for mesh in self.output_meshes]

    @cached_property
    def output_meshes(self) -> list[tuple[int, ...] | None]:
        """Per output of a lowered program, the mesh of its global type (None: none); empty when no output has one."""
        if not self.is_hir:
            return []
        meshes = [
            tuple(layout_of(t).mesh) if isinstance(t, TensorType) and layout_of(t).mesh else None
            for t in self.global_output_types
        ]
        return meshes if any(m is not None for m in meshes) else []

    def _run_once(
        self,
        inputs: Sequence[Any],
        outputs: list[torch.Tensor | None],
        on: torch.device,
        num_streams: int,
        communicator: Communicator | None,
        streams: Streams | None,
        race_check: bool,
        memory_stats: MemoryStats | None = None,
    ) -> tuple[list[Any], list[Any]]:
        """One run of the steps on checked inputs: the results, and every value the run's frame held."""
        if streams is None:
            streams = streams_for(on)
        checker = RaceChecker(streams, self.func, num_streams, communicator) if race_check else None
        frame = Frame(
            env=[UNSET] * len(self.slots),
            device=on,
            streams=streams if checker is None else checker,
            num_streams=num_streams,
            communicator=communicator if checker is None else checker.communicator,
            preallocated=self._preallocated(outputs),
            slots=self.slots,
            memory_stats=memory_stats,
            poison=poison_enabled() if self.poison is None else self.poison,
        )
        if memory_stats is not None:
            memory_stats.start()
        for slot, value in zip(self.arg_slots, inputs):
            frame.env[slot] = value
        if checker is not None:
            checker.enter(inputs, outputs)
        body = self.profiled_body if profiler_active() else self.body
        # A program that never switches streams leaves the caller's current: nothing to restore
        # (and no query of the current stream before its first launch).
        caller_stream = streams.current() if self.switches_streams else None
        # A lowered program writes into buffers (`out=`), which autograd refuses for inputs that
        # require grad: its results are values, not differentiable (hir.compile's training
        # programs compute the gradients themselves).
        recording = self.is_hir and torch.is_grad_enabled()
        if recording:
            torch.set_grad_enabled(False)
        try:
            body.run(frame)
        except Exception as err:
            if checker is not None and checker.race is not None:
                raise checker.race from err  # the race came first and may be the cause
            raise
        finally:
            if recording:
                torch.set_grad_enabled(True)
            if caller_stream is not None:
                streams.set_current(caller_stream)
            # A send of this device to itself that no receive took is not the next run's data.
            if (forget := getattr(communicator, "forget_sends_to_self", None)) is not None:
                forget()
        results = [frame.env[s] for s in self.result_slots]
        if checker is not None:
            checker.finish(results)
        self._copy_into_outputs(results, outputs)
        if not self.is_hir:
            _own_results(results, outputs, inputs)
        return results, frame.env

    def _preallocated(self, outputs: list[torch.Tensor | None]) -> dict[int, torch.Tensor]:
        """Allocate-result slot -> the caller's buffer that replaces it (`Frame.preallocated`)."""
        if all(t is None for t in outputs):
            return {}
        allocated = self.allocated_results
        return {allocated[k]: t for k, t in enumerate(outputs) if t is not None and k in allocated}

    # -- checks ----------------------------------------------------------------------------------

    def check_inputs(
        self, inputs: Sequence[Any], device: torch.device | None = None, global_types: bool = False
    ) -> None:
        """
        Count, types, shapes, dtypes and (given `device`) devices of the inputs; with
        `global_types`, against the unsharded types of a lowered program (before sharding).
        """
        if not global_types and device is not None and self._inputs_fit(inputs, device):
            return
        expected = self._expected_global_inputs if global_types else self._expected_inputs
        if not isinstance(inputs, Sequence):
            raise LocatedError(self.func, f"the inputs must be a list, got {type(inputs).__name__}")
        if len(inputs) != len(expected):
            raise LocatedError(self.func, f"@{self.func.sym_name.data} takes {len(expected)} inputs, got {len(inputs)}")
        for i, (value, e) in enumerate(zip(inputs, expected)):
            e.check(self.func, i, "input", value, device)
        self._check_written_inputs(inputs)

    def _inputs_fit(self, inputs: Sequence[Any], device: torch.device) -> bool:
        """
        Whether every input is a tensor of its static shape and dtype on `device`: one comparison
        each, the calls' common case (a static signature), before `_Expected.check` looks closer
        (and names what is wrong). False also where a closer look may still accept the inputs.
        """
        specs = self._static_inputs
        if specs is None or type(inputs) is not list or len(inputs) != len(specs):
            return False
        for value, (shape, dtype) in zip(inputs, specs):
            if not isinstance(value, torch.Tensor) or value.shape != shape or value.dtype != dtype:
                return False
            if value.device != device or value.layout != torch.strided:
                return False
        return not self.written_inputs or self._written_input_shared(inputs) is None

    @cached_property
    def written_inputs(self) -> tuple[int, ...]:
        """
        The inputs the program writes (an op's write effect on the input or on a view of it): a
        lowered program writes none, a hand-written one may update one in place.
        """
        arguments = {arg: k for k, arg in enumerate(self.func.body.block.args)}
        written: set[int] = set()
        for op in self.func.walk():
            for effect in get_effects(op) or ():
                if effect.kind != MemoryEffectKind.WRITE or effect.value is None:
                    continue
                root = hir_ops.buffer_root(effect.value)
                if root in arguments:
                    written.add(arguments[root])
        return tuple(sorted(written))

    def _written_input_shared(self, inputs: Sequence[Any]) -> tuple[int, int] | None:
        """An input the program writes and another input it shares memory with; None where there is none."""
        for k in self.written_inputs:
            mine = inputs[k] if k < len(inputs) else None
            if not isinstance(mine, torch.Tensor):
                continue
            for j, other in enumerate(inputs):
                if j != k and isinstance(other, torch.Tensor) and overlaps(mine, other):
                    return k, j
        return None

    def _check_written_inputs(self, inputs: Sequence[Any]) -> None:
        if (shared := self._written_input_shared(inputs)) is not None:
            k, j = shared
            raise LocatedError(
                self.func,
                f"input #{k} and input #{j} share memory, and the program writes input #{k}: the writes would "
                f"change what it reads of input #{j}; pass tensors of their own",
            )

    @cached_property
    def _static_inputs(self) -> list[tuple[torch.Size, torch.dtype]] | None:
        """Each input's shape and dtype where every input is a tensor of a static shape; else None."""
        expected = self._expected_inputs
        if not all(e.shaped and e.static and e.dtype is not None for e in expected):
            return None
        return [(torch.Size(e.shape), e.dtype) for e in expected]  # type: ignore[misc]

    @cached_property
    def _expected_inputs(self) -> list[_Expected]:
        return [_Expected.of(t) for t in self.input_types]

    @cached_property
    def _expected_global_inputs(self) -> list[_Expected]:
        return [_Expected.of(t) for t in self.global_input_types]

    @cached_property
    def _expected_outputs(self) -> list[_Expected]:
        return [_Expected.of(t) for t in self.output_types]

    def _check_outputs(
        self, outputs: Sequence[torch.Tensor | None] | None, inputs: Sequence[Any], device: torch.device
    ) -> list[torch.Tensor | None]:
        expected = self._expected_outputs
        if outputs is None:
            return [None] * len(expected)
        if len(outputs) != len(expected):
            raise LocatedError(
                self.func, f"@{self.func.sym_name.data} has {len(expected)} outputs, {len(outputs)} were preallocated"
            )
        # Each tensor's storage as a byte range, read once: only tensors whose storages meet can
        # overlap, and the exact test runs for those pairs alone (a backward's dozen gradient
        # blocks against its inputs were hundreds of storage lookups per call).
        input_ranges = [(i, v, storage_range(v)) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)]
        output_ranges: list[tuple[int, torch.Tensor, tuple[int, int]]] = []
        for k, (out, e) in enumerate(zip(outputs, expected)):
            if out is None:
                continue
            e.check(self.func, k, "preallocated output", out, device)
            if overlaps_itself(out):
                raise LocatedError(
                    self.func,
                    f"preallocated output #{k} overlaps itself (an expanded or as_strided view whose "
                    "elements share memory): pass a tensor whose elements are distinct",
                )
            span = storage_range(out)
            for i, value, other in input_ranges:
                if ranges_meet(span, other) and overlaps(out, value):
                    raise LocatedError(
                        self.func, f"inputs cannot be aliased: preallocated output #{k} overlaps input #{i}"
                    )
            for j, earlier, other in output_ranges:
                if ranges_meet(span, other) and overlaps(out, earlier):
                    message = f"preallocated outputs #{j} and #{k} overlap: each needs memory of its own"
                    raise LocatedError(self.func, message)
            output_ranges.append((k, out, span))
        return list(outputs)

    def _check_shards(self, inputs: Sequence[Any], communicator: Communicator | None) -> None:
        """
        A lowered program's input sharded over an uneven didx axis has a dynamic local extent
        (`?`), which the types cannot check: this rank's shard must hold exactly its chunk of the
        global extent (`didx_bounds` at the rank's mesh position; 0 outside the mesh, as `shard`).
        """
        for i, uneven in self._uneven_inputs:
            value = inputs[i]
            if not isinstance(value, torch.Tensor):
                continue
            axis, extent, mesh = uneven.axis, uneven.extent, uneven.mesh
            if extent == DYNAMIC_INDEX or value.dim() <= axis:
                continue  # a dynamic global extent: each rank's own is what it was given
            position = None if communicator is None else communicator.position_in(mesh)
            position = 0 if position is None else position
            start, length = didx_bounds(extent, len(mesh), position)
            if value.shape[axis] != length:
                raise LocatedError(
                    self.func,
                    f"input #{i} has extent {value.shape[axis]} along its didx axis {axis}, but the device at "
                    f"position {position} of mesh {list(mesh)} holds {length} of its {extent} indices "
                    f"([{start}, {start + length}): chunks of ceil({extent}/{len(mesh)}))",
                )

    @cached_property
    def _uneven_inputs(self) -> list[tuple[int, UnevenAxis]]:
        """The inputs of a lowered program sharded over an uneven didx axis, and that axis."""
        if not self.is_hir:
            return []
        axes = ((i, uneven_axis(t)) for i, t in enumerate(self.global_input_types))
        return [(i, axis) for i, axis in axes if axis is not None]

    @cached_property
    def switches_streams(self) -> bool:
        """Whether a run may make another stream current (an op of `STREAM_SWITCHES` in it)."""
        return any(isinstance(op, STREAM_SWITCHES) for op in self.func.walk())

    @cached_property
    def first_communication(self) -> hir.CommunicationOp | None:
        """
        The program's first collective or transfer over more than one device, if any (one over a
        mesh of one device runs without a communicator: a local copy, `communicator.OneDevice`).
        Found once: a walk of the function on every call cost a 10 000-op program 15 ms a run
        (1.5 us an op, ten times the interpreter's).
        """
        return next(
            (op for op in self.func.walk() if isinstance(op, hir.CommunicationOp) and len(op.mesh_ids) > 1), None
        )

    def _check_devices(self, communicator: Communicator | None) -> None:
        """
        A program that communicates between devices has a communicator, whose job has every device
        of its meshes.
        """
        if communicator is None:
            if (op := self.first_communication) is not None:
                raise LocatedError(
                    op,
                    f"needs the devices of mesh {list(op.mesh_ids)}: run the program with one process per "
                    "device (hir-run under torchrun, or execute(..., communicator=...))",
                )
            return
        world_size = getattr(communicator, "world_size", None)
        if world_size is not None and self.processes > world_size:
            raise LocatedError(
                self.func,
                f"runs on devices {list(self.device_ids)}, which needs {self.processes} processes, "
                f"but the job has {world_size}",
            )

    def _copy_into_outputs(self, results: list[Any], outputs: Sequence[torch.Tensor | None]) -> None:
        """Preallocated outputs the program did not write in place get their result (all shapes checked first)."""
        pending = [(k, out) for k, out in enumerate(outputs) if out is not None and results[k] is not out]
        for k, out in pending:
            if not isinstance(results[k], torch.Tensor) or results[k].shape != out.shape:
                got = tuple(results[k].shape) if isinstance(results[k], torch.Tensor) else type(results[k]).__name__
                raise LocatedError(
                    self.return_op,
                    f"result #{k} has shape {got}, but preallocated output #{k} has shape {tuple(out.shape)}",
                )
        for k, out in pending:
            out.copy_(results[k])
            results[k] = out

    @property
    def return_op(self) -> func.ReturnOp:
        terminator = self.func.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        return terminator


def compile_program(module: ModuleOp, entry: str = "main", *, race_check: bool = False) -> Program:
    """Compiles `@entry` of a verified module; with `race_check`, every run checks for races between streams."""
    if not isinstance(module, ModuleOp):
        raise TypeError(
            f"compile_program takes a parsed module (hir.parse, hir.parse_file), got {type(module).__name__}"
        )
    function = _find_function(module, entry)
    if any(isinstance(op, func.CallOp) for op in function.walk()):
        # Calls between fusion-level functions run inlined, as convert-fusion-to-hir lowers them.
        module = module.clone()
        inline_calls(module)
        function = _find_function(module, entry)
    check_signature(function)  # a module built in Python may not have been verified
    if not race_check:  # the race checker reports what an unwaited transfer races with instead
        _check_waited(function)
    compilation = _compile_context(race_check)
    args = function.body.block.args
    arg_slots = compilation.slots_of(args)
    body = compilation.compile_block(function.body.block)
    if not race_check:  # the checker keeps its own view of every buffer's accesses until the end
        body = release_after_last_use(function, body, compilation)
    terminator = function.body.block.last_op
    assert isinstance(terminator, func.ReturnOp)
    result_slots = compilation.slots_of(terminator.arguments)
    allocated = {
        k: compilation.slot(v)
        for k, v in enumerate(terminator.arguments)
        if isinstance(v.owner, hir.AllocateOp) and v.owner.parent_block() is function.body.block
    }
    return Program(function, body, compilation.slots, arg_slots, result_slots, allocated, race_check)


def _check_waited(function: func.FuncOp) -> None:
    """
    Every collective or transfer is waited for: it is posted asynchronously, and without a
    `hir.wait` on its work nothing completes it before its buffers are read or returned (a run
    returned the buffer of an unwaited all-reduce unreduced).
    """
    for op in function.walk():
        if isinstance(op, hir.CommunicationOp) and not op.result.uses:
            raise LocatedError(
                op, f"the work of this {op.name} is never waited for: add `hir.wait` on it before its buffers are read"
            )


def _compile_context(race_check: bool, profile: bool = False) -> CompileContext:
    return (RaceCheckContext if race_check else CompileContext)(STEP_COMPILERS, profile=profile)


def execute(
    module: ModuleOp, inputs: Sequence[Any], *, entry: str = "main", race_check: bool = False, **options: Any
) -> list[Any]:
    """Compiles and runs `@entry` once; `options` are those of `Program.__call__`."""
    return compile_program(module, entry, race_check=race_check)(inputs, **options)


def _find_function(module: ModuleOp, entry: str) -> func.FuncOp:
    names = []
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            if op.sym_name.data == entry:
                if not op.body.blocks:
                    raise LocatedError(op, f"@{entry} is a declaration without a body")
                return op
            names.append(op.sym_name.data)
    available = ", ".join(f"@{n}" for n in names) or "none"
    raise LocatedError(module, f"no function @{entry} to run (functions: {available})")


@dataclass(frozen=True)
class _Expected:
    """
    What an input or preallocated output of type `type` must be, worked out once per program:
    every call checks every value, and reading a shape and a dtype out of an xDSL type costs
    more than the comparisons.
    """

    type: Attribute
    integer: bool
    shaped: bool
    shape: tuple[int, ...]
    static: bool
    """No dynamic extent: the value's shape must equal `shape`."""
    dtype: torch.dtype | None
    """None for an element type the runtime cannot take (`shaped_dtype` says why, when a value gets there)."""

    @classmethod
    def of(cls, t: Attribute) -> _Expected:
        shaped = isinstance(t, TensorType | MemRefType)
        shape = tuple(t.get_shape()) if shaped else ()
        dtype = None
        if shaped:
            try:
                dtype = shaped_dtype(t)
            except ValueError:
                pass
        return cls(t, isinstance(t, IndexType | IntegerType), shaped, shape, DYNAMIC_INDEX not in shape, dtype)

    def check(self, where: func.FuncOp, position: int, role: str, value: Any, device: torch.device | None) -> None:
        """Raises a located error naming `role #position` when `value` does not fit (on `device`, if given)."""
        t = self.type
        if self.integer:
            if not isinstance(value, int) or isinstance(value, bool):
                raise LocatedError(where, f"{role} #{position} must be an integer ({t}), got {type(value).__name__}")
            bits = std_ops.width(t) or std_ops.INDEX_WIDTH
            low, high = (0, 2) if bits == 1 else (-(1 << (bits - 1)), 1 << (bits - 1))  # i1: 0 or 1
            if not low <= value < high:
                raise LocatedError(where, f"{role} #{position} is {value}, outside the {bits}-bit range of {t}")
            return
        if not self.shaped:
            raise LocatedError(where, f"{role} #{position} has type {t}, which the runtime cannot take")
        if not isinstance(value, torch.Tensor):
            raise LocatedError(where, f"{role} #{position} must be a torch.Tensor ({t}), got {type(value).__name__}")
        if value.layout != torch.strided:
            raise LocatedError(
                where, f"{role} #{position} is a {value.layout} tensor; the program takes dense (strided) tensors ({t})"
            )
        expected = self.shape
        if (value.shape != expected) if self.static else not _fits(expected, value.shape):
            raise LocatedError(
                where, f"{role} #{position} has shape {fmt(tuple(value.shape))}, expected {fmt(expected)} ({t})"
            )
        dtype = self.dtype if self.dtype is not None else shaped_dtype(t)
        if value.dtype != dtype:
            raise LocatedError(where, f"{role} #{position} has dtype {value.dtype}, expected {dtype} ({t})")
        if device is None:
            return
        on = value.device
        if on.type != device.type or (device.index is not None and on.index != device.index):
            raise LocatedError(where, f"{role} #{position} is on {on}, but the program runs on {device}")


def _fits(expected: tuple[int, ...], shape: torch.Size) -> bool:
    """Whether `shape` is `expected`, where a dynamic extent matches any."""
    return len(expected) == len(shape) and all(e in (DYNAMIC_INDEX, d) for e, d in zip(expected, shape))


def _replay_of(captured: cuda_graph_mode.CapturedRun, held: list[bool]) -> Callable[[Sequence[Any]], list[Any] | None]:
    """A captured graph's replay without the call's checks; None where an input it reads in place has moved."""
    none: list[torch.Tensor | None] = [None] * len(held)

    def replay(given: Sequence[Any]) -> list[Any] | None:
        if not captured.reads_from(given):
            return None
        return _only_held(captured.replay(given, none), held)

    return replay


@dataclass(frozen=True)
class _LastReplay:
    """
    A replayed call's arguments, to know the next call with the very same tensors (still alive,
    at the same memory, of the same shape, strides, dtype and device) and settings: its checks
    held for them, so it replays at once.
    """

    tensors: list[tuple[weakref.ref[torch.Tensor], int, torch.Size, tuple[int, ...], torch.dtype, torch.device] | None]
    others: list[Any]
    settings: tuple[Any, ...]
    """The device asked for, the stream count, the communicator's id, the inputs read in place."""
    key: cuda_graph_mode.Signature
    """The graph's signature, under which `captured` must still be in `Program.graphs`."""
    captured: cuda_graph_mode.CapturedRun
    run: Callable[[Sequence[Any]], list[Any] | None]

    @classmethod
    def of(
        cls, inputs: Sequence[Any], settings: tuple[Any, ...], key: cuda_graph_mode.Signature,
        captured: cuda_graph_mode.CapturedRun, run: Callable[[Sequence[Any]], list[Any] | None],
    ) -> _LastReplay:  # fmt: skip
        tensors = [
            (weakref.ref(v), v.data_ptr(), v.shape, v.stride(), v.dtype, v.device)
            if isinstance(v, torch.Tensor)
            else None
            for v in inputs
        ]
        others = [None if isinstance(v, torch.Tensor) else v for v in inputs]
        return cls(tensors, others, settings, key, captured, run)

    def repeats(self, inputs: Sequence[Any], settings: tuple[Any, ...]) -> bool:
        if len(inputs) != len(self.tensors) or settings != self.settings:
            return False
        for value, known, other in zip(inputs, self.tensors, self.others):
            if known is None:
                if isinstance(value, torch.Tensor) or value != other or type(value) is not type(other):
                    return False
                continue
            ref, pointer, shape, stride, dtype, on = known
            if ref() is not value or value.data_ptr() != pointer or value.shape != shape or value.stride() != stride:
                return False
            if value.dtype != dtype or value.device != on:
                return False
        return True


def _only_held(results: list[Any], held: Sequence[bool]) -> list[Any]:
    """The results, with None for each output this device does not hold (`Program.held_outputs`)."""
    return results if all(held) else [r if keep else None for r, keep in zip(results, held)]


def _own_results(results: list[Any], outputs: Sequence[torch.Tensor | None], inputs: Sequence[Any]) -> None:
    """
    Value semantics of a fusion-level function: each result gets memory of its own. Eager torch
    returns views where it can (a returned argument, an identity permute or cast, a broadcast's
    expand), which would let the caller's writes reach an input or another result.
    """
    seen = {t.untyped_storage().data_ptr() for t in inputs if isinstance(t, torch.Tensor) and t.numel()}
    for k, t in enumerate(results):
        if not isinstance(t, torch.Tensor) or not t.numel() or outputs[k] is not None:
            continue
        storage = t.untyped_storage().data_ptr()
        expanded = any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))
        if storage in seen or expanded:
            t = results[k] = t.clone(memory_format=torch.contiguous_format)
        seen.add(t.untyped_storage().data_ptr())
