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
straight-line code between the two loops, and the main loop starts one step later. A loop of one
iteration (constant bounds) is straight-line code on `%main`, its worker: `hir.set_current_stream
%main`, then `work` with `%i` the lower bound and `%s` replaced by `%main` (no fork, no join).

`join=chain` joins the workers into each other instead of into `%main` in every iteration:
the main loop ends with `work`, and after it

    hir.for %j = %c1 to %n step %c1 {           // pool stream j waits for pool stream j - 1
      %prev = arith.subi %j, %c1 : index
      %sj = hir.stream %j
      %sp = hir.stream %prev
      hir.set_current_stream %sj
      hir.synchronize %sp
    }
    %last = arith.subi %n, %c1 : index
    %sl = hir.stream %last
    hir.set_current_stream %main                // %main waits for the end of the chain
    hir.synchronize %sl

so `%main` has waited for every worker (all streams `i mod n` are pool streams 0..n-1), with n
waits after the loop instead of one per iteration, and two fewer host ops per iteration.

Cost: linear in the module: one walk finds the loops, and each loop's body is moved (not copied)
into the main loop; the fork loop and `join=chain`'s chain are a constant number of ops, a peeled
iteration one copy of the body.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from hir.dialects import hir
from hir.dialects.hir.base import constant_index
from hir.pipeline import one_of, require_one_of


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


def main_loop(loop: hir.StreamForOp, join_caller: bool, rewriter: PatternRewriter) -> hir.ForOp:
    """The main loop; takes the work out of `loop`'s body."""
    body = loop_block(loop)
    stream = worker_prologue(loop, body)
    work = [op for op in loop.body.block.ops if not isinstance(op, hir.YieldOp)]
    index = stream.owner.operands[0]  # type: ignore[union-attr]
    work = [op for op in work if not reuses_stream_index(op, loop, index, rewriter)]
    loop.induction_var.replace_all_uses_with(body.args[0])
    loop.worker.replace_all_uses_with(stream)
    for op in work:
        op.detach()
    body.add_ops(work)
    if join_caller:
        body.add_ops([hir.SetCurrentStreamOp(loop.main), hir.SynchronizeOp(stream)])
    return hir.ForOp(loop.lb, loop.ub, loop.step, body)


def reuses_stream_index(op: Operation, loop: hir.StreamForOp, index: SSAValue, rewriter: PatternRewriter) -> bool:
    """
    Whether `op` computes `i mod n` again (hir-ring-intermediates' slot), in which case its uses
    take the worker's stream index and it is dropped (xDSL's cse leaves arith.remui alone).
    """
    if not isinstance(op, arith.RemUIOp) or op.lhs is not loop.induction_var or op.rhs is not loop.num_streams:
        return False
    rewriter.replace_all_uses_with(op.result, index)
    rewriter.erase(op)
    return True


def chain_join(loop: hir.StreamForOp) -> list[Operation]:
    """Pool streams 1..n-1 each wait for the one before, then `main` waits for the last (module docstring)."""
    one = arith.ConstantOp.from_int_and_width(1, IndexType())
    body = Block(arg_types=[IndexType()])
    j = body.args[0]
    j.name_hint = "j"
    prev = arith.SubiOp(j, one.result)
    later, earlier = hir.StreamOp(j), hir.StreamOp(prev.result)
    prev.result.name_hint, later.result.name_hint, earlier.result.name_hint = "prev", "s_j", "s_prev"
    body.add_ops([prev, later, earlier, hir.SetCurrentStreamOp(later.result), hir.SynchronizeOp(earlier.result)])
    chain = hir.ForOp(one.result, loop.num_streams, one.result, body)
    last = arith.SubiOp(loop.num_streams, one.result)
    last_stream = hir.StreamOp(last.result)
    last.result.name_hint, last_stream.result.name_hint = "last", "s_last"
    return [one, chain, last, last_stream, hir.SetCurrentStreamOp(loop.main), hir.SynchronizeOp(last_stream.result)]


def peel_first_iteration(loop: hir.ForOp) -> list[Operation]:
    """
    Iteration `lb` of `loop` as straight-line code, and `lb + step`, which `loop` then starts
    from; nothing when the bounds are not constants or the loop runs no iteration.
    """
    bounds = [constant_index(v) for v in (loop.lb, loop.ub, loop.step)]
    if None in bounds or not range(*bounds):  # type: ignore[arg-type]
        return []
    mapping: dict[SSAValue, SSAValue] = {loop.induction_var: loop.lb}
    peeled = [op.clone(value_mapper=mapping) for op in loop.body.block.ops if not isinstance(op, hir.YieldOp)]
    start = arith.AddiOp(loop.lb, loop.step)
    loop.operands = [start.result, loop.ub, loop.step]
    return [*peeled, start]


def single_iteration(loop: hir.StreamForOp) -> list[Operation] | None:
    """
    A loop of one iteration (constant bounds) as straight-line code on `%main`, its worker: a fork
    and a join of one worker would only make `%main` wait for work it could have run itself (two
    stream switches and two event waits of host time). None for any other loop.
    """
    if loop.single_iteration() is None:
        return None
    loop.induction_var.replace_all_uses_with(loop.lb)
    loop.worker.replace_all_uses_with(loop.main)
    work = [op for op in loop.body.block.ops if not isinstance(op, hir.YieldOp)]
    for op in work:
        op.detach()
    return [hir.SetCurrentStreamOp(loop.main), *work]


@dataclass
class ExpandStreamFor(RewritePattern):
    join_caller: bool

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hir.StreamForOp, rewriter: PatternRewriter) -> None:
        if (inlined := single_iteration(op)) is not None:
            rewriter.replace(op, inlined, [])
            return
        fork, main = fork_loop(op), main_loop(op, self.join_caller, rewriter)
        peeled = peel_first_iteration(main) if op.peel_first is not None else []
        join = [] if self.join_caller else chain_join(op)
        for new in (fork, main, *join):
            new.location = op.location
        rewriter.replace(op, [fork, *peeled, main, *join], [])


JOINS = ("caller", "chain")


@dataclass(frozen=True)
class ExpandStreamLoopsPass(ModulePass):
    """
    Lowers every `hir.stream_for` to a fork loop and a main loop of explicit stream ops. `join`:
    `caller` (the caller's stream waits for the worker at the end of every iteration) or `chain`
    (after the loop, each pool stream waits for the one before and the caller's for the last).
    """

    name = "hir-expand-stream-loops"

    join: str = one_of("caller", JOINS)

    def __post_init__(self) -> None:
        require_one_of("join", self.join, JOINS)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Inner loops first: a loop's body, moved or cloned into the new loops, then holds no stream
        # loop left to expand. One walk finds them; the walker would visit every op twice.
        loops = [o for o in op.walk() if isinstance(o, hir.StreamForOp)]
        pattern = ExpandStreamFor(self.join == "caller")
        for loop in reversed(loops):
            pattern.match_and_rewrite(loop, PatternRewriter(loop))
