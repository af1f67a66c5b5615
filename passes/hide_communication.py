"""
`fusion-hide-communication`: moves work that no communication waits for to just after a
communication, so that it runs while the data moves.

A backward program computes, between two collectives, both what the next collective sends and
work that nothing sends: the weight gradients. As traced, the weight gradient `g^T @ x` of a
linear comes before its input gradient `g @ W`, so the input gradient's reduce-scatter starts
after both GEMMs and nothing is left to compute while it runs; its tail (the last pieces, the
barrier, the sums) is exposed. Run after the reduce-scatter, the weight gradient hides it.

For each communication in a function's body (an all-gather, a partial sum to reduce, an op whose
operand is resharded), in order:

1. the ops it depends on that are not placed yet go first, in their order as written;
2. then the communication;
3. then work placed before it as written but independent of it, in order as written, until its
   estimated compute time covers the communication's estimated time (the device constants of
   passes/device_constants.py: GEMM flop rate, NCCL bandwidth). The rest waits for the next
   communication, and what no communication takes stays in order at the end. A transfer whose
   time is mostly latency (twice NCCL's latency or less: a norm's weight gradient) takes none.

Only GEMMs (matmul, linear) count as compute, as in the overlap cost model. A function without
communication, with ops that hold regions or have effects (not `Pure`), or with several blocks,
is left as written. The order is a valid one for any input: an op only moves later, and never
after one of its users.

    %a = fusion.set %g  (all-gather)     ->   %a = fusion.set %g
    %w = fusion.matmul %a^T, %x               %d = fusion.matmul %a, %W
    %d = fusion.matmul %a, %W                 %r = fusion.sum %d dims = [0]  (reduce-scatter)
    %r = fusion.sum %d dims = [0]             %w = fusion.matmul %a^T, %x

Cost: linear in the function's ops and their operands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import PassFailedException

from hir.dialects import fusion
from hir.dialects.functions import is_fusion_function
from hir.dialects.parallel_encoding import layout_of
from hir.passes.device_constants import DeviceConstants, load_constants
from hir.passes.overlap_cost import collective_ms, gathered_bytes, gemm_flops, gemm_ms, reduced_bytes
from hir.passes.sharding import is_partial_sum, resharded_operands


def communication_ms(op: Operation, constants: DeviceConstants) -> float | None:
    """The estimated time of the communication `op` makes, or None where it makes none."""
    if isinstance(op, fusion.SumOp) and is_partial_sum(op):
        sent = _bytes(op.x.type, reduced_bytes)
    elif isinstance(op, fusion.FusionOp) and (resharded := resharded_operands(op)):
        sent = sum(_bytes(op.operands[k].type, gathered_bytes) for k in resharded)
    else:
        return None
    return collective_ms(sent, constants)


def _bytes(t: Attribute, moved: Callable[[TensorType], float]) -> float:
    """What `moved` says a tensor of type `t` sends; 0 for one on no mesh (not annotated yet)."""
    if not isinstance(t, TensorType) or not layout_of(t).mesh:
        return 0.0
    return moved(t)


def compute_ms(op: Operation, constants: DeviceConstants) -> float:
    """The estimated time of `op`'s GEMM (0 for an op that is none), as the overlap cost model's."""
    flops = gemm_flops(op)
    return gemm_ms(flops, constants) if flops else 0.0


@dataclass
class _Schedule:
    """The new order of one block's ops (its terminator aside), built op by op."""

    position: dict[Operation, int]
    order: list[Operation]
    placed: set[Operation]

    def place(self, op: Operation) -> None:
        """`op` after the ops it reads that are not placed yet, those in their order as written."""
        needed: set[Operation] = set()
        stack = [op]
        while stack:
            current = stack.pop()
            for operand in current.operands:
                owner = operand.owner
                if isinstance(owner, Operation) and owner in self.position and owner not in self.placed:
                    if owner not in needed:
                        needed.add(owner)
                        stack.append(owner)
        for producer in sorted(needed, key=self.position.__getitem__):
            self._append(producer)
        self._append(op)

    def _append(self, op: Operation) -> None:
        self.placed.add(op)
        self.order.append(op)


def hide_communication(block: Block, constants: DeviceConstants) -> bool:
    """Reorders `block` as the module docstring says; True if anything moved."""
    ops = list(block.ops)
    terminator = ops.pop() if ops and isinstance(ops[-1], func.ReturnOp) else None
    if any(op.regions or not is_side_effect_free(op) for op in ops):
        return False  # an op with effects keeps its place, and so does everything around it
    comm = {op: ms for op in ops if (ms := communication_ms(op, constants)) is not None}
    if not comm:
        return False
    schedule = _Schedule({op: k for k, op in enumerate(ops)}, [], set())
    waiting: list[Operation] = []  # ops not placed when met, as written; waiting[first:] still wait
    first = 0
    for op in ops:
        if op not in comm:
            waiting.append(op)
            continue
        schedule.place(op)
        # A latency-bound transfer (a norm's weight gradient) is not worth a GEMM: one placed
        # after it would delay the next transfer, which that GEMM could hide.
        covered = 0.0 if comm[op] >= 2 * constants.nccl_latency_ms else comm[op]
        while first < len(waiting) and covered < comm[op]:
            work = waiting[first]
            first += 1
            if work not in schedule.placed:
                schedule.place(work)
                covered += compute_ms(work, constants)
    for op in waiting[first:]:
        if op not in schedule.placed:
            schedule.place(op)
    if schedule.order == ops:
        return False
    for op in schedule.order:
        op.detach()
    for op in schedule.order:
        if terminator is not None:
            block.insert_op_before(op, terminator)
        else:
            block.add_op(op)
    return True


@dataclass(frozen=True)
class HideCommunicationPass(ModulePass):
    """Moves work that no communication waits for to just after a communication, to run while it does."""

    name = "fusion-hide-communication"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            constants = load_constants()
        except ValueError as err:  # a cache or $HIR_DEVICE_CONSTANTS file that does not read
            raise PassFailedException(f"{self.name}: {err}") from None
        for function in op.walk():
            if isinstance(function, func.FuncOp) and is_fusion_function(function) and len(function.body.blocks) == 1:
                hide_communication(function.body.block, constants)
