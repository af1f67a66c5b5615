"""hir ops: buffers are torch tensors (views alias their base), streams come from `Frame.streams`."""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType

from hir.dialects import fusion, hir
from hir.dialects.hir import chunk_bounds
from hir.runtime.communicator import Communicator, Work
from hir.runtime.compiler import UNSET, CompileContext, Frame, Step, StepCompilers
from hir.runtime.dtypes import shaped_dtype
from hir.runtime.kernels import out_kernel

COMPILERS = StepCompilers()
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
    key = id(op)

    def step(frame: Frame) -> None:
        env = frame.env
        preallocated = frame.preallocated.get(out)
        if preallocated is not None:
            env[out] = preallocated
            return
        shape = [env[d] if is_dynamic else d for is_dynamic, d in extents]
        if symmetric and frame.communicator is not None:
            # Cached per op: symmetric allocation is collective and costly, the buffer is reused.
            env[out] = frame.communicator.empty_symmetric(key, shape, dtype, frame.device)
        else:
            env[out] = torch.empty(shape, dtype=dtype, device=frame.device)

    return step


@compiles(hir.DeallocateOp)
def deallocate(op: hir.DeallocateOp, compiler: CompileContext) -> Step:
    buffer = compiler.slot(op.buffer)

    def step(frame: Frame) -> None:
        frame.env[buffer] = UNSET

    return step


@compiles(hir.AliasSelectOp)
def alias_select(op: hir.AliasSelectOp, compiler: CompileContext) -> Step:
    buffer, index, out = compiler.slot(op.buffer), compiler.slot(op.index), compiler.slot(op.result)
    axis = op.axis_value

    def step(frame: Frame) -> None:
        env = frame.env
        env[out] = env[buffer].select(axis, env[index])

    return step


@compiles(hir.AliasChunkOp)
def alias_chunk(op: hir.AliasChunkOp, compiler: CompileContext) -> Step:
    buffer, index, out = compiler.slot(op.buffer), compiler.slot(op.index), compiler.slot(op.result)
    axis, chunks = op.axis_value, op.chunks_value

    def step(frame: Frame) -> None:
        env = frame.env
        base = env[buffer]
        start, length = chunk_bounds(base.shape[axis], chunks, env[index])
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
        for i in range(env[lb], env[ub], env[st]):
            env[iv] = i
            run(frame)

    return step


@compiles(hir.StreamForOp)
def stream_for(op: hir.StreamForOp, compiler: CompileContext) -> Step:
    """The fork/join semantics of `hir.stream_for`, the same stream calls as its expansion makes."""
    lb, ub, st = compiler.slot(op.lb), compiler.slot(op.ub), compiler.slot(op.step)
    num_streams, main = compiler.slot(op.num_streams), compiler.slot(op.main)
    iv, worker = compiler.slot(op.induction_var), compiler.slot(op.worker)
    body = compiler.compile_block(op.body.block)

    def step(frame: Frame) -> None:
        env, streams = frame.env, frame.streams
        caller, count = env[main], env[num_streams]
        indices = range(env[lb], env[ub], env[st])
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

    # One standard op whose operands are region arguments: its out= form writes the destination.
    if len(ops) == 2 and len(outs) == 1 and isinstance(ops[0], fusion.FusionOp):
        only = ops[0]
        if terminator.values[0] is only.results[0] and all(o in arg_index for o in only.operands):
            kernel = out_kernel(only)
            operand_slots = [ins[arg_index[o]] for o in only.operands]
            out = outs[0]

            def single(frame: Frame) -> None:
                env = frame.env
                kernel(env[out], *[env[s] for s in operand_slots])

            return single

    # A segment: run op by op, then copy each yielded value into its destination once.
    arg_slots = compiler.slots_of(block.args)
    body = compiler.compile_block(block)
    yielded = compiler.slots_of(terminator.values)

    def segment(frame: Frame) -> None:
        env = frame.env
        for arg, src in zip(arg_slots, ins):
            env[arg] = env[src]
        body.run(frame)
        for out, value in zip(outs, yielded):
            env[out].copy_(env[value])

    return segment


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

    def step(frame: Frame) -> None:
        frame.env[out] = frame.streams.pool(frame.env[index])

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


Method = Callable[[Communicator], Callable[..., Work | None]]
"""Picks an op's method of the `Communicator`, e.g. `lambda c: c.allgather`."""


def communication(op: hir.CommunicationOp, compiler: CompileContext, method: Method, *properties: object) -> Step:
    """
    A step that calls the op's `Communicator` method with its operands' values, `properties` and
    mesh, and keeps what `hir.wait` waits for.
    """
    operands = compiler.slots_of(op.operands)
    out = compiler.slot(op.result)
    mesh = op.mesh_ids

    def step(frame: Frame) -> None:
        communicator = frame.communicator
        if communicator is None:
            raise RuntimeError(
                f"{op.name} needs the devices of mesh {list(mesh)}: run the program with one process per "
                "device (hir-run under torchrun, or execute(..., communicator=...))"
            )
        env = frame.env
        env[out] = method(communicator)(*[env[s] for s in operands], *properties, mesh)

    return step


@compiles(hir.AllgatherOp)
def allgather(op: hir.AllgatherOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.allgather, op.axis.value.data)


@compiles(hir.AllreduceOp)
def allreduce(op: hir.AllreduceOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.allreduce, op.kind.data)


@compiles(hir.ReduceScatterOp)
def reduce_scatter(op: hir.ReduceScatterOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.reduce_scatter, op.axis.value.data, op.kind.data)


@compiles(hir.BroadcastOp)
def broadcast(op: hir.BroadcastOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.broadcast)


@compiles(hir.SendOp)
def send(op: hir.SendOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.send)


@compiles(hir.RecvOp)
def recv(op: hir.RecvOp, compiler: CompileContext) -> Step:
    return communication(op, compiler, lambda c: c.recv)


@compiles(hir.WaitOp)
def wait(op: hir.WaitOp, compiler: CompileContext) -> Step:
    work = compiler.slot(op.work)

    def step(frame: Frame) -> None:
        handle = frame.env[work]
        if handle is not None:
            handle.wait()

    return step


# -- symmetric memory -----------------------------------------------------------------------------


@compiles(hir.DeviceIndexOp)
def device_index(op: hir.DeviceIndexOp, compiler: CompileContext) -> Step:
    out = compiler.slot(op.result)
    mesh = op.mesh_ids
    outside = op.outside.value.data if op.outside is not None else None

    def step(frame: Frame) -> None:
        communicator = frame.communicator
        if communicator is None:
            frame.env[out] = 0
            return
        try:
            frame.env[out] = communicator.position_in(mesh)
        except ValueError:  # not in the mesh
            if outside is None:
                raise
            frame.env[out] = outside  # this device's result of what follows carries no meaning

    return step


@compiles(hir.PeerViewOp)
def peer_view(op: hir.PeerViewOp, compiler: CompileContext) -> Step:
    buffer, device, out = compiler.slot(op.buffer), compiler.slot(op.device), compiler.slot(op.result)
    mesh = op.mesh_ids

    def step(frame: Frame) -> None:
        env = frame.env
        communicator = frame.communicator
        if communicator is None:
            if env[device] != 0:
                raise ValueError(f"peer view of device {env[device]} on a single device")
            env[out] = env[buffer]
            return
        env[out] = communicator.peer_view(env[buffer], mesh[env[device]])

    return step


@compiles(hir.BarrierOp)
def barrier(op: hir.BarrierOp, compiler: CompileContext) -> Step:
    mesh = op.mesh_ids

    def step(frame: Frame) -> None:
        if frame.communicator is not None:
            frame.communicator.barrier(mesh)

    return step
