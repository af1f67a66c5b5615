"""
The ranks of a mesh call a compiled function with the same signature: each rank passes its shard,
of the same local shapes, dtypes and device type, and the same arguments (for a training
function, also the same parameters) require grad. A rank
that passes other shapes compiles another program, whose collectives do not match the others':
the job hangs, aborts inside the collective library, or returns a wrong answer.

The first call of each signature on a rank (when it binds or compiles a specialization) compares
the signature with the other ranks' and raises the same CallError on every rank when they differ.
The comparison goes through the process group's key-value store, not a collective: a rank that
checks while another already runs a cached program must not have its check matched with that
program's collectives. A rank whose peers never check (they called with a signature they had
compiled before) waits for the store's timeout and then raises.

The same exchange carries an exact fingerprint of the values of some arguments (`ValueCheck`):
a replicated argument must hold the same values on every rank (else each rank computes with its
own, and their results diverge without an error), and an argument of the example's global shape
that holds the same values on every rank is the whole tensor passed where the call takes this
rank's shard. `HIR_CHECK_REPLICAS=1` makes every call, not only a new signature's, compare.

Once a rank has the program of a new signature, the ranks also compare a digest of its imported
text and fingerprints of the module's replicated parameters and buffers: a forward that branches
on a Python value that differs between the ranks (the rank, a per-rank flag) traces another program
on some rank, whose collectives do not match (a hang) or whose results differ (a wrong answer),
and a replicated parameter built from a per-rank seed gives each rank its own results.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

if TYPE_CHECKING:
    from hir.frontend.specialize import CallSignature, Key

_INSTANCES: Counter[str] = Counter()
"""Compiled functions per name in this process: ranks compile theirs in the same order."""


_SEPARATOR = "\x1f"
"""Between a rank's signature text and its fingerprints in the store (neither holds it)."""

_CHUNK = 1 << 22
"""Words per step of a fingerprint: a huge input is read in steps, not widened to int64 whole."""


def check_every_call() -> bool:
    """`HIR_CHECK_REPLICAS=1`: every call compares the signatures and the checked values, not only a new signature's."""
    return os.environ.get("HIR_CHECK_REPLICAS", "") not in ("", "0")


@dataclass(frozen=True)
class ValueCheck:
    """An argument whose values the ranks compare, by fingerprint, when they compare signatures."""

    name: str
    tensor: torch.Tensor
    shard_hint: str | None = None
    """None: a replicated argument, which every rank must pass with the same values. Else the argument
    has the example's global shape, and the same values on every rank mean it is the whole tensor:
    the error's sentence on the shard the call takes and how to cut it."""
    what: str = "argument"
    """What the tensor is, as the error names it: an "argument" of the call, or the module's
    "parameter", "buffer" or "constant" that the program reads whole on every rank."""


def program_digest(text: str) -> str:
    """A digest of a program's imported text, which the ranks compare (its text has no ranks, devices or locations)."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


FAILED = "!"
"""The start of a program field of a rank whose build of the signature failed, before its error's first line."""


def _fingerprint(tensor: torch.Tensor) -> torch.Tensor:
    """
    Two int64s of the tensor's bits: the sum of its words and of each word times its position,
    in wrapping integer arithmetic, which any reduction order computes exactly alike (a float sum
    could round differently on another rank's thread count); the positions tell a permutation.
    """
    words = tensor.detach().contiguous().view(-1)
    words = words.view({1: torch.uint8, 2: torch.int16}.get(words.element_size(), torch.int32))
    total = torch.zeros(2, dtype=torch.int64, device=tensor.device)
    for start in range(0, words.numel(), _CHUNK):
        chunk = words[start : start + _CHUNK].to(torch.int64)
        position = torch.arange(start + 1, start + 1 + chunk.numel(), dtype=torch.int64, device=tensor.device)
        total += torch.stack([chunk.sum(), (chunk * position).sum()])
    return total


def fingerprints(tensors: Sequence[torch.Tensor]) -> list[str]:
    """Each tensor's `_fingerprint` as text; one device-to-host copy for all (a call's tensors share a device)."""
    if not tensors:
        return []
    with torch.no_grad():
        host = torch.stack([_fingerprint(t) for t in tensors]).cpu()
    return [f"{a & (2**64 - 1):x}.{b & (2**64 - 1):x}" for a, b in host.tolist()]


