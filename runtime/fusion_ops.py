"""Fusion ops outside a launch: the reference semantics, eager torch on whole tensors."""

from __future__ import annotations

from hir.dialects import fusion
from hir.runtime.compiler import CompileContext, Frame, Step, StepCompilers
from hir.runtime.kernels import eager_kernel

COMPILERS = StepCompilers()
compiles = COMPILERS.compiles


@compiles(*fusion.FUSION_OPS)
def fusion_op(op: fusion.FusionOp, compiler: CompileContext) -> Step:
    kernel = eager_kernel(op)
    ins = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])
    if not ins:  # a constant: made on the run's device

        def make(frame: Frame) -> None:
            frame.env[out] = kernel(device=frame.device)

        return make

    def step(frame: Frame) -> None:
        env = frame.env
        env[out] = kernel(*[env[i] for i in ins])

    return step


@compiles(fusion.SegmentOp)
def segment(op: fusion.SegmentOp, compiler: CompileContext) -> Step:
    block = op.body.block
    ins, args = compiler.slots_of(op.ins), compiler.slots_of(block.args)
    body = compiler.compile_block(block)
    yielded, outs = compiler.slots_of(op.yield_op.values), compiler.slots_of(op.outs)

    def step(frame: Frame) -> None:
        env = frame.env
        for arg, src in zip(args, ins):
            env[arg] = env[src]
        body.run(frame)
        for out, value in zip(outs, yielded):
            env[out] = env[value]

    return step
