"""
The module's parameters and buffers as a compiled function reads them, kept in step with the
module: a parameter reassigned (`lin.weight = nn.Parameter(w)`, `p.data = w`, `module.to(...)`)
or updated in place where the function reads a copy of it (moved to the call's device, or this
device's shard on a mesh) is taken again at the next call, as eager torch would read it. Without
this a call after such a change computed with the old values: a wrong answer, and a silent one.

Each call compares, per tensor, what the module now holds with what the held form was taken
from: the tensor object, its storage address and its version counter (which every in-place
update bumps). A change of shape or dtype is an error: the program was compiled for the old ones.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from hir.frontend.errors import FrontendError


@dataclass
class HeldState:
    """A parameter or buffer as the program reads it on one device, and the module tensor it was taken from."""

    tensor: torch.Tensor
    """The program's input: the module's own tensor (detached), or a copy (moved, a shard)."""
    origin: torch.Tensor | None
    """The module's tensor it was taken from; None for a constant the module does not hold."""
    address: int
    version: int
    private: bool
    """Whether `tensor` is a copy of the function's own, which a later retake may overwrite in place."""

    def current(self, origin: torch.Tensor | None) -> bool:
        """Whether `origin`, what the module holds now, is what this was taken from, unchanged."""
        return origin is self.origin and (
            origin is None or (origin.data_ptr() == self.address and origin._version == self.version)
        )


StateTable = tuple[dict[str, Any], str]
"""Where the module keeps one tensor: the dict (`_parameters`, `_buffers`, `__dict__`) and the key."""


def state_table(module: torch.nn.Module, name: str) -> StateTable | None:
    """Where `module` keeps its state `name` (`fc1.weight`); None for a constant no module attribute holds."""
    path, _, attr = name.rpartition(".")
    try:
        owner = module.get_submodule(path) if path else module
    except AttributeError:
        return None
    for table in (owner._parameters, owner._buffers):
        if attr in table:
            return table, attr
    if isinstance(owner.__dict__.get(attr), torch.Tensor):
        return owner.__dict__, attr
    return None


class StateReader:
    """
    A module's parameters and buffers by name (those of `named_parameters()`, then of
    `named_buffers()` at the first call; with `attributes`, then the plain tensor attributes of
    the module and its submodules: Meta's Llama keeps its rotary `freqs_cis` as `self.freqs_cis`,
    no buffer), read straight from the dicts the module keeps them in:
    walking the module tree at every call (what `named_parameters()` does) cost a training step's
    forward more host time before its first kernel than the rest of the call. A tensor replaced
    since is read where it is now; one removed since is an error naming it (`owner`: the compiled
    function, as its errors name it). Where the module keeps a tensor elsewhere, every call walks.
    """

    def __init__(self, module: torch.nn.Module, owner: str, attributes: bool = False) -> None:
        self.module = module
        self.owner = owner
        self.attributes = attributes
        self._where: list[tuple[str, dict[str, Any], str]] | None = None

    def __call__(self) -> dict[str, torch.Tensor]:
        if self._where is not None:
            state = {name: table.get(attr) for name, table, attr in self._where}
            if missing := [name for name, t in state.items() if not isinstance(t, torch.Tensor)]:
                raise removed(self.owner, missing)
            return state  # type: ignore[return-value]
        state = {**dict(self.module.named_parameters()), **dict(self.module.named_buffers())}
        if self.attributes:
            state.update((name, t) for name, t in tensor_attributes(self.module) if name not in state)
        where = [(name, state_table(self.module, name)) for name in state]
        self._where = [(name, *w) for name, w in where if w is not None] if all(w for _, w in where) else None
        return state


def functional_call(module: torch.nn.Module, state: dict[str, torch.Tensor], args: Any, kwargs: Any = None) -> Any:
    """
    `torch.func.functional_call`, after which the module holds its own parameters and buffers
    again. torch restores them name by name, and a submodule registered under two names
    (`self.b = self.a`) is swapped twice: its second restore put back the traced tensor, so the
    user's module kept a tensor of the trace in place of its parameter (no gradient at the
    first step, a failed call at the next).
    """
    held = [
        (table, key, tensor)
        for owner in module.modules()
        for table in (owner._parameters, owner._buffers)
        for key, tensor in table.items()
    ]
    try:
        return torch.func.functional_call(module, state, args, kwargs)
    finally:
        for table, key, tensor in held:
            if table.get(key) is not tensor:
                table[key] = tensor


