"""hir ops: buffers are torch tensors (views alias their base), streams come from `Frame.streams`."""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Operation, SSAValue

from hir.diagnostics import location_of
from hir.dialects import fusion, hir
from hir.dialects.hir import chunk_bounds
from hir.runtime.communicator import ONE_DEVICE, Communicator, OneDevice, Work
from hir.runtime.compiler import (
    UNSET,
    CompileContext,
    CompiledBlock,
    Frame,
    Step,
    StepCompilers,
    body_ending_in,
)
from hir.runtime.dtypes import shaped_dtype
from hir.runtime.kernels import out_kernel
from hir.runtime.memory import overlaps
from hir.runtime.poison import poison
from hir.runtime.residual_gemm import residual_gemm
from hir.runtime.result_adoption import FRESH_RESULT_KINDS, VIEW_KINDS, adopt, fresh_destinations, input_spans

COMPILERS = StepCompilers()


class BufferKey:
    """
    The key of one `hir.allocate symmetric` of one compiled program in the symmetric heap. An
    `id()` could be reused after a program is freed, on one rank and not on another: that rank
    would skip an allocation (a collective) the others make.
    """

    __slots__ = ()


compiles = COMPILERS.compiles

# -- buffers --------------------------------------------------------------------------------------


@compiles(hir.AllocateOp)
def allocate(op: hir.AllocateOp, compiler: CompileContext) -> Step:
    t = op.result.type
    assert isinstance(t, MemRefType)
    dtype = shaped_dtype(t)
    static_shape = t.get_shape()
    dynamic = iter(compiler.slots_of(op.dynamic_sizes))
    # Per axis: (False, static extent) or (True, slot of the dynamic size).
    extents = [(False, d) if d != DYNAMIC_INDEX else (True, next(dynamic)) for d in static_shape]
    out = compiler.slot(op.result)
    symmetric = op.symmetric is not None
    key = BufferKey()  # this op of this compiled program: unique while the program lives
    dynamic_axes = any(is_dynamic for is_dynamic, _ in extents)
    # A static shape is the same in every run: worked out (and checked) here, once.
    fixed = None if dynamic_axes or any(d < 0 for d in static_shape) else list(static_shape)

    def step(frame: Frame) -> None:
        env = frame.env
        preallocated = frame.preallocated.get(out) if frame.preallocated else None
        if preallocated is not None:
            if dynamic_axes:  # its extents are known only now: the output must have them
                shape = [env[d] if is_dynamic else d for is_dynamic, d in extents]
                if list(preallocated.shape) != shape:
                    raise ValueError(
                        f"the preallocated output has shape {tuple(preallocated.shape)}, "
                        f"but this run allocates {tuple(shape)}"
                    )
            env[out] = preallocated
            return
        shape = fixed
        if shape is None:
            shape = [env[d] if is_dynamic else d for is_dynamic, d in extents]
            if any(d < 0 for d in shape):
                raise ValueError(f"negative extent in {tuple(shape)}")
        if symmetric and frame.communicator is not None:
            # Cached per op: symmetric allocation is collective and costly, the buffer is reused
            # (poisoned, in that mode, when it is made: runtime/distributed.py).
            env[out] = frame.communicator.empty_symmetric(key, shape, dtype, frame.device)
        elif frame.poison:
            env[out] = poison(torch.empty(shape, dtype=dtype, device=frame.device))
        else:
            env[out] = torch.empty(shape, dtype=dtype, device=frame.device)
        if frame.memory_stats is not None:
            frame.memory_stats.allocated(out, env[out])

    return step


@compiles(hir.DeallocateOp)
def deallocate(op: hir.DeallocateOp, compiler: CompileContext) -> Step:
    buffer = compiler.slot(op.buffer)

    def step(frame: Frame) -> None:
        frame.env[buffer] = UNSET
        if frame.memory_stats is not None:
            frame.memory_stats.released(buffer)

    return step


