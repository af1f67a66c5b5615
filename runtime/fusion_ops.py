"""Fusion ops outside a launch: the reference semantics, eager torch on whole tensors."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from xdsl.traits import is_side_effect_free

from hir.dialects import fusion, hir
from hir.runtime.compiler import CompileContext, Frame, Step, StepCompilers
from hir.runtime.kernels import eager_kernel

COMPILERS = StepCompilers()
compiles = COMPILERS.compiles


@compiles(*fusion.FUSION_OPS)
def fusion_op(op: fusion.FusionOp, compiler: CompileContext) -> Step:
    kernel = eager_kernel(op)
    ins = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])
    if not ins and _kept(op):
        return _kept_constant(kernel, out, compiler.constant_storages)
    if not ins:  # a constant at the fusion level (a result the caller gets), or a draw: made at every run

        def make(frame: Frame) -> None:
            frame.env[out] = kernel(device=frame.device)

        return make

    def step(frame: Frame) -> None:
        env = frame.env
        env[out] = kernel(*[env[i] for i in ins])

    return step


KEPT_ELEMENTS = 1 << 16
"""The largest constant a program keeps (a scalar, a small table); a larger one is made at every run."""


def _kept(op: fusion.FusionOp) -> bool:
    """
    A small constant inside a launch: an op without operands and without effects (`fusion.full`,
    `fusion.iota`; not `fusion.random`, whose every run draws anew: it inherits `Pure` from
    `FusionOp`, so the trait alone does not tell, its effects do). Its memory is held as long as
    the program.
    """
    if op.operands or not is_side_effect_free(op) or not isinstance(op.parent_op(), hir.LaunchOp):
        return False
    shape = op.results[0].type.get_shape()  # type: ignore[attr-defined]
    return all(n >= 0 for n in shape) and math.prod(shape) <= KEPT_ELEMENTS


def _kept_constant(kernel: Callable[..., torch.Tensor], out: int, storages: set[int]) -> Step:
    """
    A constant inside a launch (`fusion.full`, `fusion.iota`), made at the first run on each
    device and kept: the launch's other ops only read it (a destination takes a copy of it, never
    the tensor itself: `constant_storages`), and a run saves a tensor's creation, host time that
    a GPU run pays per launch (an allocation and a fill kernel).
    """
    made: dict[torch.device, torch.Tensor] = {}

    def kept(frame: Frame) -> None:
        constant = made.get(frame.device)
        if constant is None:
            constant = made[frame.device] = kernel(device=frame.device)
            storages.add(constant.untyped_storage().data_ptr())
        frame.env[out] = constant

    return kept


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
