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

import linecache
import operator
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from hir.frontend.errors import FrontendError, SourceLine, _users, at_line
from hir.frontend.function_state import FunctionEnvironment, Keys, frozen, watchable


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
    cut: tuple[int, ...] = ()
    """How `tensor` cuts the module's tensor where that depends on the program (a fused projection's
    pieces on a mesh: `MeshMode.held_cut`): a program that cuts it otherwise takes it again."""

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

    def collect(self) -> None:
        """Takes the module's submodules again (a parametrization registered since adds some)."""
        self._collect()

    def _collect(self) -> None:
        self.modules = list(self.module.modules()) if self.module is not None else []
        places = [(m._modules, key) for m in self.modules for key in m._modules]
        self._tables, self._keys = [t for t, _ in places], [k for _, k in places]
        self.structure = tuple(t[k] for t, k in places)
        # What each module registers, counted: a submodule, parameter or buffer added since
        # (`nn.Sequential.append`, `nn.ParameterList.append`, a buffer that forward reads with
        # `getattr(self, "extra", None)`) changes what the trace ran and read, as a replaced one does.
        self._children = [table for m in self.modules for table in (m._modules, m._parameters, m._buffers)]
        self._counts = tuple(map(len, self._children))
        """
        Every submodule where its parent holds it: a submodule replaced since (`model.fc =
        nn.Linear(...)` for a new head, `model.head = nn.Dropout(0.5)`) changes the code the trace
        ran and the tensors it read, so the new structure picks programs of its own, as new flags
        do (the old ones read the old submodule's parameters: a silent wrong answer).
        """

        self._hook_tables = [table for m in self.modules for table in _module_hooks(m)] + _GLOBAL_HOOKS
        self._hooks_seen: tuple[int, int] | None = None
        self._holding: list[dict[int, Any]] = []
        self._hooks: tuple[tuple[int, Any], ...] = ()

    def hooks(self) -> tuple[tuple[int, Any], ...]:
        """
        The forward and backward hooks of the modules and torch's global ones, which a trace runs
        into the program: a hook registered or removed since (a feature extractor's, a hook that
        scales an output) picks programs of its own, as new flags do (the old programs ran the
        old hooks: a silent wrong answer). Every call compares torch's count of registered hooks
        and the number of hooks the modules hold (about 0.1 µs without hooks); the hooks
        themselves are read again when either changed.
        """
        # A hook registered anywhere draws a new id; one removed leaves a table that held hooks shorter.
        seen = (RemovableHandle.next_id, sum(map(len, self._holding)))
        if seen != self._hooks_seen:
            self._holding = [table for table in self._hook_tables if table]
            self._hooks_seen = (RemovableHandle.next_id, sum(map(len, self._holding)))
            self._hooks = tuple((k, key) for k, table in enumerate(self._hook_tables) for key in table)
        return self._hooks

    def replaced(self) -> bool:
        """Whether a submodule was replaced or removed, or a submodule, parameter or buffer added, since the
        structure was taken (about 0.05 µs a submodule)."""
        return (
            tuple(map(dict.get, self._tables, self._keys)) != self.structure  # modules compare by identity
            or tuple(map(len, self._children)) != self._counts
        )

    def __call__(self, checked: bool = False) -> tuple[Any, ...]:
        """The structure, the hooks and the flags; `checked`: the caller has just seen `replaced()` false."""
        if not checked and self.replaced():
            self._collect()
        return (self.structure, self._counts, self.hooks(), *map(self._FLAG, self.modules))  # 0.03 µs a submodule


_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")
_GLOBAL_HOOKS = [
    getattr(torch.nn.modules.module, f"_global{name}")
    for name in _HOOK_TABLES
    if isinstance(getattr(torch.nn.modules.module, f"_global{name}", None), dict)
]
"""torch's hooks of every module (`nn.modules.module.register_module_forward_hook`)."""


def _module_hooks(module: torch.nn.Module) -> list[dict[int, Any]]:
    """The module's hooks by their handles' ids, in the dicts torch keeps them in."""
    return [table for name in _HOOK_TABLES if isinstance(table := module.__dict__.get(name), dict)]


class Registrations:
    """
    How many parameters, buffers and submodules were registered on any module since hir was
    imported (torch's global registration hooks): a training step compares it at each call (one
    integer), and where it moved, reads the module's tensors by name again, so that a
    parametrization, pruning or parameter added after `hir.compile` (`register_parametrization`,
    `prune.l1_unstructured`, `model.scale = nn.Parameter(...)`) is traced, where the names it read
    at the compile were gone ('the module no longer has ...') or the new tensor was not the module's.
    """

    count = 0


def _count_registration(*_: Any) -> None:
    Registrations.count += 1