@compiles(hir.AliasSelectOp)
def alias_select(op: hir.AliasSelectOp, compiler: CompileContext) -> Step:
    buffer, index, out = compiler.slot(op.buffer), compiler.slot(op.index), compiler.slot(op.result)
    axis = op.axis_value

    def step(frame: Frame) -> None:
        env = frame.env
        base, i = env[buffer], env[index]
        if not 0 <= i < base.shape[axis]:  # torch would count a negative index from the end
            raise IndexError(f"index {i} is out of range for axis {axis} of extent {base.shape[axis]}")
        env[out] = base.select(axis, i)

    def outermost(frame: Frame) -> None:
        env = frame.env
        base, i = env[buffer], env[index]
        if not 0 <= i < base.shape[0]:
            raise IndexError(f"index {i} is out of range for axis 0 of extent {base.shape[0]}")
        env[out] = base[i]  # the same view as select(0, i), through torch's faster path for an int index

    return outermost if axis == 0 else step


@compiles(hir.AliasChunkOp)
def alias_chunk(op: hir.AliasChunkOp, compiler: CompileContext) -> Step:
    buffer, index, out = compiler.slot(op.buffer), compiler.slot(op.index), compiler.slot(op.result)
    axis, chunks = op.axis_value, op.chunks_value

    def step(frame: Frame) -> None:
        env = frame.env
        base, i = env[buffer], env[index]
        if not 0 <= i < chunks:
            raise IndexError(f"chunk index {i} is out of range for {chunks} chunks")
        start, length = chunk_bounds(base.shape[axis], chunks, i)
        env[out] = base.narrow(axis, start, length)

    return step


# -- control flow ---------------------------------------------------------------------------------


@compiles(hir.ForOp)
def for_loop(op: hir.ForOp, compiler: CompileContext) -> Step:
    lb, ub, st, iv = compiler.slot(op.lb), compiler.slot(op.ub), compiler.slot(op.step), compiler.slot(op.induction_var)
    body = compiler.compile_block(op.body.block)

    def step(frame: Frame) -> None:
        env = frame.env
        run = body.run
        for i in loop_indices(env[lb], env[ub], env[st]):
            env[iv] = i
            run(frame)

    return step


def loop_indices(lb: int, ub: int, step: int) -> range:
    """The indices of a hir loop: from lb >= 0 up to ub, by a positive step (none when ub <= lb)."""
    if step < 1:
        raise ValueError(f"the step must be positive, got {step}")
    if lb < 0:
        raise ValueError(f"the lower bound must be >= 0 (loops iterate over indices), got {lb}")
    return range(lb, ub, step)


@compiles(hir.StreamForOp)
def stream_for(op: hir.StreamForOp, compiler: CompileContext) -> Step:
    """The fork/join semantics of `hir.stream_for`, the same stream calls as its expansion makes."""
    lb, ub, st = compiler.slot(op.lb), compiler.slot(op.ub), compiler.slot(op.step)
    num_streams, main = compiler.slot(op.num_streams), compiler.slot(op.main)
    iv, worker = compiler.slot(op.induction_var), compiler.slot(op.worker)
    body = compiler.compile_block(op.body.block)
    if (first := op.single_iteration()) is not None:

        def on_caller(frame: Frame) -> None:  # one iteration: `main` is its worker (no fork, no join)
            env = frame.env
            caller = env[main]
            frame.streams.set_current(caller)
            env[iv], env[worker] = first, caller
            body.run(frame)

        return on_caller

    def step(frame: Frame) -> None:
        env, streams = frame.env, frame.streams
        caller, count = env[main], env[num_streams]
        if count < 1:
            raise ValueError(f"the stream count must be >= 1, got {count}")
        indices = loop_indices(env[lb], env[ub], env[st])
        for i in indices:  # the fork, before any iteration's work
            streams.set_current(streams.pool(i % count))
            streams.wait_for(caller)
        run = body.run
        for i in indices:
            stream = streams.pool(i % count)
            streams.set_current(stream)
            env[iv], env[worker] = i, stream
            run(frame)
            streams.set_current(caller)  # the join
            streams.wait_for(stream)

    return step


# -- compute --------------------------------------------------------------------------------------