def tensor_attributes(module: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """
    The tensors that the module and its submodules hold as plain attributes (`self.freqs_cis =
    precompute_freqs_cis(...)`), neither parameters nor buffers, by their dotted names: a trace
    of `torch.func.functional_call` takes them as inputs, as `torch.export` lifts them.
    """
    found = []
    for prefix, owner in module.named_modules():
        for attr, value in vars(owner).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                found.append((f"{prefix}.{attr}" if prefix else attr, value))
    return found


class TrainFlags:
    """
    The `training` flags of a module and its submodules, which a trace follows (dropout, batch
    norm): a call reads them to run the programs of the flags it is called under.
    """

    _FLAG = operator.attrgetter("training")

    def __init__(self, module: Any):
        self.module = module if isinstance(module, torch.nn.Module) else None
        self._collect()

    def _collect(self) -> None:
        self.modules = list(self.module.modules()) if self.module is not None else []
        places = [(m._modules, key) for m in self.modules for key in m._modules]
        self._tables, self._keys = [t for t, _ in places], [k for _, k in places]
        self.structure = tuple(t[k] for t, k in places)
        """
        Every submodule where its parent holds it: a submodule replaced since (`model.fc =
        nn.Linear(...)` for a new head, `model.head = nn.Dropout(0.5)`) changes the code the trace
        ran and the tensors it read, so the new structure picks programs of its own, as new flags
        do (the old ones read the old submodule's parameters: a silent wrong answer).
        """

    def replaced(self) -> bool:
        """Whether a submodule was replaced (or removed) since the structure was taken: about 0.03 µs a submodule."""
        return tuple(map(dict.get, self._tables, self._keys)) != self.structure  # modules compare by identity

    def __call__(self, checked: bool = False) -> tuple[Any, ...]:
        """The structure and the flags; `checked`: the caller has just seen `replaced()` false."""
        if not checked and self.replaced():
            self._collect()
        return (self.structure, *map(self._FLAG, self.modules))  # every call: about 0.03 µs a submodule


def removed(owner: str, names: list[str]) -> FrontendError:
    """The error of a call after the module lost tensors `owner` (the compiled function) was compiled with."""
    return FrontendError(
        f"<call>: error: {owner}: the module no longer has {', '.join(map(repr, names))}, which {owner} was "
        "compiled with: compile the module again"
    )


def take(
    origin: torch.Tensor,
    expected: torch.Tensor,
    name: str,
    owner: str,
    local: Callable[[torch.Tensor], torch.Tensor],
    previous: HeldState | None,
) -> HeldState:
    """
    The held form of the module's tensor `origin` (`local` moves and shards it), where the program
    was compiled for tensors like `expected`. A copy replaces the previous copy in place where it
    can, so that a CUDA graph that reads the previous one keeps reading the current values.
    """
    fresh = origin.detach()
    if fresh.is_complex():  # carried as its view_as_real pairs (frontend/aten_complex.py)
        fresh = torch.view_as_real(fresh)
    if fresh.shape != expected.shape or fresh.dtype != expected.dtype:
        raise FrontendError(
            f"<call>: error: {owner}: the module's {name!r} is now {_spec(fresh)}, but {owner} was compiled "
            f"when it was {_spec(expected)}: compile the module again"
        )
    tensor = local(fresh)
    private = not _same_storage(tensor, fresh)
    if private and previous is not None and previous.private and _same_form(previous.tensor, tensor):
        previous.tensor.copy_(tensor)
        tensor = previous.tensor
    return HeldState(tensor, origin, origin.data_ptr(), origin._version, private)


def _spec(t: torch.Tensor) -> str:
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}"


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.device == b.device and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _same_form(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and a.stride() == b.stride()
