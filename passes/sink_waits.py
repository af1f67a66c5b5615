"""
`hir-sink-waits`: a `hir.wait` moves down past the launches that do not touch the buffers of its
communication, so that they run on the current stream while the collective does.

hir-lower-communication puts each collective's wait right after it. Where launches that neither
read nor write the collective's buffers follow (work that fusion-hide-communication moved there,
or that was written there), the current stream would wait for the collective before running
them; after this pass it runs them first, and waits before the first op that needs the
collective's result (or that this pass cannot see through):

    %w = hir.allgather %a into %g ...         %w = hir.allgather %a into %g ...
    hir.wait %w                          ->   hir.launch ins(%x, %y) outs(%z) {...}
    hir.launch ins(%x, %y) outs(%z) {...}     hir.wait %w
    hir.launch ins(%g, ...) outs(...) {...}   hir.launch ins(%g, ...) outs(...) {...}

A launch is passed when every buffer it reads or writes is a view of a function argument or of a
`hir.allocate`, and neither writes a buffer the other reads or writes. Allocations and views are passed
too; anything else (a stream switch, a synchronization, another collective or wait, a loop, a
deallocation) stops the wait. A wait that would pass no launch stays where it is.

The join of a pipeline moves the same way: a `hir.synchronize %s` right after a loop that
enqueues work on `%s` (the copy-engine reduce-scatter's sums on its reduce stream), with the
buffers of every op in the loop as the ones it waits for. The launches it passes then run while
the pipeline's last pieces, its barrier and its sums do.

Cost: linear in the ops that follow each wait up to where it stops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import MemoryEffectKind, get_effects

from hir.dialects import hir
from hir.passes.hir_loop_fusion import root_buffer


def _neutral(op: Operation) -> bool:
    """Whether `op` declares that it touches neither buffer contents nor the streams (a view, an
    allocation, a constant): a wait moves past it."""
    effects = get_effects(op)
    return effects is not None and all(e.kind == MemoryEffectKind.ALLOC for e in effects)


Roots = set[SSAValue | None]
"""Root buffers (None: one that may alias any other)."""


def _root(value: SSAValue) -> SSAValue | None:
    """The buffer `value` views, a peer's copy of a symmetric buffer counted as the buffer."""
    while isinstance(view := value.owner, hir.AliasSelectOp | hir.AliasChunkOp | hir.PeerViewOp):
        value = view.buffer
    return root_buffer(value)


@dataclass
class Access:
    reads: Roots = field(default_factory=set)
    writes: Roots = field(default_factory=set)

    def add(self, op: Operation) -> None:
        """What `op` reads and writes, as its declared effects say (an hir op's `effects()`); an op
        that declares none, each of its buffer operands both ways."""
        if _neutral(op):
            return
        if op.has_trait(hir.HirEffects):
            effects = op.effects()  # type: ignore[attr-defined]
            buffers = [e for e in effects if e.value is not None and isinstance(e.value.type, MemRefType)]
            read = [e.value for e in buffers if e.kind == MemoryEffectKind.READ]
            written = [e.value for e in buffers if e.kind == MemoryEffectKind.WRITE]
        else:
            read = written = [v for v in op.operands if isinstance(v.type, MemRefType)]
        self.reads |= {_root(v) for v in read}
        self.writes |= {_root(v) for v in written}

    def conflicts(self, other: Access) -> bool:
        """Whether the two may touch the same memory with at least one write."""
        if None in self.reads | self.writes or None in other.reads | other.writes:
            return True
        return bool(self.writes & (other.reads | other.writes) or other.writes & self.reads)


def _awaited(wait: hir.WaitOp | hir.SynchronizeOp) -> Access | None:
    """What the work `wait` waits for accesses, or None where this pass does not move it."""
    awaited = Access()
    if isinstance(wait, hir.WaitOp):
        collective = wait.work.owner
        if not isinstance(collective, hir.CommunicationOp):
            return None
        awaited.add(collective)
        return awaited
    loop = wait.prev_op
    if not isinstance(loop, hir.ForOp | hir.StreamForOp):
        return None
    inside = list(loop.walk())
    if not any(isinstance(op, hir.SetCurrentStreamOp) and op.stream is wait.stream for op in inside):
        return None  # not the join of work the loop enqueued
    for op in inside:
        awaited.add(op)
    return awaited


def sink_wait(wait: hir.WaitOp | hir.SynchronizeOp) -> bool:
    """Moves `wait` as the module docstring says; True if it moved."""
    awaited = _awaited(wait)
    if awaited is None:
        return False
    passed_launch = False
    stop = wait.next_op
    while stop is not None:
        if isinstance(stop, hir.LaunchOp):
            launch = Access()
            launch.add(stop)
            if launch.conflicts(awaited):
                break
            passed_launch = True
        elif not _neutral(stop):
            break
        stop = stop.next_op
    if not passed_launch or stop is None:
        return False
    wait.detach()
    block = stop.parent_block()
    assert block is not None
    block.insert_op_before(wait, stop)
    return True


@dataclass(frozen=True)
class SinkWaitsPass(ModulePass):
    """Moves each `hir.wait` (and each pipeline's join) past the launches that do not touch what it waits for."""

    name = "hir-sink-waits"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for wait in [w for w in op.walk() if isinstance(w, hir.WaitOp | hir.SynchronizeOp)]:
            sink_wait(wait)