@compiles(hir.LaunchOp)
def launch(op: hir.LaunchOp, compiler: CompileContext) -> Step:
    if op.is_resharding:
        raise ValueError("this launch reshards data between devices: lower it with hir-lower-communication first")
    block = op.body.block
    ins, outs = compiler.slots_of(op.ins), compiler.slots_of(op.outs)
    ops = list(block.ops)
    terminator = ops[-1]
    assert isinstance(terminator, hir.YieldOp)
    arg_index = {arg: i for i, arg in enumerate(block.args)}

    # Outs that may be views of one buffer must not overlap: which write would win?
    shared_outs = [(j, k) for k in range(len(outs)) for j in range(k) if _may_share_memory(op.outs[j], op.outs[k])]
    # Fresh destinations take the kernel's own result instead of a copy of it (runtime/result_adoption.py).
    fresh: list[list[int] | None] = [None] * len(outs)
    if compiler.adopts_results:
        fresh = [None if c is None else compiler.slots_of(c) for c in fresh_destinations(op, compiler.block_orders)]
    last = ops[-2] if len(ops) >= 2 else None
    fresh_result = isinstance(last, FRESH_RESULT_KINDS + VIEW_KINDS) and any(chain is not None for chain in fresh)

    # One standard op whose operands are region arguments: its out= form writes the destination.
    if len(ops) == 2 and len(outs) == 1 and isinstance(ops[0], fusion.FusionOp) and not fresh_result:
        only = ops[0]
        if terminator.values[0] is only.results[0] and all(o in arg_index for o in only.operands):
            kernel = _keeping_shape(out_kernel(only))
            operand_slots = [ins[arg_index[o]] for o in only.operands]
            out = outs[0]
            # Torch computes an elementwise op in place correctly, but a matmul, a reduction or a
            # copy with another layout that writes memory it reads gives a wrong result or fails:
            # when an operand may share memory with the destination, check, and use a temporary.
            elementwise = isinstance(only, fusion.UnaryFusionOp | fusion.BinaryFusionOp)
            shared = [
                slot
                for slot, o in zip(operand_slots, only.operands)
                if not elementwise and _may_share_memory(op.outs[0], op.ins[arg_index[o]])
            ]

            def single(frame: Frame) -> None:
                env = frame.env
                kernel(env[out], *[env[s] for s in operand_slots])

            def single_via_temporary(frame: Frame) -> None:
                env = frame.env
                destination = env[out]
                if any(overlaps(destination, env[s]) for s in shared):
                    temporary = torch.empty(destination.shape, dtype=destination.dtype, device=destination.device)
                    kernel(temporary, *[env[s] for s in operand_slots])
                    destination.copy_(temporary)
                else:
                    kernel(destination, *[env[s] for s in operand_slots])

            if shared:
                return single_via_temporary
            return _single_with_operands(kernel, out, operand_slots) or single

    if (accumulating := residual_gemm(op, ops, compiler, _may_share_memory)) is not None:
        return accumulating
    if not fresh_result and (into_destination := _segment_into_destination(op, ops, compiler)) is not None:
        return into_destination

    # A segment: run op by op, then copy each yielded value into its destination once.
    arg_slots = compiler.slots_of(block.args)
    body = compiler.compile_block(block)
    yielded = compiler.slots_of(terminator.values)
    _scatter_into_destinations(body, terminator, outs, compiler)

    adoptable = list(zip(outs, yielded, fresh))
    constants = compiler.constant_storages  # kept across runs: copied, never adopted

    def segment(frame: Frame) -> None:
        env = frame.env
        for j, k in shared_outs:
            if overlaps(env[outs[j]], env[outs[k]]):
                raise ValueError(f"outs #{j} and #{k} overlap: each yielded value needs memory of its own")
        for arg, src in zip(arg_slots, ins):
            env[arg] = env[src]
        body.run(frame)
        adopted: list[torch.Tensor] = []
        spans: list[tuple[int, int]] | None = None  # the operands' storages, once, if a destination is fresh
        for out, value, chain in adoptable:
            destination, result = env[out], env[value]
            if result is destination:  # written there by its op (`_scatter_into_destinations`)
                continue
            if result.shape != destination.shape:  # copy_ would broadcast it: a wrong answer, not an error
                raise ValueError(
                    f"the segment computed a result of shape {tuple(result.shape)} for a destination "
                    f"of shape {tuple(destination.shape)}"
                )
            if chain is not None and result.untyped_storage().data_ptr() not in constants:
                spans = input_spans([env[a] for a in arg_slots]) if spans is None else spans
                if adopt(frame, chain, result, spans, adopted):
                    adopted.append(result)
                    continue
            destination.copy_(result)

    return segment


