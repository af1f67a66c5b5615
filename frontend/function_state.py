"""
The globals and closure variables a compiled plain function reads, watched at every call as a
module's attributes are (module_state.py): a trace bakes a number, a string or a list of them into
the program, and holds a tensor or module as the one it read, so a variable reassigned after
`hir.compile` (`SCALE = 3.0`, `mask = new_mask`, `encoder = other_encoder`) computed with the old
value, a silent wrong answer. A call now reads them: a new plain value picks programs traced with
it (once per value, as a new attribute value does), and a new tensor or module of the same form
is what the program reads (the capturing module holds it under the variable's name).
"""

from __future__ import annotations

import dis
import enum
import inspect
import operator
import types
from collections.abc import Callable
from typing import Any

import torch

from hir.frontend.errors import FrontendError

_SCALARS = (bool, int, float, str, type(None))
_ABSENT = object()
_MAX_ITEMS = 64
"""A list or dict longer than this is not watched: freezing it at every call would cost more than the call."""


def frozen(value: Any) -> Any:
    """
    A hashable key of a plain value, which tells apart what compares equal but traces another
    program: `1`, `1.0` and `True`; `0.0` and `-0.0`; a list's items as they are now (a later
    `append` changes the key). Other values are themselves.
    """
    kind = type(value)
    if kind is float:
        return kind, repr(value)
    if kind in _SCALARS:
        return kind, value
    if kind is list or kind is tuple:
        return kind, tuple(map(frozen, value))
    if kind is dict:
        return kind, tuple((frozen(k), frozen(v)) for k, v in value.items())
    if isinstance(value, _KEYED):
        return value
    return id, id(value)  # an object of the user's (a config): by identity; its holder keeps it alive


class Keys:
    """
    The keys (`frozen`) of a tuple of watched values, taken again only where a value is another
    object than at the last call, or a list's or dict's items changed: freezing every value at
    every call cost about 0.5 µs per value (a network's convolutions' strides and paddings, 150 µs
    a call); comparing the objects costs about 0.02 µs per value.
    """

    def __init__(self) -> None:
        self._values: tuple[Any, ...] = ()
        self._key: tuple[Any, ...] = ()
        self._mutable: tuple[int, ...] = ()

    def __call__(
        self, values: tuple[Any, ...], check: Callable[[tuple[Any, ...]], None] | None = None
    ) -> tuple[Any, ...]:
        key = self._key
        if (
            len(values) == len(key)
            and all(map(operator.is_, values, self._values))
            and all(frozen(values[k]) == key[k] for k in self._mutable)
        ):
            return key
        if check is not None:
            check(values)
        key = tuple(map(frozen, values))
        self._values, self._key = values, key
        self._mutable = tuple(k for k, value in enumerate(values) if _holds_mutable(value))
        return key


def _holds_mutable(value: Any) -> bool:
    """A list or dict, or a tuple holding one: its items may change while it stays the same object."""
    kind = type(value)
    return kind is list or kind is dict or (kind is tuple and any(map(_holds_mutable, value)))


_KEYED = (torch.dtype, torch.device, enum.Enum, types.FunctionType, types.BuiltinFunctionType)
"""Values a trace follows that key by themselves: a dtype, a device, an enum's member, a function
(`self.act = F.gelu`, a lambda; by identity)."""


def watchable(value: Any) -> bool:
    """
    A value a trace bakes into the program: a number, string or None, a dtype, device, enum member
    or function (`_KEYED`), or a small list, tuple or dict of them.
    """
    kind = type(value)
    if kind in _SCALARS or isinstance(value, _KEYED):
        return True
    if kind is list or kind is tuple:
        return len(value) <= _MAX_ITEMS and all(map(watchable, value))
    if kind is dict:
        return len(value) <= _MAX_ITEMS and all(watchable(k) and watchable(v) for k, v in value.items())
    return False


def _kind(value: Any) -> str:
    if isinstance(value, torch.nn.Parameter):
        return "an nn.Parameter"
    if isinstance(value, torch.Tensor):
        return "a tensor"
    if isinstance(value, torch.nn.Module):
        return f"a {type(value).__name__}"
    return "unset" if value is _ABSENT else f"{value!r}"