def _groups(ranks: Sequence[int], values: Sequence[str]) -> dict[str, list[int]]:
    """The ranks grouped by equal values (value -> its ranks), in the order of their first rank."""
    groups: dict[str, list[int]] = {}
    for rank, value in zip(ranks, values):
        groups.setdefault(value, []).append(rank)
    return groups


def _equal(groups: Sequence[list[int]]) -> str:
    """`rank 0; ranks 1, 2`: the ranks that agree, group by group."""
    return "; ".join(f"rank{'s' * (len(g) > 1)} {', '.join(map(str, g))}" for g in groups)


def _store() -> Any:
    """The default process group's store, or None without one (a one-process run)."""
    if not dist.is_available() or not dist.is_initialized():
        return None
    try:
        return dist.distributed_c10d._get_default_store()
    except (RuntimeError, ValueError):
        return None


def describe(signature: CallSignature, key: Key) -> str:
    """`x: float32[8, 16] requiring grad, mask: bool[8, 8]`, and the grad mode of a training function."""
    args = []
    for name, spec in zip(signature.arg_names, key):
        if not hasattr(spec, "device"):  # a value the program is specialized for (None, a number)
            args.append(f"{name}: {spec}")
            continue
        where = f" on {spec.device.type}" if spec.device.type != "cpu" else ""
        args.append(f"{name}: {spec}{where}{' requiring grad' * spec.requires_grad}")
    if signature.training:
        args.append(f"grad mode {'on' if torch.is_grad_enabled() else 'off'}")
    return ", ".join(args)