for _register in (
    torch.nn.modules.module.register_module_parameter_registration_hook,
    torch.nn.modules.module.register_module_buffer_registration_hook,
    torch.nn.modules.module.register_module_module_registration_hook,
):
    _register(_count_registration)


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


StateSpecs = dict[str, tuple[torch.dtype, torch.Size]]
"""Per parameter and buffer, the dtype and shape a training step's programs were traced for."""


def state_specs(state: dict[str, torch.Tensor]) -> StateSpecs:
    return {name: (t.dtype, t.shape) for name, t in state.items()}


def changed_state(owner: str, state: dict[str, torch.Tensor], specs: StateSpecs) -> FrontendError | None:
    """
    The error of a training call whose module now holds a tensor of another dtype or shape than
    the programs it runs were traced for (`model.to(torch.bfloat16)` after the first call, inputs
    still float32), or None. Checked only after a program refused its inputs: the check costs
    nothing per call, and a call with inputs of the new dtype is a new signature, traced with the
    module as it now is.
    """
    for name, (dtype, shape) in specs.items():
        t = state.get(name)
        if isinstance(t, torch.Tensor) and (t.dtype != dtype or t.shape != shape):
            before = f"{str(dtype).removeprefix('torch.')}{list(shape)}"
            retrace = " (or call it with inputs of the new dtype: a new signature is traced as the module now is)"
            return FrontendError(
                f"<call>: error: {owner}: the module's {name!r} is now {_spec(t)}, but the programs of this call's "
                f"signature were traced when it was {before}: compile the module again" + retrace * (t.dtype != dtype)
            )
    return None


