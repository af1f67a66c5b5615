"""
Race checking: runs a hir program while tracking happens-before between its streams, and reports
the first two accesses to the same bytes that nothing orders (docs/runtime.md, "Race checking").

- `RaceCheckContext` compiles like `CompileContext`, but wraps the step of every op that has
  memory effects on buffers (from the IR's declared effects, `xdsl.traits.get_effects`) or that
  posts or waits for a `!hir.work`: the wrapper tells the checker what the op reads and writes.
- `RaceChecker` is the run's `Streams` object: it forwards `current`, `set_current`, `pool` and
  `wait_for` to the real streams (CPU no-ops or CUDA streams) and keeps a vector clock per stream.

Model: a *stream* is a sequence of accesses in order: the caller's stream, each pool stream, and
one pseudo-stream per posted communication (torch runs async collectives on a stream of their
own), which starts after everything its posting stream did so far and is joined by `hir.wait`.
`wait_for` (hir.synchronize) joins the source stream's clock into the current stream's. Each
access records its stream and that stream's epoch; access A happens before the current access
on stream u when u's clock has caught up with A's epoch. Two accesses to overlapping bytes
(`runtime.memory`, exact for strided views), one a write, neither before the other, are a race.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.traits import IsolatedFromAbove, MemoryEffectKind, RecursiveMemoryEffect, get_effects

from hir.diagnostics import LocatedError, location_of
from hir.dialects import hir
from hir.runtime.compiler import CompileContext, Frame, Step
from hir.runtime.memory import Layout, layout_of, layouts_overlap, spans_overlap
from hir.runtime.race_check_ranks import RankLink

# -- what each op does, from its declared effects -------------------------------------------------


@dataclass(frozen=True)
class OpAccesses:
    """What one op does to memory and to the stream order, with the slots of the values involved."""

    op: Operation
    reads: tuple[tuple[int, SSAValue], ...]
    writes: tuple[tuple[int, SSAValue], ...]
    allocs: tuple[tuple[int, SSAValue], ...]
    frees: tuple[tuple[int, SSAValue], ...]
    posts: tuple[int, ...]
    """Result slots of `!hir.work`: the op runs asynchronously, on a pseudo-stream of its own."""
    joins: tuple[int, ...]
    """Operand slots of `!hir.work`: the current stream waits for that work."""
    loops: tuple[tuple[str, int], ...]
    """Induction variables of the enclosing loops (name, slot), for messages."""
    at: str
    """The op's `file:line:col`."""
    root: tuple[int, tuple[int, ...]] | None = None
    """For an op that writes only on one device of its mesh (`CommunicationOp.writing_root`): its slot and the mesh."""

    def where(self, iteration: tuple[Any, ...]) -> str:
        """' (%i = 2, %j = 0)': the loop indices of one execution of the op."""
        if not self.loops:
            return ""
        return " (" + ", ".join(f"{name} = {value}" for (name, _), value in zip(self.loops, iteration)) + ")"


def op_accesses(op: Operation, ctx: CompileContext) -> OpAccesses | None:
    """
    The accesses `op` declares, or None when it has none to check. An op whose effects are its
    regions' (`RecursiveMemoryEffect`: hir.for, scf.if) is skipped: its body's ops are checked
    one by one. An op with unknown effects (no effect trait) is assumed to read and write every
    buffer operand. Effects that name no buffer (the current-stream slot, the device queue) are
    what the stream methods and `!hir.work` values carry.
    """
    if op.has_trait(RecursiveMemoryEffect):
        return None
    effects = get_effects(op)
    kinds: dict[MemoryEffectKind, list[SSAValue]] = {kind: [] for kind in MemoryEffectKind}
    if effects is None:
        buffers = [v for v in op.operands if isinstance(v.type, MemRefType)]
        kinds[MemoryEffectKind.READ] += buffers
        kinds[MemoryEffectKind.WRITE] += buffers
    else:
        for effect in effects:
            value = effect.value
            if isinstance(value, SSAValue) and isinstance(value.type, MemRefType):
                kinds[effect.kind].append(value)
    posts = tuple(ctx.slot(r) for r in op.results if isinstance(r.type, hir.WorkType))
    joins = tuple(ctx.slot(v) for v in op.operands if isinstance(v.type, hir.WorkType))
    if not posts and not joins and not any(kinds.values()):
        return None

    position = {v: k for k, v in enumerate([*op.operands, *op.results])}

    def slotted(kind: MemoryEffectKind) -> tuple[tuple[int, SSAValue], ...]:
        unique = sorted(set(kinds[kind]), key=lambda v: position.get(v, len(position)))  # in operand order
        return tuple((ctx.slot(v), v) for v in unique)

    return OpAccesses(
        op,
        slotted(MemoryEffectKind.READ),
        slotted(MemoryEffectKind.WRITE),
        slotted(MemoryEffectKind.ALLOC),
        slotted(MemoryEffectKind.FREE),
        posts,
        joins,
        _enclosing_loops(op, ctx),
        location_of(op) or "<unknown>",
        _writing_root(op, ctx),
    )


def _writing_root(op: Operation, ctx: CompileContext) -> tuple[int, tuple[int, ...]] | None:
    """The slot of the mesh position that alone writes the op's outputs, and the mesh (see `writes_here`)."""
    if isinstance(op, hir.CommunicationOp) and (root := op.writing_root()) is not None:
        return ctx.slot(root), op.mesh_ids
    return None


def writes_here(accesses: OpAccesses, frame: Frame) -> bool:
    """Whether the op's writes happen on this device: everywhere, or on its root only."""
    if accesses.root is None:
        return True
    slot, mesh = accesses.root
    communicator = frame.communicator
    if communicator is None:  # one device, at position 0 of every mesh (`hir.device_index`)
        return frame.env[slot] == 0
    return communicator.position_in(mesh) == frame.env[slot]


def _enclosing_loops(op: Operation, ctx: CompileContext) -> tuple[tuple[str, int], ...]:
    """The index arguments of the enclosing regions up to the function (loop induction variables)."""
    loops: list[tuple[str, int]] = []
    block = op.parent_block()
    while block is not None and (parent := block.parent_op()) is not None and not parent.has_trait(IsolatedFromAbove):
        loops += [(f"%{a.name_hint or 'iv'}", ctx.slot(a)) for a in block.args if isinstance(a.type, IndexType)]
        block = parent.parent_block()
    return tuple(reversed(loops))


class RaceCheckContext(CompileContext):
    """
    Compiles steps that report their accesses to the run's `RaceChecker` (`Frame.streams`), each
    to the buffer the op names: no launch takes its result as its buffer (result adoption).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.adopts_results = False

    def compile_op(self, op: Operation) -> Step:
        step = super().compile_op(op)
        accesses = op_accesses(op, self)
        if accesses is None:
            return step

        def checked(frame: Frame) -> None:
            frame.streams.run_op(accesses, step, frame)

        return checked


# -- the checker ----------------------------------------------------------------------------------


class Stream:
    """A sequence of accesses in order, with its vector clock (stream id -> the epoch it has seen)."""

    __slots__ = ("clock", "id", "name")

    def __init__(self, id: int, name: str):
        self.id, self.name = id, name
        self.clock = {id: 1}

    def join(self, clock: dict[int, int]) -> None:
        """What the stream does from now on comes after everything `clock` has seen."""
        mine = self.clock
        for k, epoch in clock.items():
            if mine.get(k, 0) < epoch:
                mine[k] = epoch

    def release(self) -> None:
        """Another stream has joined this one: what this one does next is not ordered before it."""
        self.clock[self.id] += 1

    def orders(self, stream_id: int, epoch: int) -> bool:
        """Whether the access of `stream_id` at `epoch` happens before what this stream does now."""
        return self.clock.get(stream_id, 0) >= epoch


@dataclass(frozen=True, slots=True)
class Access:
    """One recorded access; what it was is worded only when a race is reported."""

    layout: Layout
    write: bool
    stream: Stream
    epoch: int
    seq: int
    """Order of recording, for reporting the earliest of several conflicts."""
    kind: str
    """'read', 'write', 'allocation', or the whole description of an access of the caller."""
    op: OpAccesses | None = None
    iteration: tuple[Any, ...] = ()
    value: SSAValue | None = None
    """The buffer operand, or None when `name` says what the buffer is."""
    name: str = ""

    @property
    def what(self) -> str:
        """ "the write by 'hir.launch' at f.mlir:3:5 (%i = 1)", or the description of the caller's access."""
        if self.op is None:
            return self.kind
        return f"the {self.kind} by '{self.op.op.name}' at {self.op.at}{self.op.where(self.iteration)}"


class _Records:
    """
    The recorded accesses, by layout, found by address: each layout is filed under the 4 KiB pages
    its span touches, or, when it spans more than 64 pages, in a short list of wide ones. Finding
    the accesses near a view then costs the occupancy of a few pages, not the whole history.
    """

    PAGE_BITS = 12
    WIDE_PAGES = 64

    def __init__(self) -> None:
        self.by_layout: dict[Layout, list[Access]] = {}
        self._pages: dict[int, set[Layout]] = {}
        self._wide: set[Layout] = set()

    def _page_range(self, layout: Layout) -> range | None:
        first, last = layout.lo >> self.PAGE_BITS, (max(layout.hi, layout.lo + 1) - 1) >> self.PAGE_BITS
        return None if last - first >= self.WIDE_PAGES else range(first, last + 1)

    def near(self, layout: Layout) -> Iterable[Layout]:
        """The layouts whose spans may overlap `layout`'s (a superset)."""
        pages = self._page_range(layout)
        if pages is None:
            return list(self.by_layout)
        found = set(self._wide)
        for page in pages:
            found.update(self._pages.get(page, ()))
        return found

    def accesses(self, layout: Layout) -> list[Access]:
        """The accesses of exactly this layout (a list to update in place)."""
        found = self.by_layout.get(layout)
        if found is None:
            found = self.by_layout[layout] = []
            pages = self._page_range(layout)
            if pages is None:
                self._wide.add(layout)
            for page in pages or ():
                self._pages.setdefault(page, set()).add(layout)
        return found

    def forget(self, layout: Layout) -> None:
        del self.by_layout[layout]
        self._wide.discard(layout)
        for page in self._page_range(layout) or ():
            self._pages[page].discard(layout)

    def all(self) -> Iterable[Access]:
        return (a for accesses in self.by_layout.values() for a in accesses)


class TrackedWork:
    """A posted communication's work handle, with the pseudo-stream its accesses ran on."""

    def __init__(self, work: Any, stream: Stream):
        self.work, self.stream = work, stream

    def wait(self) -> None:
        if self.work is not None:
            self.work.wait()


class RaceChecker:
    """
    The `Streams` of a race-checked run: forwards to the real ones and tracks happens-before.
    The first race is kept and raised by `finish`; the run goes on until then, so that every rank
    of a multi-device job reaches its collectives and learns of the race.
    """

    def __init__(self, streams: Any, function: func.FuncOp, num_streams: int, communicator: Any = None):
        self.inner = streams
        self.function = function
        self.num_streams = num_streams
        across_ranks = communicator is not None and getattr(communicator, "world_size", 1) > 1
        self.ranks = RankLink(self, communicator) if across_ranks else None
        self.communicator = self.ranks.communicator if self.ranks is not None else communicator
        """What the run's ops use as communicator: the real one, seen through `RankLink`."""
        self._streams: dict[Any, Stream] = {}
        self._current = streams.current()
        self.caller = self._stream_of(self._current, "the caller's stream")
        self._records = _Records()
        self._roots: list[tuple[Layout, str]] = []
        self._allocated_on: dict[Layout, Stream] = {}
        self._seq = 0
        self.race: LocatedError | None = None

    # -- the Streams methods -----------------------------------------------------------------------

    def current(self) -> Any:
        return self._current

    def set_current(self, stream: Any) -> None:
        self.inner.set_current(stream)
        self._current = stream

    def pool(self, index: int, high_priority: bool = False) -> Any:
        stream = self.inner.pool(index, high_priority=True) if high_priority else self.inner.pool(index)
        comm = " (the comm stream)" if index == self.num_streams else ""
        priority = " (high priority)" if high_priority else ""
        self._stream_of(stream, f"pool stream {index}{priority}{comm}")
        return stream

    def wait_for(self, stream: Any) -> None:
        self.inner.wait_for(stream)
        waiting, source = self.current_stream, self._stream_of(stream)
        if waiting is not source:
            waiting.join(source.clock)
            source.release()

    @property
    def current_stream(self) -> Stream:
        return self._stream_of(self._current)

    # -- entry, ops, exit --------------------------------------------------------------------------

    def enter(self, inputs: Sequence[Any], outputs: Sequence[torch.Tensor | None]) -> None:
        """Inputs and preallocated outputs count as written by the caller, on its stream, before the call."""
        args = self.function.body.block.args
        for i, value in enumerate(inputs):
            if isinstance(value, torch.Tensor):
                name = _name(args[i]) if i < len(args) else f"input #{i}"
                layout = layout_of(value)
                self._roots.append((layout, name))
                what = f"the caller's write of input #{i} ({name}) before the call"
                self._record(
                    Access(layout, True, self.caller, self.caller.clock[self.caller.id], self._next(), what, name=name)
                )
        for k, out in enumerate(outputs):
            if out is not None:
                what = f"the caller's write of preallocated output #{k} before the call"
                epoch = self.caller.clock[self.caller.id]
                self._record(Access(layout_of(out), True, self.caller, epoch, self._next(), what, name=f"output #{k}"))

    def run_op(self, accesses: OpAccesses, step: Step, frame: Frame) -> None:
        """Checks and records what one op does, around its step."""
        env = frame.env
        current = self.current_stream
        for slot in accesses.joins:
            work = env[slot]
            if isinstance(work, TrackedWork):
                current.join(work.stream.clock)
        iteration = tuple(env[slot] for _, slot in accesses.loops)
        stream = current
        if accesses.posts:  # the op's accesses run on a stream of their own, ordered after `current`
            where = accesses.where(iteration)
            stream = self._stream_of(object(), f"the stream of the '{accesses.op.name}' posted at {accesses.at}{where}")
            stream.join(current.clock)
            current.release()
        if self.race is None:
            for slot, value in accesses.frees:
                self._free(env[slot], current, accesses, iteration, value)
            for slot, value in accesses.reads:
                self._access(env[slot], False, stream, accesses, iteration, value)
            for slot, value in accesses.writes if writes_here(accesses, frame) else ():
                self._access(env[slot], True, stream, accesses, iteration, value)
        step(frame)
        for slot in accesses.posts:
            env[slot] = TrackedWork(env[slot], stream)
        for slot, value in accesses.allocs:
            self._allocate(env[slot], frame, stream, accesses, iteration, value)

    def finish(self, results: Sequence[Any]) -> None:
        """
        At exit the caller's stream gets the inputs and `results` back (it may read, overwrite or
        free them) and the program's other buffers are freed: every access to them must be
        ordered before it. Raises the first race (on every rank of a multi-device job, if any rank
        found one).
        """
        if self.race is None:
            self._check_exit(results)
        if self.ranks is not None:
            self.ranks.finish()
        if self.race is not None:
            raise self.race

    def report(self, op: Operation, message: str) -> None:
        if self.race is None:
            self.race = LocatedError(op, message)

    # -- accesses ----------------------------------------------------------------------------------

    def _access(
        self,
        tensor: Any,
        write: bool,
        stream: Stream,
        accesses: OpAccesses,
        iteration: tuple[Any, ...],
        value: SSAValue,
    ) -> None:
        if not isinstance(tensor, torch.Tensor) or self.race is not None:
            return  # a value never produced fails in the step itself, with its own error
        layout = layout_of(tensor)
        verb = "write" if write else "read"
        access = Access(layout, write, stream, stream.clock[stream.id], self._next(), verb, accesses, iteration, value)
        earlier = self._first_conflict(access)
        if earlier is not None:
            self.report(
                accesses.op,
                f"race on {self.buffer_name(access)}: this {verb} on {stream.name}{accesses.where(iteration)} is not "
                f"ordered after {earlier.what} on {earlier.stream.name}: no hir.synchronize or hir.wait makes one "
                "stream wait for the other in between",
            )
            return
        self._record(access)
        if self.ranks is not None:
            self.ranks.log(access)

    def _first_conflict(self, access: Access, stream: Stream | None = None) -> Access | None:
        """
        The earliest recorded access that overlaps `access`, conflicts with it (one of them writes)
        and is not ordered before `stream` (the access's own, by default).
        """
        layout, write = access.layout, access.write
        stream = stream or access.stream
        first: Access | None = None
        for key in self._records.near(layout):
            if not spans_overlap(key, layout):
                continue
            for earlier in self._records.by_layout[key]:
                if (write or earlier.write) and not stream.orders(earlier.stream.id, earlier.epoch):
                    if (first is None or earlier.seq < first.seq) and layouts_overlap(key, layout):
                        first = earlier
        return first

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _record(self, access: Access) -> None:
        stream, write = access.stream, access.write
        same = self._records.accesses(access.layout)
        # An earlier access to the same bytes that this one is ordered after and covers (a write
        # covers both kinds) can go: any later access that races with it races with this one too.
        same[:] = [a for a in same if not (stream.orders(a.stream.id, a.epoch) and (write or not a.write))]
        same.append(access)

    def _allocate(
        self,
        tensor: Any,
        frame: Frame,
        stream: Stream,
        accesses: OpAccesses,
        iteration: tuple[Any, ...],
        value: SSAValue,
    ) -> None:
        """
        A new buffer has no history (the allocator reuses addresses), but it belongs to the stream
        that allocated it: CUDA's caching allocator hands a freed block out again to work on that
        stream only, so another stream must wait for the allocating one before touching it. The
        allocation counts as a write on that stream. A preallocated output keeps the caller's
        writes before the call.
        """
        if not isinstance(tensor, torch.Tensor):
            return
        layout = layout_of(tensor)
        name = _name(value)
        self._roots.insert(0, (layout, name))  # newest first: it may reuse a dead buffer's memory
        self._allocated_on[layout] = stream
        if self.ranks is not None:
            self.ranks.allocated(tensor, accesses.op)
        if self.race is not None:
            return
        if not any(tensor is t for t in frame.preallocated.values()):
            for key in [key for key in self._records.near(layout) if layouts_overlap(key, layout)]:
                self._records.forget(key)
        access = Access(
            layout, True, stream, stream.clock[stream.id], self._next(), "allocation", accesses, iteration, name=name
        )
        earlier = self._first_conflict(access)
        if earlier is not None:
            self.report(
                accesses.op,
                f"race on {name}: this allocation on {stream.name}{accesses.where(iteration)} hands out "
                f"{self.buffer_name(earlier)}, but {earlier.what} on {earlier.stream.name} is not ordered before it",
            )
            return
        self._record(access)

    def _free(
        self, tensor: Any, current: Stream, accesses: OpAccesses, iteration: tuple[Any, ...], value: SSAValue
    ) -> None:
        """
        Freed memory goes back to the stream that allocated it, whose later work may get it again:
        every access to it must be ordered before that stream now.
        """
        if not isinstance(tensor, torch.Tensor):
            return
        layout = layout_of(tensor)
        owner = self._allocated_on.get(layout, current)
        access = Access(layout, True, owner, 0, self._next(), "deallocation", accesses, iteration, value)
        earlier = self._first_conflict(access)
        if earlier is not None:
            self.report(
                accesses.op,
                f"race on {self.buffer_name(access)}: this deallocation{accesses.where(iteration)} gives the memory "
                f"back to {owner.name}, which allocated it, but {earlier.what} on {earlier.stream.name} is not "
                f"ordered before {owner.name}: make it wait (hir.synchronize) before the deallocation",
            )
            return
        for key in [key for key in self._records.near(layout) if _contains(layout, key)]:
            self._records.forget(key)  # checked: what comes next in this memory is a new allocation's

    def _check_exit(self, results: Sequence[Any]) -> None:
        caller = self.caller
        pending = [a for a in self._records.all() if not caller.orders(a.stream.id, a.epoch)]
        # A buffer allocated on another stream, not returned, goes back to that stream's pool when
        # it is freed: work still pending there on it is ordered before any later use.
        returned = [layout_of(t) for t in results if isinstance(t, torch.Tensor)]
        elsewhere = [
            layout
            for layout, stream in self._allocated_on.items()
            if stream is not caller and not any(layouts_overlap(layout, r) for r in returned)
        ]
        pending = [a for a in pending if not any(_contains(layout, a.layout) for layout in elsewhere)]
        if not pending:
            return
        first = min(pending, key=lambda a: a.seq)
        self.report(
            self.return_op,
            f"race on {self.buffer_name(first)}: @{self.function.sym_name.data} returns while {first.what} on "
            f"{first.stream.name} is not ordered before the caller's stream, which gets the inputs and outputs "
            "back and frees the program's buffers: make it wait for that stream (hir.synchronize) or work "
            "(hir.wait) before returning",
        )

    @property
    def return_op(self) -> Operation:
        return self.function.body.block.last_op or self.function

    # -- names ------------------------------------------------------------------------------------

    def _stream_of(self, handle: Any, name: str | None = None) -> Stream:
        stream = self._streams.get(handle)
        if stream is None:
            index = len(self._streams) + 1
            stream_id = index if self.ranks is None else self.ranks.global_id(index)
            stream = self._streams[handle] = Stream(stream_id, name or f"stream {handle!r}")
        return stream

    def buffer_name(self, access: Access) -> str:
        """The argument or allocation the bytes belong to, else the buffer the view was made from."""
        if access.value is None:
            return access.name
        layout = access.layout
        for root, name in self._roots:
            if _contains(root, layout):
                return name
        return _name(_view_source(access.value))


def _contains(outer: Layout, inner: Layout) -> bool:
    return outer.lo <= inner.lo and inner.hi <= outer.hi


def _view_source(value: SSAValue) -> SSAValue:
    """Through ops without effects that take one buffer (views), to the buffer they view."""
    while isinstance(value, OpResult):
        effects = get_effects(value.owner)
        buffers = [v for v in value.owner.operands if isinstance(v.type, MemRefType)]
        if effects is None or effects or len(buffers) != 1:
            break
        value = buffers[0]
    return value


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a buffer"