class RankAgreement:
    """Compares a compiled function's new signatures across the ranks of its mesh."""

    def __init__(self, signature: CallSignature, context: Callable[[], str] | None = None):
        self.signature = signature
        self.context = context
        self.prefix = f"hir/signature/{signature.name}/{_INSTANCES[signature.name]}"
        _INSTANCES[signature.name] += 1
        self.checks = 0

    def disagreement(
        self, key: Key, checks: Sequence[ValueCheck] = (), every_call: bool = False, program: str | None = None
    ) -> str | None:
        """
        On every rank of the mesh, the error when this call's signature is not every rank's, or the
        values of `checks` are not as they must be, or (where given) the `program` digests differ;
        else None. `every_call`: the check runs at every call (`HIR_CHECK_REPLICAS=1`), which its
        timeout's error says. `program`: `program_digest` of the specialization's text, or `FAILED`
        and the first line of this rank's error where it could not build it.
        """
        store = _store()
        ranks = self.signature.ranks
        if store is None or len(ranks) < 2 or dist.get_rank() not in ranks:
            return None
        text = describe(self.signature, key)
        if self.context is not None and (more := self.context()):
            text = f"{text}; {more}"
        prefix = f"{self.prefix}/{self.checks}"
        self.checks += 1
        prints = fingerprints([c.tensor for c in checks])
        store.set(f"{prefix}/{dist.get_rank()}", _SEPARATOR.join([text, program or "", *prints]))
        keys = [f"{prefix}/{r}" for r in ranks]
        try:
            store.wait(keys)
        except RuntimeError:  # the store's timeout (torch's DistStoreError derives from it)
            missing = [str(r) for r, k in zip(ranks, keys) if not store.check([k])]
            what = "called it" if every_call else "called it with a new signature"
            also = " (with HIR_CHECK_REPLICAS=1 every call compares: set it on every rank)" * every_call
            return (
                f"<call>: error: {self.signature.name}: this rank ({dist.get_rank()}) {what} "
                f"({text}) and rank{'s' * (len(missing) > 1)} {', '.join(missing)} did not within the store's "
                "timeout: every rank of the mesh calls a compiled function with the same signatures in the same order"
                f"{also}"
            )
        received = [store.get(k).decode().split(_SEPARATOR) for k in keys]
        self._forget(store, self.checks - 2)
        texts = [r[0] for r in received]
        if len(set(texts)) > 1:
            return self._differ(ranks, texts)
        programs = [r[1] for r in received]
        if len(set(programs)) > 1 and not all(p.startswith(FAILED) for p in programs):  # all failed: each its error
            return self._programs_differ(ranks, programs)
        return self._values_differ(ranks, checks, [r[2:] for r in received])

    def _forget(self, store: Any, check: int) -> None:
        """
        This rank's key of the check before this one: every peer has read it, since each set its key
        of this check (this rank waited for those) after reading the previous check's keys. Keeps the store
        small when every call compares (`HIR_CHECK_REPLICAS=1`).
        """
        if check < 0:
            return
        try:
            store.delete_key(f"{self.prefix}/{check}/{dist.get_rank()}")
        except (RuntimeError, NotImplementedError):  # a store that cannot delete keeps them
            pass

    def _values_differ(
        self, ranks: tuple[int, ...], checks: Sequence[ValueCheck], prints: list[list[str]]
    ) -> str | None:
        """The error of the first checked argument whose fingerprints are not as they must be, else None."""
        name = self.signature.name
        for j, check in enumerate(checks):
            groups = list(_groups(ranks, [p[j] for p in prints]).values())
            spec = f"{str(check.tensor.dtype).removeprefix('torch.')}{list(check.tensor.shape)}"
            if check.shard_hint is None and len(groups) > 1 and check.what != "argument":
                return (
                    f"<call>: error: {name}: {check.what} '{check.name}' ({spec}) is replicated (param_layouts "
                    f"gives it no didx axis: every rank computes with its whole copy), but the ranks of the mesh "
                    f"hold different values of it (the same values on: {_equal(groups)}): their results would "
                    "diverge; build the module on every rank from the same seed or load the same checkpoint "
                    "(or dist.broadcast each of its tensors from rank 0) before the first call"
                )
            if check.shard_hint is None and len(groups) > 1:
                equal = _equal(groups)
                return (
                    f"<call>: error: {name}: argument '{check.name}' ({spec}) is replicated (its in_layouts entry "
                    f"shards no axis), but the ranks of the mesh passed different values of it (the same values on: "
                    f"{equal}): each rank would compute with its own and their results would diverge; pass every "
                    f"rank the same tensor (draw it from the same seed, or dist.broadcast({check.name}, src=0) "
                    "before the call), or give it a sharded in_layouts entry if each rank holds its own rows"
                )
            if check.shard_hint is not None and len(groups) == 1:
                return (
                    f"<call>: error: {name}: argument '{check.name}' ({spec}) has the global shape of the example, "
                    f"and every rank passed the same values: it is the whole tensor, where a call takes this rank's "
                    f"shard; {check.shard_hint} (a batch of {len(ranks)} times the rows passes each rank its own "
                    "rows, which differ)"
                )
        return None

    def _programs_differ(self, ranks: tuple[int, ...], programs: list[str]) -> str:
        name = self.signature.name
        failed = [(r, p.removeprefix(FAILED)) for r, p in zip(ranks, programs) if p.startswith(FAILED)]
        if failed:
            rank, error = failed[0]
            return (
                f"<call>: error: {name}: rank {rank} could not compile the call that its peers compiled, the same "
                f"signature on every rank ({error}): every rank raises; the module's forward traced another "
                "program there (a branch on a Python value that differs between the ranks)"
            )
        groups = list(_groups(ranks, programs).values())
        return (
            f"<call>: error: {name}: the ranks of the mesh traced different programs for the same call (the same "
            f"program on: {_equal(groups)}): the module's forward took another path on some rank (a branch on a "
            "Python value that differs between the ranks: the rank, a per-rank flag, setting or environment "
            "variable), or hir.compile was given another mesh, in_layouts, out_layouts or param_layouts on some "
            "rank, so their collectives would not match and their results would differ; compute the same "
            "on every rank (the shards of the inputs and parameters are what differs between the ranks)"
        )

    def _differ(self, ranks: tuple[int, ...], texts: list[str]) -> str:
        groups = _groups(ranks, texts).items()
        calls = "; ".join(f"rank{'s' * (len(rs) > 1)} {', '.join(map(str, rs))}: ({text})" for text, rs in groups)
        return (
            f"<call>: error: {self.signature.name}: the ranks of the mesh called it with different arguments "
            f"({calls}): each rank would run another program and their collectives would not match; pass every "
            "rank its shard of the same shape and dtype, with the same arguments (and parameters) requiring grad"
        )
