"""
`hir-expand-stream-loops`: every `hir.stream_for` becomes the fork loop and the main loop of
explicit stream ops. This is the only place that knows that shape:

    hir.stream_for %i = %lb to %ub step %st streams(%s) of %n from %main { work }

becomes

    hir.for %i = %lb to %ub step %st {          // fork: every worker waits for %main, before
      %k = arith.remui %i, %n : index           // any iteration's work
      %s = hir.stream %k
      hir.set_current_stream %s
      hir.synchronize %main
    }
    hir.for %i = %lb to %ub step %st {          // main: iteration i on its worker stream
      %k = arith.remui %i, %n : index
      %s = hir.stream %k
      hir.set_current_stream %s
      work
      hir.set_current_stream %main              // join: %main waits for the worker
      hir.synchronize %s
    }

With `peel_first` and constant bounds, the first iteration of the main loop is emitted as
straight-line code between the two loops, and the main loop starts one step later.

Cost: linear in the module: the walker's sweeps (the last finds nothing to do) visit each op a
constant number of times, and each loop's body is moved (not copied) into the main loop; the fork
loop is a constant number of ops and a peeled iteration one copy of the body.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from hir.dialects import hir


def worker_prologue(loop: hir.StreamForOp, body: Block) -> SSAValue:
    """Appends `%s = stream(%i mod %n); set_current_stream %s` to `body`; returns `%s`."""
    k = arith.RemUIOp(body.args[0], loop.num_streams)
    k.result.name_hint = "k"
    stream = hir.StreamOp(k.result)
    stream.result.name_hint = loop.worker.name_hint
    body.add_ops([k, stream, hir.SetCurrentStreamOp(stream.result)])
    return stream.result


def loop_block(loop: hir.StreamForOp) -> Block:
    block = Block(arg_types=[IndexType()])
    block.args[0].name_hint = loop.induction_var.name_hint
    return block


def fork_loop(loop: hir.StreamForOp) -> hir.ForOp:
    body = loop_block(loop)
    worker_prologue(loop, body)
    body.add_op(hir.SynchronizeOp(loop.main))
    return hir.ForOp(loop.lb, loop.ub, loop.step, body)


def main_loop(loop: hir.StreamForOp) -> hir.ForOp:
    """The main loop; takes the work out of `loop`'s body."""
    body = loop_block(loop)
    stream = worker_prologue(loop, body)
    work = [op for op in loop.body.block.ops if not isinstance(op, hir.YieldOp)]
    loop.induction_var.replace_all_uses_with(body.args[0])
    loop.worker.replace_all_uses_with(stream)
    for op in work:
        op.detach()
    body.add_ops([*work, hir.SetCurrentStreamOp(loop.main), hir.SynchronizeOp(stream)])
    return hir.ForOp(loop.lb, loop.ub, loop.step, body)


def constant_value(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def peel_first_iteration(loop: hir.ForOp) -> list[Operation]:
    """
    Iteration `lb` of `loop` as straight-line code, and `lb + step`, which `loop` then starts
    from; nothing when the bounds are not constants or the loop runs no iteration.
    """
    bounds = [constant_value(v) for v in (loop.lb, loop.ub, loop.step)]
    if None in bounds or not range(*bounds):  # type: ignore[arg-type]
        return []
    mapping: dict[SSAValue, SSAValue] = {loop.induction_var: loop.lb}
    peeled = [op.clone(value_mapper=mapping) for op in loop.body.block.ops if not isinstance(op, hir.YieldOp)]
    start = arith.AddiOp(loop.lb, loop.step)
    loop.operands = [start.result, loop.ub, loop.step]
    return [*peeled, start]


class ExpandStreamFor(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hir.StreamForOp, rewriter: PatternRewriter) -> None:
        fork, main = fork_loop(op), main_loop(op)
        peeled = peel_first_iteration(main) if op.peel_first is not None else []
        for new in (fork, main):
            new.location = op.location
        rewriter.replace(op, [fork, *peeled, main], [])


class ExpandStreamLoopsPass(ModulePass):
    """Lowers every `hir.stream_for` to a fork loop and a main loop of explicit stream ops."""

    name = "hir-expand-stream-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ExpandStreamFor()).rewrite_module(op)