def _spec(t: torch.Tensor) -> str:
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}"


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.device == b.device and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _same_form(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and a.stride() == b.stride()


_PLAIN = (bool, int, float, str, type(None))
_ABSENT = object()


def _plain(value: Any) -> bool:
    """
    A Python value a trace bakes into the program: a number, a string, None, a tuple of them (a
    conv's stride), a small list or dict of them (`self.scales = [1.0, 2.0]`, a config dict).
    """
    return isinstance(value, _PLAIN) or watchable(value)


def _watched_name(name: str) -> bool:
    """The module's own attributes: not torch's private ones (`_parameters`), nor `training` (TrainFlags')."""
    return not name.startswith("_") and name != "training"


class AttributeRecord:
    """
    The plain attributes (`self.offset`, `self.scale`, `self.n_rep`) of a module and its
    submodules whose values a trace read from before the call (those it assigned first, and then
    read, are its own), with the value each first read saw; and the first assignment of a new
    value to one of them (`self.offset += T`), at the user's line.
    """

    def __init__(self) -> None:
        self.reads: dict[tuple[int, str], tuple[Any, str, Any]] = {}
        self.objects: dict[tuple[int, str], tuple[Any, str, Any]] = {}
        """The objects of the user's classes read from an attribute (`self.cfg`), with the object read."""
        self.frozen: dict[tuple[int, str], Any] = {}
        """Each read's value as a key (`frozen`), taken at the read: a list's items as they were."""
        self._own: set[tuple[int, str]] = set()
        """The reads of an object's own value (not its class's default)."""
        self._assigned_first: set[tuple[int, str]] = set()
        self.changed: tuple[torch.nn.Module, str, Any, SourceLine | None] | None = None

    def read(self, module: torch.nn.Module, name: str, value: Any) -> None:
        key = (id(module), name)
        if key not in self.reads and key not in self._assigned_first:
            self.reads[key] = (module, name, value)
            self.frozen[key] = frozen(value)
            if name in module.__dict__:
                self._own.add(key)

    def held(self, module: Any, name: str, value: Any) -> None:
        """A read of an object of the user's (`self.config`): watched by identity (its own attributes are read too)."""
        key = (id(module), name)
        if key not in self.objects and key not in self.reads and key not in self._assigned_first:
            self.objects[key] = (module, name, value)

    def assigned(self, module: torch.nn.Module, name: str, value: Any) -> None:
        key = (id(module), name)
        if key not in self.reads:
            self._assigned_first.add(key)
            return
        before = self.reads[key][2]
        if self.changed is not None or value is before or (_plain(value) and value == before):
            return
        frame = sys._getframe(2)
        while frame is not None and not _users(frame.f_code.co_filename):
            frame = frame.f_back  # type: ignore[assignment]
        line = None
        if frame is not None:
            file = frame.f_code.co_filename
            line = SourceLine(file, frame.f_lineno, linecache.getline(file, frame.f_lineno).strip())
        self.changed = (module, name, value, line)

    def restore(self) -> FrontendError | None:
        """
        After the trace: the attributes it read put back to the values it read, and the error of
        one it changed (a decode offset advanced in forward, `self.offset += T`): the program runs
        without Python, so every call would read the value of the trace, where eager reads the one
        the previous call left.
        """
        for key, (module, name, before) in self.reads.items():
            if key in self._own:
                if module.__dict__.get(name, _ABSENT) is not before:
                    module.__dict__[name] = before
            else:  # a class's default the trace shadowed
                module.__dict__.pop(name, None)
        if self.changed is None:
            return None
        module, name, now, where = self.changed
        before = self.reads[id(module), name][2]
        message = (
            f"forward changes {type(module).__name__}'s attribute '{name}' ({before!r}, then {now!r}), a Python "
            f"value that a program traced once takes as a constant: every call would read {before!r}. Pass it as "
            "an argument (each value a specialization), or keep it in a buffer updated in place "
            "(`register_buffer`, written back after each call)"
        )
        return FrontendError(at_line(where, message) if where is not None else f"<capture>: error: {message}")


_RECORDING: list[AttributeRecord] = []
_RECORDING_CLASSES: dict[type, type] = {}


def _data_attribute(obj: Any, name: str, read: Callable[[Any, str], Any]) -> bool:
    """Whether `name` is the object's own value or its class's (a default, `scale = 2.0`), not a property's."""
    if name in read(obj, "__dict__"):
        return True
    for cls in type(obj).__mro__:
        if name in cls.__dict__:  # not a method: a function there binds a new method at every read
            value = cls.__dict__[name]
            return _plain(value) and not isinstance(value, types.FunctionType | types.BuiltinFunctionType)
    return False


def _recording_methods(cls: type) -> tuple[Callable[..., Any], Callable[..., None]]:
    """The `__getattribute__` and `__setattr__` of `cls`'s recording subclass."""
    read = cls.__getattribute__

    def __getattribute__(self: Any, name: str) -> Any:
        value = read(self, name)
        if _RECORDING and _watched_name(name):
            if _plain(value) and _data_attribute(self, name, read):
                _RECORDING[-1].read(self, name, value)
            elif _users_object(value) and name in read(self, "__dict__"):  # a config: another one is another trace
                _RECORDING[-1].held(self, name, value)
        return value

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if _RECORDING and _watched_name(name):
            _RECORDING[-1].assigned(self, name, value)
        cls.__setattr__(self, name, value)  # looked up now: the one a training trace patches in (training.py)

    return __getattribute__, __setattr__


RECORDING_SETATTR = _recording_methods(torch.nn.Module)[1].__code__
"""The code of the recording `__setattr__`, a frame that code looking for its caller steps over."""


def _recording_class(cls: type) -> type | None:
    """`cls` with its plain attributes' reads and assignments recorded while a trace runs (None: it cannot be)."""
    if cls in _RECORDING_CLASSES:
        return _RECORDING_CLASSES[cls]
    getattribute, setattr_ = _recording_methods(cls)
    namespace = {
        "__getattribute__": getattribute,
        "__setattr__": setattr_,
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
    }
    try:
        recording: type | None = type(cls.__name__, (cls,), namespace)
    except Exception:  # a class that takes no subclass of this kind (a metaclass's, __init_subclass__'s rules)
        recording = None
    _RECORDING_CLASSES[cls] = recording  # type: ignore[assignment]
    return recording


@contextmanager
def recorded_attributes(module: Any) -> Iterator[AttributeRecord]:
    """
    While a trace of `module` runs: the plain attributes its forward reads and assigns, of the
    module, every submodule and the objects of the user's classes they hold (a Hugging Face
    model's `self.config`), each one's class swapped for a recording subclass of the same name
    for the trace only. An attribute the trace read and changed is an error at the line of its
    assignment, raised after the trace.
    """
    record = AttributeRecord()
    swapped = []
    for owner in _recorded_objects(module):
        cls = type(owner)
        recording = _recording_class(cls)
        if recording is None:
            continue
        try:
            object.__setattr__(owner, "__class__", recording)  # past a frozen dataclass's __setattr__
        except TypeError:  # a layout of its own (slots, a builtin)
            continue
        swapped.append((owner, cls))
    _RECORDING.append(record)
    try:
        yield record
    finally:
        _RECORDING.pop()
        for owner, cls in reversed(swapped):
            object.__setattr__(owner, "__class__", cls)
        changed = record.restore()  # also under another error
    if changed is not None:
        raise changed


def _recorded_objects(module: Any) -> list[Any]:
    """The module, its submodules, and the objects of the user's classes they hold as attributes (a config)."""
    if not isinstance(module, torch.nn.Module):
        return []
    modules = list(module.modules())
    found: dict[int, Any] = {id(m): m for m in modules}
    for owner in modules:
        for name, value in vars(owner).items():
            if _watched_name(name) and id(value) not in found and _users_object(value):
                found[id(value)] = value
    return list(found.values())


def _users_object(value: Any) -> bool:
    """An instance of a class of the user's (or a library's, not Python's nor torch's) with attributes of its own."""
    cls = type(value)
    return (
        isinstance(getattr(value, "__dict__", None), dict)
        and not isinstance(value, torch.nn.Module | torch.Tensor | type | types.FunctionType | types.MethodType)
        and not cls.__module__.startswith(("builtins", "torch", "functools", "enum", "typing", "hir."))
    )


class AttributeWatch:
    """
    The plain attributes that the traces of a compiled module read (its `offset`, `scale`,
    `n_rep`; a conv's stride), which the programs hold as constants: a call reads their values,
    which pick the programs traced with them (an attribute changed since the first call, such as
    `model.temperature = 0.7`, runs programs traced again, once per value, as new train / eval
    flags do). About 0.05 µs per attribute per call.
    """

    def __init__(self, environment: FunctionEnvironment | None = None) -> None:
        self.environment = environment
        """A plain function's globals and closure variables (function_state.py), read before the attributes."""
        self._seen: set[tuple[int, str]] = set()
        self._owners: list[Any] = []
        self._names: list[str] = []
        self._absent: list[object] = []
        self._alive: list[Any] = []
        self._keys = Keys()
        self.traced: list[Any] = []
        """Per attribute, the value the trace that first read it saw."""

    def __len__(self) -> int:
        return len(self._names)

    def add(self, record: AttributeRecord | None) -> None:
        """The attributes a new trace read, beside those of the earlier ones."""
        if self.environment is not None:
            self.environment.settle()
        for key, (module, name, value) in (record.reads if record is not None else {}).items():
            if key in self._seen or frozen(value) != record.frozen[key]:
                continue  # a list forward appends to (a log of its calls): its items are no input of the program
            self._seen.add(key)
            self._owners.append(module)
            self._names.append(name)
            self._absent.append(_ABSENT)
            self.traced.append(record.frozen[key])
        for key, (module, name, value) in (record.objects if record is not None else {}).items():
            if key in self._seen or getattr(module, name, None) is not value:
                continue
            self._seen.add(key)
            self._owners.append(module)
            self._names.append(name)
            self._absent.append(_ABSENT)
            self.traced.append(frozen(value))
            self._alive.append(value)  # its id is its key: no other object takes it while the key is held

    def since(self, count: int) -> tuple[Any, ...]:
        """
        The values the traces read of the attributes after the first `count`: the key of the
        programs traced before those were first read, which do not depend on them, and of the
        one whose trace read them, which does.
        """
        return tuple(self.traced[count:])

    def __call__(self) -> tuple[Any, ...]:
        """
        The current values of the function's globals and closure variables (`environment`), then
        of the attributes (`_ABSENT` for one deleted since), as keys (`frozen`).
        """
        values = self._keys(tuple(map(getattr, self._owners, self._names, self._absent)))
        return self.environment() + values if self.environment is not None else values


_FORWARD_HOOK_TABLES = (
    "_forward_pre_hooks",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
)


@contextmanager
def global_hooks_on_each_module(module: Any) -> Iterator[None]:
    """
    While torch.export captures `module`: torch's global forward hooks
    (`nn.modules.module.register_module_forward_hook`, `..._pre_hook`: a FLOP counter's, a
    profiler's) run as the own hooks of the module and of each submodule, before theirs, as eager
    runs them. torch.export calls modules of its own around the user's, whose outputs a global
    hook changed too (a `ValueError` from deep inside the capture).
    """
    from torch.nn.modules import module as torch_module

    globals_ = [getattr(torch_module, f"_global{name}", None) for name in _FORWARD_HOOK_TABLES]
    present = all(isinstance(table, dict) for table in globals_)
    if not isinstance(module, torch.nn.Module) or not present or not any(globals_[:2]):
        yield
        return
    held = [dict(table) for table in globals_]  # type: ignore[arg-type]
    owners = [(owner, {name: owner.__dict__.get(name) for name in _FORWARD_HOOK_TABLES}) for owner in module.modules()]
    for owner, own in owners:
        for name, first in zip(_FORWARD_HOOK_TABLES, held, strict=True):
            if isinstance(own[name], dict):
                owner.__dict__[name] = type(own[name])([*first.items(), *own[name].items()])
    for table in globals_:
        table.clear()  # type: ignore[union-attr]
    try:
        yield
    finally:
        for table, items in zip(globals_, held, strict=True):
            table.update(items)  # type: ignore[union-attr]
        for owner, own in owners:
            owner.__dict__.update(own)
