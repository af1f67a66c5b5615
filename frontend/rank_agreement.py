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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

if TYPE_CHECKING:
    from hir.frontend.specialize import CallSignature, Key

_INSTANCES: Counter[str] = Counter()
"""Compiled functions per name in this process: ranks compile theirs in the same order."""


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

    def disagreement(self, key: Key) -> str | None:
        """On every rank of the mesh, the error when this call's signature is not every rank's; else None."""
        store = _store()
        ranks = self.signature.ranks
        if store is None or len(ranks) < 2 or dist.get_rank() not in ranks:
            return None
        text = describe(self.signature, key)
        if self.context is not None and (more := self.context()):
            text = f"{text}; {more}"
        prefix = f"{self.prefix}/{self.checks}"
        self.checks += 1
        store.set(f"{prefix}/{dist.get_rank()}", text)
        keys = [f"{prefix}/{r}" for r in ranks]
        try:
            store.wait(keys)
        except RuntimeError:  # the store's timeout (torch's DistStoreError derives from it)
            missing = [str(r) for r, k in zip(ranks, keys) if not store.check([k])]
            return (
                f"<call>: error: {self.signature.name}: this rank ({dist.get_rank()}) called it with a new signature "
                f"({text}) and rank{'s' * (len(missing) > 1)} {', '.join(missing)} did not within the store's "
                "timeout: every rank of the mesh calls a compiled function with the same signatures in the same order"
            )
        texts = [store.get(k).decode() for k in keys]
        return self._differ(ranks, texts) if len(set(texts)) > 1 else None

    def _differ(self, ranks: tuple[int, ...], texts: list[str]) -> str:
        groups: dict[str, list[int]] = {}
        for rank, text in zip(ranks, texts):
            groups.setdefault(text, []).append(rank)
        calls = "; ".join(
            f"rank{'s' * (len(rs) > 1)} {', '.join(map(str, rs))}: ({text})" for text, rs in groups.items()
        )
        return (
            f"<call>: error: {self.signature.name}: the ranks of the mesh called it with different arguments "
            f"({calls}): each rank would run another program and their collectives would not match; pass every "
            "rank its shard of the same shape and dtype, with the same arguments (and parameters) requiring grad"
        )
