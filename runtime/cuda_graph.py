"""
CUDA-graph mode of a compiled program (`program(inputs, cuda_graph=True)`, `hir-run --cuda-graph`).

A run of a lowered program enqueues its kernels, copies and stream switches one hir op at a time,
several microseconds of host time each; a captured CUDA graph replays all of it with one launch.
Per input signature (shapes, dtypes and device of the tensors, the integer inputs, the number of
streams, the communicator) the program is:

1. checked for what cannot be captured (`capture_refusal`): a CPU run, a fusion-level function,
   collectives over a transport that runs on the host (gloo);
2. run once outside capture, on static copies of the inputs: the warm-up, which allocates and
   exchanges the symmetric buffers (a collective rendezvous, host-side), maps the peers' buffers
   and lets torch create its lazily made handles. An input the caller names as read in place
   (`in_place`: a module's own parameter, say) is not copied: the graph reads it at its address,
   so an in-place update between replays is seen without a copy per replay, and a replay whose
   tensor moved elsewhere is captured anew (`CapturedRun.reads_from`);
3. captured, on the same static inputs, into a `torch.cuda.CUDAGraph`: the worker and comm streams
   join the capture through the program's own fork edges (`hir.synchronize` is an event record +
   wait), and leave it through its joins; barriers and peer copies become graph nodes;
4. replayed on the caller's current stream: each input is copied into its static buffer unless the
   caller passed that buffer itself or the graph reads it in place, and each output is copied into
   the caller's preallocated output, if any, else the static output buffer is returned (overwritten by the next replay;
   `hir.compile` returns copies of them instead, frontend/compiled.py).

A capture that fails is ended before the error is raised (`end_failed_capture`): no stream is
left capturing and the caching allocator is not left allocating into the failed graph's pool, so
the process goes on, and can run the program without a graph.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects import func

from hir.diagnostics import LocatedError
from hir.dialects import hir
from hir.dialects.functions import is_hir_function
from hir.runtime.communicator import Communicator

Signature = tuple[Any, ...]
RunOnce = Callable[[list[Any], list[torch.Tensor | None], bool], tuple[list[Any], list[Any]]]
"""Runs the program once: (inputs, outputs, warm_up) -> (results, every value of the run's frame)."""


def signature(inputs: Sequence[Any], device: torch.device, num_streams: int, communicator: object) -> Signature:
    """What a captured graph is specific to: a new signature is captured anew."""
    key: list[Any] = [device, num_streams, id(communicator)]
    for value in inputs:
        if isinstance(value, torch.Tensor):
            key.append((tuple(value.shape), value.dtype, value.device))
        else:
            key.append(value)  # an integer input fixes loop bounds and sizes, as a shape does
    return tuple(key)


class CaptureError(LocatedError):
    """
    The program cannot be captured in a CUDA graph: refused before the capture (`capture_refusal`)
    or failed under it (`capture`). Nothing is left capturing, so the program can still run
    without a graph (what `hir.compile`'s automatic mode does).
    """


def capture_refusal(function: func.FuncOp, device: torch.device, communicator: Communicator | None) -> None:
    """Raises a `CaptureError` when the program cannot be captured; returns when it can."""
    if not is_hir_function(function):
        raise CaptureError(
            function,
            "cannot be captured in a CUDA graph: it is a fusion-level function (the reference, which allocates "
            "its results eagerly); lower it first (-p stream-lowering)",
        )
    for op in function.walk():
        if not isinstance(op, hir.CommunicationOp | hir.BarrierOp | hir.PeerViewOp) or communicator is None:
            continue  # without a communicator the warm-up run reports the missing devices
        refusal = getattr(communicator, "capture_refusal", None)
        reason = (
            f"the communicator ({type(communicator).__name__}) does not say whether its transfers can be "
            "(it has no capture_refusal method)"
            if refusal is None
            else refusal(op.mesh_ids)
        )
        if reason is not None:
            raise CaptureError(op, f"cannot be captured in a CUDA graph: {reason}")
    if device.type != "cuda":
        raise CaptureError(
            function, f"cannot be captured in a CUDA graph: the program runs on {device}, CUDA graphs need a GPU"
        )


@dataclass
class CapturedRun:
    """One input signature's graph, its static input and output buffers, and what they use."""

    graph: torch.cuda.CUDAGraph
    static_inputs: list[Any]
    static_outputs: list[Any]
    keep_alive: list[Any] = field(repr=False, default_factory=list)
    """
    Every buffer of the captured run (symmetric buffers, peer views) and the communicator's works
    posted under capture (`keep_with_capture`): the graph holds their addresses.
    """
    replays: int = 0
    in_place: dict[int, int] = field(default_factory=dict)
    """The inputs the graph reads where they were at the capture: input index -> data pointer."""

    def reads_from(self, inputs: Sequence[Any]) -> bool:
        """Whether every input read in place is still where the graph reads it (else: capture anew)."""
        return all(
            isinstance(inputs[k], torch.Tensor) and inputs[k].data_ptr() == pointer
            and inputs[k].stride() == self.static_inputs[k].stride()
            for k, pointer in self.in_place.items()
        )  # fmt: skip

    def replay(self, inputs: Sequence[Any], outputs: Sequence[torch.Tensor | None]) -> list[Any]:
        for k, (static, given) in enumerate(zip(self.static_inputs, inputs)):
            if isinstance(static, torch.Tensor) and given is not static and k not in self.in_place:
                static.copy_(given)
        self.graph.replay()
        self.replays += 1
        results = list(self.static_outputs)
        for k, out in enumerate(outputs):
            if out is not None and out is not results[k]:
                out.copy_(results[k])
                results[k] = out
        return results


def static_copy(value: Any) -> Any:
    """The graph's own buffer for an input: the caller's tensor may be freed or reused between calls."""
    if not isinstance(value, torch.Tensor):
        return value
    return value.clone(memory_format=torch.contiguous_format)


def capture(
    function: func.FuncOp,
    run_once: RunOnce,
    inputs: Sequence[Any],
    device: torch.device,
    in_place: Collection[int] = (),
    donated: Mapping[int, int] | None = None,
) -> CapturedRun:
    """
    Warm-up run outside capture, then the capture; errors name the op that could not be captured.
    The inputs numbered in `in_place` are read where they are, not from static copies: the caller
    keeps them alive. An output `donated` into an input read in place is written there: the graph's
    output is that input (it moves with it: `reads_from`).
    """
    read_in_place = {k for k in in_place if isinstance(inputs[k], torch.Tensor)}
    static_inputs = [_without_history(v) if k in read_in_place else static_copy(v) for k, v in enumerate(inputs)]
    given: list[torch.Tensor | None] = [None] * len(function.function_type.outputs.data)
    for k, i in (donated or {}).items():
        if i in read_in_place:
            given[k] = static_inputs[i]
    run_once(static_inputs, given, True)  # allocates and exchanges symmetric buffers, maps peers
    torch.cuda.synchronize(device)
    clear_cublas_workspaces()  # the captured GEMMs then allocate theirs in the graph's pool
    graph = torch.cuda.CUDAGraph()
    # A pool of our own naming: after a failed capture it is ended by its id (end_failed_capture).
    pool = torch.cuda.graph_pool_handle()
    held: list[Any] = []
    _under_way.keep_alive = held
    try:
        with torch.cuda.device(device):
            caller_stream = torch.cuda.current_stream()
            # thread_local: only this thread's calls must be capturable; NCCL's watchdog thread keeps
            # polling its own events meanwhile, which the global mode would count against the capture.
            capturing = torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local")
            try:
                with capturing:
                    outputs, frame_values = run_once(static_inputs, given, False)
            except BaseException:
                end_failed_capture(graph, capturing, pool, caller_stream)
                raise
    except Exception as err:
        raise _capture_error(function, err) from err
    finally:
        _under_way.keep_alive = None
        clear_cublas_workspaces()  # eager GEMMs after it must not share the graph's workspaces
    pointers = {k: static_inputs[k].data_ptr() for k in sorted(read_in_place)}
    # The storages read in place stay allocated as long as the graph, even if a tensor is given another.
    storages = [static_inputs[k].untyped_storage() for k in pointers]
    return CapturedRun(graph, static_inputs, outputs, keep_alive=[*frame_values, *held, *storages], in_place=pointers)


def _without_history(t: torch.Tensor) -> torch.Tensor:
    """
    An input read in place, as the graph keeps it: detached where it has a history (a training
    step's parameter given through the gate that gives the call's inputs their gradients), whose
    nodes would keep that history's other inputs, the first call's arguments among them, alive as
    long as the graph.
    """
    return t.detach() if t.grad_fn is not None else t


def clear_cublas_workspaces() -> None:
    """
    Drops cuBLAS's workspaces, as torch.compile's CUDA graph trees do around each recording.

    cuBLAS keeps one workspace per (handle, stream), allocated at its first GEMM there and freed by
    `torch._C._cuda_clearCublasWorkspaces`, which torch.compile(mode="reduce-overhead") calls
    around every recording. A graph that captured GEMMs with a workspace allocated by an eager run
    keeps writing into it after such a clear, when the memory belongs to other tensors: wrong
    results, or an illegal memory access. Cleared before the capture, the captured GEMMs allocate
    their workspaces in the graph's private pool, which lives as long as the graph; cleared after
    it, eager GEMMs do not write into workspaces that a replay uses.
    """
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()


def _capture_error(function: func.FuncOp, err: Exception) -> CaptureError:
    """The located error of a failed capture: the op that failed under it, else the function."""
    # An op that failed under capture makes ending the capture fail too: report the op.
    cause = next((e for e in _chain(err) if isinstance(e, LocatedError)), None)
    if cause is not None:
        message = cause.message
        if not message.startswith("cannot be captured in a CUDA graph: "):
            message = f"cannot be captured in a CUDA graph: {message}"
        return CaptureError(cause.op, message)
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return CaptureError(function, f"cannot be captured in a CUDA graph: {first}")


_under_way = threading.local()
"""`keep_alive`: the list that holds what the capture under way on this thread must keep alive."""


def keep_with_capture(values: Sequence[Any]) -> bool:
    """
    Keeps `values` (a communicator's pending works, say) alive as long as the graph that `capture`
    is capturing on this thread: the graph replays the work they stand for. False when `capture`
    is not capturing on this thread (a caller's own `torch.cuda.graph`, say).
    """
    held = getattr(_under_way, "keep_alive", None)
    if held is None:
        return False
    held.extend(values)
    return True


_abandoned: list[torch.cuda.CUDAGraph] = []
"""Graphs whose capture failed, kept alive: torch's host allocator may still hold a filter that reads them."""


def end_failed_capture(
    graph: torch.cuda.CUDAGraph, capturing: Any, pool: tuple[int, int], caller_stream: torch.cuda.Stream
) -> None:
    """
    Ends what a failed capture left open, so that the process can go on (and run the program
    without a graph). `torch.cuda.graph`'s exit calls `capture_end`, which raises when an op
    invalidated the capture (`cudaStreamEndCapture` fails) before it tells the caching allocator
    that the capture is over and before it restores the caller's stream: the allocator would
    count a capture under way for the rest of the process (it then stops recycling memory used
    across streams, and torch versions that check it fail their `captures_underway.empty()`
    internal assert at the next `empty_cache`), and later work would go to the capture stream.
    """
    stream = capturing.capture_stream
    with torch.cuda.stream(stream):
        still_capturing = torch.cuda.is_current_stream_capturing()
        if still_capturing:  # the exit did not get as far as ending it
            with contextlib.suppress(RuntimeError):
                graph.capture_end()
    device = stream.device.index if stream.device.index is not None else torch.cuda.current_device()
    end_allocate = getattr(torch._C, "_cuda_endAllocateToPool", None) or getattr(
        torch._C, "_cuda_endAllocateCurrentStreamToPool", None
    )  # torch < 2.8 names it after the stream
    if end_allocate is not None:
        try:
            end_allocate(device, pool)
        except RuntimeError:
            pass  # capture_end got that far: the graph's reset releases the pool
        else:
            torch._C._cuda_releasePool(device, pool)  # its blocks are freed once unused
    with contextlib.suppress(RuntimeError):
        graph.reset()
    _abandoned.append(graph)
    torch.cuda.set_stream(caller_stream)


def _chain(err: BaseException) -> list[BaseException]:
    """The error and those it was raised during or from, innermost last."""
    seen: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen
