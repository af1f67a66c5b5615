"""
Race checking across the ranks of a multi-device job, through symmetric memory: a copy-engine
push on one device writes a peer's buffer that the peer's streams read, ordered only by
`hir.barrier` (docs/runtime.md, "Race checking").

Each rank's checker sees its own streams (runtime/race_check.py). `RankLink` adds what crosses
ranks, through the communicator the run's ops use (`CheckedCommunicator`, which forwards to the
real one):

- stream ids are unique across ranks (local number * world size + rank), so one vector clock can
  hold the streams of every rank;
- `hir.barrier` joins the clocks of the members' current streams (gathered in one all-gather on
  the mesh's group, right after the real barrier, `gather_clocks`): what any member's
  stream did before the barrier happens before what every member's stream does after it;
- symmetric buffers (`empty_symmetric`) and peer views (`peer_view`) are named the same on every
  rank: (owning device, index of the `hir.allocate` op in the function, byte offset). Every access
  to them is logged with its stream's clock;
- at exit the ranks gather their logs and their caller streams' clocks, and check every pair of
  accesses of different ranks to the same bytes (one a write, neither before the other), and
  that every access is ordered before every rank's caller stream at exit (the next run, on any
  rank, may write any symmetric buffer again; `hir.barrier` at the end of the program orders it),
  except for a buffer whose every access comes after a barrier that follows every accessing
  rank's entry (`hir.barrier` at the start): the next run's accesses then come after the same
  barrier of that run, and each access need only be ordered before its own rank's caller stream.

Collectives order nothing across ranks here (their pseudo-streams are this rank's): a program
that orders symmetric-memory accesses by a collective instead of a barrier is reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from xdsl.ir import Operation

from hir.diagnostics import LocatedError
from hir.runtime.memory import Layout, layout_of, layouts_overlap

if TYPE_CHECKING:
    from hir.runtime.race_check import Access, RaceChecker


@dataclass(frozen=True)
class _Region:
    """Bytes of a symmetric buffer as this process addresses them."""

    lo: int
    hi: int
    owner: int
    """The device whose memory it is."""
    allocation: int
    """Index of the `hir.allocate` op in the function (the same on every rank)."""
    base: int
    """Address of the buffer's first byte here."""


@dataclass(frozen=True)
class SharedAccess:
    """An access to symmetric memory, in terms every rank understands (picklable)."""

    owner: int
    allocation: int
    layout: Layout
    """Relative to the buffer's first byte."""
    write: bool
    stream: int
    stream_name: str
    epoch: int
    clock: dict[int, int]
    what: str
    buffer: str
    op_index: int
    rank: int
    seq: int

    def before(self, other: SharedAccess | dict[int, int]) -> bool:
        clock = other.clock if isinstance(other, SharedAccess) else other
        return clock.get(self.stream, 0) >= self.epoch


class RankLink:
    def __init__(self, checker: RaceChecker, communicator: Any):
        self.checker = checker
        self.rank: int = communicator.rank
        self.world: int = communicator.world_size
        self.communicator = CheckedCommunicator(self, communicator)
        self._ops = list(checker.function.walk())
        self._op_index = {op: k for k, op in enumerate(self._ops)}
        self._regions: list[_Region] = []
        self._fresh: set[int] = set()
        self._log: list[SharedAccess] = []

    def global_id(self, local: int) -> int:
        return local * self.world + self.rank

    # -- symmetric memory --------------------------------------------------------------------------

    def handed_out(self, buffer: torch.Tensor) -> None:
        """`empty_symmetric` returned `buffer`; `allocated` learns next which op it was for."""
        self._fresh.add(buffer.data_ptr())

    def allocated(self, tensor: torch.Tensor, op: Operation) -> None:
        """`op` allocated `tensor`: a symmetric buffer if `empty_symmetric` just handed it out."""
        if tensor.data_ptr() in self._fresh:
            self._fresh.discard(tensor.data_ptr())
            layout = layout_of(tensor)
            self._regions.append(_Region(layout.lo, layout.hi, self.rank, self._op_index[op], tensor.data_ptr()))

    def mapped(self, buffer: torch.Tensor, view: torch.Tensor, device: int) -> None:
        """`view` is device `device`'s copy of the local symmetric `buffer`."""
        region = self._region_of(layout_of(buffer))
        if region is None or device == self.rank:
            return
        offset = buffer.data_ptr() - region.base
        layout = layout_of(view)
        self._regions.append(_Region(layout.lo, layout.hi, device, region.allocation, view.data_ptr() - offset))

    def _region_of(self, layout: Layout) -> _Region | None:
        for region in self._regions:
            if region.lo <= layout.lo and layout.hi <= region.hi:
                return region
        return None

    def log(self, access: Access) -> None:
        """Keeps an access to symmetric memory for the check across ranks at exit."""
        layout = access.layout
        region = self._region_of(layout)
        if region is None or access.op is None:
            return
        shift = region.base
        relative = Layout(layout.start - shift, layout.itemsize, layout.dims, layout.lo - shift, layout.hi - shift)
        buffer = self.checker.buffer_name(access)
        if region.owner != self.rank:
            buffer = f"device {region.owner}'s {buffer}"
        stream = access.stream
        self._log.append(
            SharedAccess(
                region.owner,
                region.allocation,
                relative,
                access.write,
                stream.id,
                stream.name,
                access.epoch,
                dict(stream.clock),
                access.what,
                buffer,
                self._op_index.get(access.op.op, 0),
                self.rank,
                len(self._log),
            )
        )

    # -- barriers and exit -------------------------------------------------------------------------

    def barrier(self, mesh: tuple[int, ...], group: Any) -> None:
        """After the real barrier: the current stream joins the current streams of all members."""
        stream = self.checker.current_stream
        for clock in gather_clocks(stream.clock, group):
            stream.join(clock)
        stream.release()

    def finish(self) -> None:
        """Every rank learns of the first race of any rank; then the accesses that cross ranks are checked."""
        checker = self.checker
        mine = None if checker.race is None else (self._op_index.get(checker.race.op, 0), checker.race.message)
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, (mine, self._log, dict(checker.caller.clock)))
        if checker.race is not None:
            return
        for rank, (race, _, _) in enumerate(gathered):
            if race is not None:
                index, message = race
                checker.race = LocatedError(self._ops[index], f"{message} (found on device {rank})")
                return
        accesses = [a for _, log, _ in gathered for a in log]
        exits = [clock for _, _, clock in gathered]
        checker.race = self._pair_race(accesses) or self._exit_race(accesses, exits)

    def _pair_race(self, accesses: list[SharedAccess]) -> LocatedError | None:
        for k, a in enumerate(accesses):
            for b in accesses[k + 1 :]:
                if (
                    a.rank != b.rank
                    and (a.owner, a.allocation) == (b.owner, b.allocation)
                    and (a.write or b.write)
                    and not a.before(b)
                    and not b.before(a)
                    and layouts_overlap(a.layout, b.layout)
                ):
                    here, there = (b, a) if a.write and not b.write else (a, b)  # located at a read
                    return LocatedError(
                        self._ops[here.op_index],
                        f"race on {_owned(here)}: {here.what} on device {here.rank}'s {here.stream_name} and "
                        f"{there.what} on device {there.rank}'s {there.stream_name} are not ordered: no "
                        "hir.barrier after the one, on a stream the other waits for, orders them",
                    )
        return None

    def _exit_race(self, accesses: list[SharedAccess], exits: list[dict[int, int]]) -> LocatedError | None:
        name = self.checker.function.sym_name.data
        fenced = self._fenced_at_entry(accesses)
        # Only the ranks that access a buffer in this run can access it in the next (every rank runs
        # the same program): a rank outside the meshes of its transfers never reaches it.
        accessors: dict[tuple[int, int], set[int]] = {}
        for a in accesses:
            accessors.setdefault((a.owner, a.allocation), set()).add(a.rank)
        for a in accesses:
            if (a.owner, a.allocation) in fenced:
                continue
            for rank, clock in enumerate(exits):
                if rank != a.rank and rank in accessors[(a.owner, a.allocation)] and not a.before(clock):
                    return LocatedError(
                        self.checker.return_op,
                        f"race on {_owned(a)}: @{name} returns on device {rank} while {a.what} on device {a.rank}'s "
                        f"{a.stream_name} is not ordered before device {rank}'s caller stream (the next run may "
                        "write the symmetric buffer again): end with hir.barrier after waiting for that stream, "
                        "or start with one that every access to the buffer comes after",
                    )
        return None

    def _fenced_at_entry(self, accesses: list[SharedAccess]) -> set[tuple[int, int]]:
        """
        The symmetric buffers whose every access, on every rank, comes after what the caller's
        stream of every rank accessing it did at entry (a `hir.barrier` at the start, after the
        fork from the caller's stream). The next run's accesses to such a buffer come after the
        same barrier of the next run, so after every rank's caller stream at this run's exit: an
        access of this run need only be ordered before its own rank's caller stream then, which
        the check of each rank (`RaceChecker.finish`) already requires.
        """
        by_buffer: dict[tuple[int, int], list[SharedAccess]] = {}
        for a in accesses:
            by_buffer.setdefault((a.owner, a.allocation), []).append(a)
        fenced = set()
        for key, group in by_buffer.items():
            callers = [self.caller_id(rank) for rank in {a.rank for a in group}]
            if all(a.clock.get(caller, 0) >= 1 for a in group for caller in callers):
                fenced.add(key)
        return fenced

    def caller_id(self, rank: int) -> int:
        """The stream id of `rank`'s caller stream (local stream number 1, see `global_id`)."""
        return self.world + rank


def _owned(a: SharedAccess) -> str:
    return a.buffer if a.buffer.startswith("device ") else f"device {a.owner}'s {a.buffer}"


class CheckedCommunicator:
    """The run's communicator, seen through `RankLink`: symmetric memory and barriers are tracked."""

    def __init__(self, link: RankLink, inner: Any):
        self._link, self._inner = link, inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def empty_symmetric(self, key: object, shape: Any, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        buffer = self._inner.empty_symmetric(key, shape, dtype, device)
        self._link.handed_out(buffer)
        return buffer

    def peer_view(self, buffer: torch.Tensor, device_id: int) -> torch.Tensor:
        view = self._inner.peer_view(buffer, device_id)
        self._link.mapped(buffer, view, device_id)
        return view

    def barrier(self, mesh: tuple[int, ...]) -> None:
        self._inner.barrier(mesh)
        if self._link.rank in mesh:
            group = self._inner.prepared_group(mesh)
            self._link.barrier(mesh, dist.group.WORLD if group is None else group)


CLOCK_PAIRS = 64
"""(stream id, epoch) pairs a clock sends in the one all-gather of a barrier; a longer one takes a second."""


def gather_clocks(clock: dict[int, int], group: Any) -> list[dict[int, int]]:
    """
    Every member's clock, in one all-gather of a fixed-size int64 tensor (a barrier is frequent:
    `all_gather_object` would pickle and take two collectives). Every member sees every count, so
    all of them fall back to `all_gather_object` together when a clock is longer than the tensor.
    """
    world = dist.get_world_size(group)
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend(group) == "nccl" else "cpu"
    pairs = sorted(clock.items())
    sent = torch.zeros(1 + 2 * CLOCK_PAIRS, dtype=torch.int64)
    sent[0] = len(pairs)
    flat = [value for pair in pairs[:CLOCK_PAIRS] for value in pair]
    sent[1 : 1 + len(flat)] = torch.tensor(flat, dtype=torch.int64)
    received = [torch.empty_like(sent, device=device) for _ in range(world)]
    dist.all_gather(received, sent.to(device), group=group)
    rows = [r.tolist() for r in received]
    if any(row[0] > CLOCK_PAIRS for row in rows):
        clocks: list[Any] = [None] * world
        dist.all_gather_object(clocks, dict(clock), group=group)
        return clocks
    return [dict(zip(row[1 : 1 + 2 * row[0] : 2], row[2 : 2 + 2 * row[0] : 2], strict=True)) for row in rows]