class FunctionEnvironment:
    """
    The variables of a plain function (its closure cells, the globals its code names) that hold
    plain values, tensors or modules when it is compiled. A call (`__call__`, about 0.2 µs per
    variable) rebinds a reassigned tensor or module in the capturing module and returns the
    plain values' keys, which select the programs traced with them.
    """

    def __init__(self, fn: types.FunctionType, module: torch.nn.Module | None, name: str) -> None:
        self.name = name
        self._module = module
        self._plain: list[tuple[str, Callable[[], Any]]] = []
        self._held: list[tuple[str, Callable[[], Any], str, Any]] = []
        """A tensor or module the capturing module holds: the label, the getter, the module's name for it, the value."""
        code = fn.__code__
        sources: list[tuple[str, str, Callable[[], Any]]] = []
        for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
            sources.append((var, f"closure variable '{var}'", lambda cell=cell: _cell(cell)))
        scope = fn.__globals__
        seen = set(code.co_freevars)
        for var in global_names(code):
            if var not in seen and var in scope:
                seen.add(var)
                sources.append((var, f"global '{var}'", lambda var=var: scope.get(var, _ABSENT)))
        held = _held_names(module)
        stored = _stored_names(code)
        from hir.frontend.module_state import _users_object

        self._keys = Keys()
        self._objects: list[Callable[[], Any]] = []
        self._alive: list[Any] = []
        """The objects whose ids are keys: kept, so that no other object takes one of their ids."""
        self._before: list[Any] = []
        """Each plain variable's key before the first trace (`settle`)."""
        for var, label, get in sources:
            value = get()
            if var in stored:
                continue  # a variable the function assigns (`global calls; calls += 1`): its state, no input
            if isinstance(value, torch.Tensor | torch.nn.Module):
                if held.get(var) is value:
                    self._held.append((label, get, var, value))
            elif watchable(value):
                self._plain.append((label, get))
                self._before.append(frozen(value))
            elif _users_object(value):  # a config object: another one is another trace (by identity)
                self._objects.append(get)
                self._alive.append(value)

    def settle(self) -> None:
        """
        After the first trace: the plain variables it changed (a global list forward appends to,
        a log of its calls) are no inputs of the program, and are not watched: each call would
        otherwise see a new value and trace again.
        """
        if self._before:
            now = [frozen(get()) for _, get in self._plain]
            self._plain = [source for source, a, b in zip(self._plain, self._before, now) if a == b]
            self._before = []

    def __bool__(self) -> bool:
        return bool(self._plain or self._held or self._objects)

    def __call__(self) -> tuple[Any, ...]:
        for k, (label, get, var, value) in enumerate(self._held):
            now = get()
            if now is not value:
                self._rebind(label, var, value, now)
                self._held[k] = (label, get, var, now)
        plain = tuple(get() for _, get in self._plain)
        keys = list(self._keys(plain, self._check))
        for get in self._objects:
            now = get()
            if not any(now is seen for seen in self._alive):
                self._alive.append(now)
            keys.append(id(now))
        return tuple(keys)

    def _check(self, values: tuple[Any, ...]) -> None:
        for (label, _), now in zip(self._plain, values):
            if not watchable(now):
                raise FrontendError(
                    f"<call>: error: {self.name} reads the {label}, which is now {_kind(now)}; it was a Python value "
                    "when the function was compiled, which the program holds as a constant: compile the function again"
                )

    def _rebind(self, label: str, var: str, before: Any, now: Any) -> None:
        module = self._module
        assert module is not None
        if isinstance(before, torch.nn.Module) and isinstance(now, torch.nn.Module):
            setattr(module, var, now)  # a replaced submodule, which the next state read takes (module_state.py)
            return
        if isinstance(before, torch.Tensor) and isinstance(now, torch.Tensor):
            if var in module._parameters:
                if isinstance(now, torch.nn.Parameter):
                    setattr(module, var, now)
                    return
            else:
                module.__dict__[var] = now  # a plain tensor attribute, read at every call
                return
        raise FrontendError(
            f"<call>: error: {self.name} reads the {label}, which is now {_kind(now)}; it was {_kind(before)} when "
            "the function was compiled: compile the function again (or pass it as an argument)"
        )


def _cell(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _ABSENT


def _held_names(module: torch.nn.Module | None) -> dict[str, Any]:
    if module is None:
        return {}
    return {**module.__dict__, **module._parameters, **module._buffers, **module._modules}


_STORES = {"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF"}


def _stored_names(code: types.CodeType) -> set[str]:
    """The globals and closure variables a function's code (and the code inside it) assigns or deletes."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _STORES}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _stored_names(constant)
    return names


def global_names(code: types.CodeType) -> list[str]:
    """The global names a function's code (and the code of the functions and lambdas inside it) reads."""
    names = list(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names += global_names(constant)
    return names


def function_environment(fn: Any, name: str) -> FunctionEnvironment | None:
    """
    The environment of `fn` as `capturing_module` returned it: a plain function, or the module
    holding what it reads (whose function `_hir_function` is; a function taking the leaves of
    containers names the user's so too); None for a module of the user's.
    """
    function = getattr(fn, "_hir_function", None if isinstance(fn, torch.nn.Module) else fn)
    if not inspect.isfunction(function):
        return None
    environment = FunctionEnvironment(function, fn if isinstance(fn, torch.nn.Module) else None, name)
    return environment if environment else None
