"""
A launch that ends in a GEMM and a residual add of its result (`fusion-segment`'s
`residual_into_contraction`) runs as one GEMM that accumulates into the residual: `torch.addmm`
with beta = 1 writes `residual + a @ b` into the launch's destination, so the add is no kernel of
its own and the GEMM's result no buffer (cuBLAS reads the residual in its epilogue).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.ir import Operation

from hir.dialects import fusion, hir
from hir.runtime.compiler import CompileContext, Frame, Step, body_ending_in


def residual_gemm(
    op: hir.LaunchOp, ops: list[Operation], compiler: CompileContext, may_share_memory: Callable[..., bool]
) -> Step | None:
    """
    The launch as one `addmm` after the views before it, or None where it is not a GEMM (a linear
    without bias, a matmul of 2-D weights) whose one reader is the yielded add of a region
    argument, or where the destination may share memory with an input.
    """
    if len(op.outs) != 1 or len(ops) < 3:
        return None
    gemm, add, terminator = ops[-3], ops[-2], ops[-1]
    if not isinstance(add, fusion.AddOp) or terminator.operands[0] is not add.result:
        return None
    if (
        not isinstance(gemm, fusion.FusionOp)
        or not fusion.accumulates_rows(gemm)
        or [use.operation for use in gemm.results[0].uses] != [add]
    ):
        return None
    result = gemm.results[0]
    residual = add.rhs if add.lhs is result else add.lhs
    block = op.body.block
    if residual is result or residual not in block.args or add.lhs.type != add.rhs.type:
        return None
    if any(may_share_memory(op.outs[0], value) for value in op.ins):
        return None
    transposed = isinstance(gemm, fusion.LinearOp)  # x @ w.T
    a_slot, b_slot = compiler.slots_of(gemm.operands[:2])
    (residual_slot,) = compiler.slots_of([residual])
    (out,) = compiler.slots_of(op.outs)

    def accumulate(frame: Frame) -> None:
        env = frame.env
        a, b, r, destination = env[a_slot], env[b_slot], env[residual_slot], env[out]
        k, n = a.shape[-1], destination.shape[-1]
        rows = r.reshape(-1, n)
        weights = b.t() if transposed else b
        flat = destination.view(-1, n) if destination.is_contiguous() else None
        if flat is None:  # a strided destination: addmm into a temporary, then one copy
            destination.copy_(torch.addmm(rows, a.reshape(-1, k), weights).view(destination.shape))
        else:
            torch.addmm(rows, a.reshape(-1, k), weights, out=flat)

    return body_ending_in(compiler, block.args, op.ins, ops[:-3], gemm, accumulate)
