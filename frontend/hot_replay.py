"""
The call path of a compiled function that replays the same CUDA graph call after call.

A replayed call's GPU work waits for the host to launch it: the time from the call to the
graph's launch is time the GPU idles when the call starts from an idle GPU (a model's first
layer, a benchmark's timed call). The general path reaches the launch through the checks and
plans every call needs the first time (the train / eval flags and the specialization, the
module's tensors, the input plan, the graph's signature), a few microseconds of Python each.
`HotReplay` keeps what a replay of one graph needs, worked out once: which function and graph
a call with these arguments' key and these flags runs, the graph's input buffers seen in the
shapes the user passes (the copy in needs no reshape), and its output buffers in the shapes the
user gets. A call compares its arguments' key and copies them in (the GPU copies while the host
goes on), checks what else can change between two such calls (the flags, the module's tensors,
the graph still kept, the results the caller still holds) and launches; any other call goes the
general path, after which a new one is built.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from hir.frontend.specialize import fast_key

if TYPE_CHECKING:
    from hir.frontend.compiled import CompiledFunction
    from hir.frontend.module_state import HeldState
    from hir.runtime.cuda_graph import CapturedRun

MISSED = object()
"""A call the hot path does not run: the general path runs it."""


class _Replays(threading.local):
    last_call_replayed = False
    """Whether the general path's last call on this thread replayed a graph it had replayed before."""


replays = _Replays()


@dataclass
class HotReplay:
    """What the replay of one graph needs, kept from the call that built it; called with the next call's arguments."""

    key: tuple[Any, ...]
    """The arguments' `fast_key` (shapes, dtypes, devices, requires_grad, the grad mode)."""
    mode: Any
    """The entry function's flags (`TrainEvalModes.mode`) when built; None without any."""
    target: CompiledFunction
    """The specialization that runs such calls (the entry function itself, or one of its modes or shapes)."""
    replay: Any
    """`target._replay` when built: the general path drops or replaces it where the graph may no longer run."""
    settings: tuple[bool | None, int]
    """The entry function's `cuda_graph` and `num_streams` when built (a call hands them to `target`)."""
    captured: CapturedRun
    copies: list[tuple[torch.Tensor, int]]
    """Per user tensor the graph copies in: its input buffer, in the user's shape, and the argument's position."""
    states: list[tuple[tuple[str, torch.device], dict[str, Any], str, HeldState]]
    """The module's tensors the graph reads: where the function holds them, where the module does, and as held."""
    results: list[tuple[torch.Tensor, torch.Tensor, bool] | None]
    """Per output: its buffer, the user's view of it, and whether it is handed out (else copied); None: not held."""
    on_mesh: bool

    def __call__(self, entry: CompiledFunction, args: Sequence[Any]) -> Any:
        if fast_key(args) != self.key or (entry.cuda_graph, entry.num_streams) != self.settings:
            return MISSED
        if torch._C._are_functorch_transforms_active():  # the general path's error
            return MISSED
        target = self.target
        if target._replay is not self.replay or not target._graph_for(self.replay.device):
            return MISSED  # (a call inside the caller's own capture among them)
        # The copies in go first, so that the GPU works on them while the host checks the rest:
        # only the graph reads its input buffers, so they are harmless where the call then misses.
        for buffer, k in self.copies:
            buffer.copy_(args[k])
        if entry.modes is not None and entry.modes.mode() != self.mode:
            return MISSED
        shared = target._shared_state
        for place, table, attr, held in self.states:
            if shared.get(place) is not held or not held.current(table.get(attr)):
                return MISSED
        # The results the caller still holds are moved (or marked) before the replay overwrites them.
        handed, on_mesh = target._handed, self.on_mesh
        if not handed.reclaim(on_mesh):
            return MISSED
        self.captured.graph.replay()
        self.captured.replays += 1
        handed.mark_stale(target.name)
        results = [
            None if r is None else handed.hand_out(r[1].detach(), r[0], on_mesh) if r[2] else r[1].clone()
            for r in self.results
        ]
        return target.signature.structured(results)


def hot_replay(entry: CompiledFunction, args: Sequence[Any]) -> HotReplay | None:
    """
    The hot path for calls like `args`, right after a call with them replayed its graph; None
    where such calls need more than the hot path does (a function that updates its arguments or
    buffers, lends or borrows saved activations, returns views of its inputs, reads tied weights,
    or whose user tensors are not read as they are passed).
    """
    from hir.frontend.compiled import _buffers_shared, _shares_memory

    key = fast_key(args)
    if key is None or (entry.containers is not None and entry.containers.wanted(args, {})):
        return None
    target, mode = entry, None
    if entry.modes is not None:
        mode = entry.modes.mode()
        target = entry.modes.by_flags.get(mode)
        if target is None:
            return None
    if target.specializations is not None:
        signature = target.specializations.signature
        if len(args) != len(signature.arg_names):
            return None  # defaults filled in by name: the general path places them
        target = target.specializations.lookup(target, args, key)
    replay = target._replay
    if replay is None or replay.key != key or not _plain(target):
        return None
    inputs = target._inputs(args, replay.device)
    captured = target.program.captured_run(
        inputs, device=replay.device, num_streams=replay.num_streams, communicator=target._communicator
    )
    if captured is None or not captured.reads_from(inputs) or captured.in_place.keys() & _user_positions(target):
        return None
    copies = []
    for k, source in enumerate(target.signature.inputs):
        if source.kind != "user":
            continue
        arg, static = args[source.index], captured.static_inputs[k]
        local = target.mode.local_input(arg, source)
        if not _a_view(local, arg) or not static.is_contiguous() or static.numel() != arg.numel():
            return None
        copies.append((static.view(arg.shape), source.index))
    states = []
    for k, source, table, attr in target._input_plans[replay.device][2]:
        place = (source.name, replay.device)
        held = target._shared_state.get(place)
        if held is None or held.tensor is not inputs[k]:
            return None
        states.append((place, table, attr, held))
    held_outputs = target.program.held_outputs(target._communicator)
    results = []
    outputs = captured.static_outputs
    hands_out = target.hands_out_results and target._hands_out_here() and not _buffers_shared(outputs)
    # A result that is no view of its buffer would be a copy made once: the hot path hands out views alone.
    for k, (buffer, kept) in enumerate(zip(outputs, held_outputs)):
        if not kept or buffer is None:
            results.append(None)
            continue
        view = target.mode.local_output(buffer, k)
        if not isinstance(view, torch.Tensor) or view.requires_grad or not _shares_memory(view, buffer):
            return None
        results.append((buffer, view, hands_out))
    settings = (entry.cuda_graph, entry.num_streams)
    return HotReplay(key, mode, target, replay, settings, captured, copies, states, results, target._on_mesh)


def _plain(function: CompiledFunction) -> bool:
    """Whether a call of `function` needs nothing around the replay but the copies in and out."""
    return not (
        function.signature.updates
        or function.signature.output_views
        or function.borrowed_inputs
        or function.lent_outputs
        or function._ties
    )


def _user_positions(function: CompiledFunction) -> set[int]:
    return {k for k, s in enumerate(function.signature.inputs) if s.kind == "user"}


def _a_view(local: torch.Tensor, arg: torch.Tensor) -> bool:
    """Whether the program's form of a user tensor is the tensor itself or a view of all of it (a reshape)."""
    return (
        isinstance(local, torch.Tensor)
        and local.numel() == arg.numel()
        and local.dtype == arg.dtype
        and (local is arg or (arg.numel() > 0 and local.data_ptr() == arg.data_ptr() and arg.is_contiguous()))
    )