def _scatter_into_destinations(
    body: CompiledBlock, terminator: Operation, outs: list[int], compiler: CompileContext
) -> None:
    """
    A `fusion.index_copy` of a segment whose result the launch yields writes its destination through
    its `out=` kernel (x copied there, then the named slices), not a tensor of its own copied there
    after (the segment's later ops read the destination, which nothing else writes before the
    launch ends): one pass over x fewer, and none where the destination is x's own memory
    (a KV cache's update donated into its buffer, `Program(..., donated=)`, where the copy of x
    into itself is no copy). A destination that only partly overlaps x takes the eager path.
    """
    destinations = {value: out for value, out in zip(terminator.operands, outs)}
    for k, op in enumerate(body.ops):
        if not isinstance(op, fusion.IndexCopyOp):
            continue
        out = destinations.get(op.result)
        if out is None:
            continue
        into, eager = out_kernel(op), body.steps[k]
        x, index, source = compiler.slots_of(op.operands)
        result = compiler.slot(op.result)

        def step(frame: Frame, into=into, eager=eager, out=out, x=x, index=index, source=source, result=result) -> None:
            env = frame.env
            destination, operand = env[out], env[x]
            same = destination.data_ptr() == operand.data_ptr() and destination.stride() == operand.stride()
            if not same and overlaps(destination, operand):
                eager(frame)
                return
            into(destination, operand, env[index], env[source])
            env[result] = destination

        body.steps[k] = step


def _segment_into_destination(op: hir.LaunchOp, ops: list[Operation], compiler: CompileContext) -> Step | None:
    """
    A segment whose one yielded value is its last op's result, as with views that a GEMM reads
    (fusion-segment's `views_into_contraction`): the ops before it run as usual and the last one
    writes the destination through its out= form, instead of into a temporary then copied. None
    where that does not apply: several outs, a last op without an out= form, a destination that
    may share memory with an input (the temporary keeps that correct).
    """
    if len(op.outs) != 1 or len(ops) < 3:
        return None
    last, terminator = ops[-2], ops[-1]
    if not isinstance(last, fusion.FusionOp) or terminator.operands[0] is not last.results[0]:
        return None
    if any(_may_share_memory(op.outs[0], value) for value in op.ins):
        return None
    try:
        kernel = _keeping_shape(out_kernel(last))
    except NotImplementedError:
        return None
    operand_slots = compiler.slots_of(last.operands)
    (out,) = compiler.slots_of(op.outs)

    def into_destination(frame: Frame) -> None:
        env = frame.env
        kernel(env[out], *[env[s] for s in operand_slots])

    return body_ending_in(compiler, op.body.block.args, op.ins, ops[:-2], last, into_destination)


def _keeping_shape(kernel: Callable[..., object]) -> Callable[..., None]:
    """
    The kernel, failing where torch resized its destination: an `out=` kernel whose result has
    another shape than the buffer it writes resizes that tensor with only a warning, which would
    leave the buffer itself unwritten (a wrong answer, silent where fresh memory is zeros).
    """

    def checked(out: torch.Tensor, *operands: torch.Tensor) -> None:
        shape = out.shape
        kernel(out, *operands)
        if out.shape != shape:
            raise ValueError(
                f"the kernel computed a result of shape {tuple(out.shape)} for a destination of shape {tuple(shape)}"
            )

    return checked


def _single_with_operands(kernel: Callable[..., object], out: int, operands: list[int]) -> Step | None:
    """
    The step of a single-op launch with one or two operands, which reads them without building an
    argument list (a step per iteration of a loop of launches); None for other counts.
    """
    if len(operands) == 1:
        (a,) = operands

        def unary(frame: Frame) -> None:
            env = frame.env
            kernel(env[out], env[a])

        return unary
    if len(operands) == 2:
        a, b = operands

        def binary(frame: Frame) -> None:
            env = frame.env
            kernel(env[out], env[a], env[b])

        return binary
    return None


def _may_share_memory(a: SSAValue, b: SSAValue) -> bool:
    """
    Whether two buffers may overlap, from where they come: views (alias_select, alias_chunk,
    peer_view) share their base's memory; distinct `hir.allocate`s never overlap each other, nor
    an input (a preallocated output is checked against the inputs); inputs may alias each other.
    """
    root_a, root_b = buffer_root(a), buffer_root(b)
    if root_a is root_b:
        return True
    return not isinstance(root_a.owner, hir.AllocateOp) and not isinstance(root_b.owner, hir.AllocateOp)


def buffer_root(value: SSAValue) -> SSAValue:
    """The buffer a view (`hir.alias_select`, `hir.alias_chunk`, `hir.peer_view`) is of."""
    while isinstance(value.owner, hir.AliasSelectOp | hir.AliasChunkOp | hir.PeerViewOp):
        value = value.owner.buffer
    return value


# -- streams --------------------------------------------------------------------------------------


@compiles(hir.GetCurrentStreamOp)
def get_current_stream(op: hir.GetCurrentStreamOp, compiler: CompileContext) -> Step:
    out = compiler.slot(op.result)

    def step(frame: Frame) -> None:
        frame.env[out] = frame.streams.current()

    return step


@compiles(hir.StreamOp)
def stream(op: hir.StreamOp, compiler: CompileContext) -> Step:
    index, out = compiler.slot(op.index), compiler.slot(op.result)
    if op.high_priority is not None:

        def high_priority_step(frame: Frame) -> None:
            frame.env[out] = frame.streams.pool(frame.env[index], high_priority=True)

        return high_priority_step

    def step(frame: Frame) -> None:
        env = frame.env
        k = env[index]
        if k < 0:
            raise IndexError(f"pool stream number {k} is negative")
        env[out] = frame.streams.pool(k)

    return step


@compiles(hir.NumStreamsOp)
def num_streams(op: hir.NumStreamsOp, compiler: CompileContext) -> Step:
    out = compiler.slot(op.result)

    def step(frame: Frame) -> None:
        frame.env[out] = frame.num_streams

    return step


@compiles(hir.SetCurrentStreamOp)
def set_current_stream(op: hir.SetCurrentStreamOp, compiler: CompileContext) -> Step:
    stream_slot = compiler.slot(op.stream)

    def step(frame: Frame) -> None:
        frame.streams.set_current(frame.env[stream_slot])

    return step


@compiles(hir.SynchronizeOp)
def synchronize(op: hir.SynchronizeOp, compiler: CompileContext) -> Step:
    stream_slot = compiler.slot(op.stream)

    def step(frame: Frame) -> None:
        frame.streams.wait_for(frame.env[stream_slot])

    return step


# -- communication --------------------------------------------------------------------------------


Method = Callable[[Communicator | OneDevice], Callable[..., Work | None]]
"""Picks an op's method of the `Communicator`, e.g. `lambda c: c.allgather`."""


def communication(op: hir.CommunicationOp, compiler: CompileContext, method: Method, *properties: object) -> Step:
    """
    A step that calls the op's `Communicator` method with its operands' values, `properties` and
    mesh, and keeps what `hir.wait` waits for. Index operands (a root, a peer) are mesh positions.
    """
    operands = compiler.slots_of(op.operands)
    positions = [slot for slot, v in zip(operands, op.operands) if not isinstance(v.type, MemRefType)]
    out = compiler.slot(op.result)
    mesh = op.mesh_ids

    def step(frame: Frame) -> None:
        communicator: Communicator | OneDevice | None = frame.communicator
        if communicator is None and len(mesh) == 1:  # the one device: a local copy
            communicator = ONE_DEVICE
        if communicator is None:  # Program checks this before the run; a step run on its own may not
            raise RuntimeError(
                f"{op.name} needs the devices of mesh {list(mesh)}: run the program with one process per "
                "device (hir-run under torchrun, or execute(..., communicator=...))"
            )
        env = frame.env
        for slot in positions:
            check_mesh_position(env[slot], mesh)
        env[out] = method(communicator)(*[env[s] for s in operands], *properties, mesh)

    return step


def check_mesh_position(position: int, mesh: tuple[int, ...]) -> None:
    if not 0 <= position < len(mesh):
        raise IndexError(f"mesh position {position} is out of range for mesh {list(mesh)}")


@compiles(hir.AllgatherOp)
def allgather(op: hir.AllgatherOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.allgather, op.axis.value.data)


@compiles(hir.AllreduceOp)
def allreduce(op: hir.AllreduceOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.allreduce, op.kind.data)


@compiles(hir.ReduceScatterOp)
def reduce_scatter(op: hir.ReduceScatterOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.reduce_scatter, op.axis.value.data, op.kind.data)


@compiles(hir.AllToAllOp)
def all_to_all(op: hir.AllToAllOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.all_to_all, op.split_axis.value.data, op.concat_axis.value.data)


@compiles(hir.ReduceOp)
def reduce(op: hir.ReduceOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.reduce, op.kind.data)


@compiles(hir.BroadcastOp)
def broadcast(op: hir.BroadcastOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.broadcast)


@compiles(hir.CollectivePermuteOp)
def collective_permute(op: hir.CollectivePermuteOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.collective_permute, op.offset.value.data)


@compiles(hir.SendOp)
def send(op: hir.SendOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.send)


@compiles(hir.RecvOp)
def recv(op: hir.RecvOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.recv)


@compiles(hir.WaitOp)
def wait(op: hir.WaitOp, compiler: CompileContext) -> Step:
    work = compiler.slot(op.work)
    posted = op.work.owner
    what = (
        f"{posted.name} at {location_of(posted) or 'an unknown location'} over mesh {list(posted.mesh_ids)}"
        if isinstance(posted, hir.CommunicationOp)
        else "the communication"
    )
    mesh = posted.mesh_ids if isinstance(posted, hir.CommunicationOp) else None

    def step(frame: Frame) -> None:
        handle = frame.env[work]
        if handle is not None:
            try:
                handle.wait()
            except Exception as err:
                raise RuntimeError(communication_failure(frame, what, err, mesh)) from err

    return step


def communication_failure(frame: Frame, what: str, error: Exception, mesh: tuple[int, ...] | None) -> str:
    """What failed and, from the communicator, on which rank and which peers did not respond."""
    describe = getattr(frame.communicator, "failure", None)
    if describe is None:
        return f"{what} failed: {str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__}"
    return describe(what, error, mesh)


# -- symmetric memory -----------------------------------------------------------------------------


@compiles(hir.DeviceIndexOp)
def device_index(op: hir.DeviceIndexOp, compiler: CompileContext) -> Step:
    out = compiler.slot(op.result)
    mesh = op.mesh_ids
    outside = op.outside.value.data if op.outside is not None else None

    def step(frame: Frame) -> None:
        communicator = frame.communicator
        position = None if communicator is None else communicator.position_in(mesh)
        if position is None:  # a single device, or a device outside the mesh
            position = 0 if communicator is None or outside is None else outside
        frame.env[out] = position

    return step


@compiles(hir.PeerViewOp)
def peer_view(op: hir.PeerViewOp, compiler: CompileContext) -> Step:
    buffer, device, out = compiler.slot(op.buffer), compiler.slot(op.device), compiler.slot(op.result)
    mesh = op.mesh_ids

    def step(frame: Frame) -> None:
        env = frame.env
        communicator = frame.communicator
        check_mesh_position(env[device], mesh)
        if communicator is None:
            if env[device] != 0:
                raise ValueError(f"peer view of device {env[device]} on a single device")
            env[out] = env[buffer]
            return
        if communicator.position_in(mesh) is None:  # outside the mesh: no part in its transfers
            env[out] = env[buffer]
            return
        env[out] = communicator.peer_view(env[buffer], mesh[env[device]])

    return step


@compiles(hir.BarrierOp)
def barrier(op: hir.BarrierOp, compiler: CompileContext) -> Step:
    mesh = op.mesh_ids

    def step(frame: Frame) -> None:
        if frame.communicator is not None:
            try:
                frame.communicator.barrier(mesh)
            except Exception as err:
                raise RuntimeError(
                    communication_failure(frame, f"hir.barrier over mesh {list(mesh)}", err, mesh)
                ) from err

    return step
