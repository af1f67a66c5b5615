"""
Arguments that are containers of tensors (Hugging Face's `past_key_values`, a tuple of (k, v)
tuples; a `batch` dict; a list of feature maps; `cache=None` or a tuple).

Each container argument is flattened in torch's pytree order (`torch.utils._pytree`) into its
leaves, which become arguments of their own of a flat function that rebuilds the containers and
calls the user's code: the leaves are the program's inputs, as separate arguments are, and the
containers' structure is part of the call's signature. A call with another structure (a tuple
of three pairs where the example had two, `None` where it had a tuple) compiles the function
for that structure, as a new shape does; errors name each leaf by its path
(`past_key_values[1][0]`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.utils import _pytree as pytree

from hir.frontend.errors import FrontendError, NotPickled
from hir.frontend.importer import _call_parameters
from hir.frontend.specialize import CallError, check_keywords, check_positional_count, is_static

_LEAF = "leaf"
"""The structure of an argument that is no container (a tensor, None, a number)."""


def is_container(arg: Any) -> bool:
    """A pytree node of torch's registry (tuple, list, dict, a registered dataclass) other than None."""
    return arg is not None and not isinstance(arg, torch.Tensor) and not pytree.tree_is_leaf(arg)


def has_containers(args: Sequence[Any]) -> bool:
    return not isinstance(args, torch.Tensor) and any(is_container(a) for a in args)


def _flat_name(name: str, path: str) -> str:
    """An identifier for a leaf (`past_key_values_1_0`), for the flat function's parameters and IR names."""
    return re.sub(r"\W+", "_", f"{name}{path}").strip("_") or name


class _Structure:
    """The arguments' structure: per argument its pytree spec (or `_LEAF`), the leaves' paths and flat names."""

    def __init__(self, names: Sequence[str], args: Sequence[Any], where: str, fn_name: str):
        self.specs: list[Any] = []
        self.shown: list[str] = []
        self.counts: list[int] = []
        self.paths: list[str] = []
        flat_names: list[str] = []
        self.leaves: list[Any] = []
        for name, arg in zip(names, args):
            self.shown.append(_shown(_LEAF if not is_container(arg) else pytree.tree_flatten(arg)[1], arg))
            if not is_container(arg):
                self.specs.append(_LEAF)
                self.counts.append(1)
                self.paths.append(name)
                flat_names.append(name)
                self.leaves.append(arg)
                continue
            with_paths, spec = pytree.tree_flatten_with_path(arg)
            self.specs.append(spec)
            self.counts.append(len(with_paths))
            for path, leaf in with_paths:
                text = f"{name}{pytree.keystr(path)}"
                if not isinstance(leaf, torch.Tensor) and not is_static(leaf):
                    raise (CallError if where == "<call>" else FrontendError)(
                        f"{where}: error: {fn_name}: argument {text} is a {type(leaf).__name__}, not a tensor (nor "
                        "None, a bool, int, float or str, which the program is specialized for)"
                    )
                self.paths.append(text)
                flat_names.append(_flat_name(name, pytree.keystr(path)))
                self.leaves.append(leaf)
        seen: dict[str, int] = {}
        self.flat_names = []
        for n in flat_names:  # `a[0]` and `a_0` both flatten to `a_0`: keep them apart
            seen[n] = seen.get(n, 0) + 1
            self.flat_names.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
        self.key = tuple(s if s is _LEAF else str(s) for s in self.specs)

    def rebuild(self, leaves: Sequence[Any]) -> list[Any]:
        """The arguments from their leaves (the containers rebuilt)."""
        values, i = [], 0
        for spec, n in zip(self.specs, self.counts):
            values.append(leaves[i] if spec is _LEAF else pytree.tree_unflatten(list(leaves[i : i + n]), spec))
            i += n
        return values

    def in_users_terms(self, err: CallError) -> CallError:
        """The flat function's error with each leaf named by its path (`past_key_values[1][0]`)."""
        renamed = {f: p for f, p in zip(self.flat_names, self.paths) if f != p}
        if not renamed:
            return err
        pattern = re.compile(
            r"(?<![\w.])(" + "|".join(re.escape(f) for f in sorted(renamed, key=len, reverse=True)) + r")(?!\w)"
        )
        return CallError(pattern.sub(lambda m: renamed[m.group(1)], str(err)))


def _flat_function(
    fn: Callable[..., Any] | torch.nn.Module, parameters: list[inspect.Parameter], structure: _Structure
) -> Callable[..., Any] | torch.nn.Module:
    """
    `fn` taking the leaves as arguments. For a module: a view of the same module (it shares the
    module's attributes, parameters, submodules, hooks and train/eval flag, so their names and
    every change to them are the module's) whose forward takes the leaves.
    """
    keyword_only = {p.name for p in parameters if p.kind == inspect.Parameter.KEYWORD_ONLY}
    names = [p.name for p in parameters]

    def call(target: Callable[..., Any], leaves: Sequence[Any]) -> Any:
        values = structure.rebuild(leaves)
        positional = [v for n, v in zip(names, values) if n not in keyword_only]
        return target(*positional, **{n: v for n, v in zip(names, values) if n in keyword_only})

    signature = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in structure.flat_names]
    )
    if isinstance(fn, torch.nn.Module):
        module, cls = fn, type(fn)
        inside = [False]  # within the view's call: its hooks and forward take the containers

        def original() -> Callable[..., Any]:
            # The class's forward on the view: the trace records the attributes it reads (read again
            # at every call) as on the module; a forward set on the instance is the module's own.
            own = module.__dict__.get("forward")
            # (a staticmethod's, a function's module built by capturing_module, binds no self)
            return own if own is not None else inspect.getattr_static(cls, "forward").__get__(view, cls)

        def forward(*leaves: Any) -> Any:
            return call(original(), leaves)

        def call_impl(self: torch.nn.Module, *leaves: Any, **kwargs: Any) -> Any:
            if inside[0] or kwargs:  # forward calling the module again: as it is
                return cls._call_impl(self, *leaves, **kwargs)
            inside[0] = True
            try:  # the module's hooks see the containers, as in eager
                return call(lambda *a, **k: cls._call_impl(self, *a, **k), leaves)
            finally:
                inside[0] = False

        forward.__signature__ = signature  # type: ignore[attr-defined]
        # A property: it wins over a forward set on the instance (a module holding a function's globals).
        members = {"forward": property(lambda self: original() if inside[0] else forward), "_call_impl": call_impl}
        view_type = type(cls.__name__, (cls,), members)
        view = object.__new__(view_type)
        object.__setattr__(view, "__dict__", module.__dict__)
        return view

    def flat(*leaves: Any) -> Any:
        return call(fn, leaves)

    flat.__signature__ = signature  # type: ignore[attr-defined]
    flat.__name__ = getattr(fn, "__name__", "fn")
    flat._hir_function = fn  # type: ignore[attr-defined]  # its globals, read at every call (function_state.py)
    register = getattr(torch.fx.proxy, "_register_stack_trace_anchor", None)
    if register is not None and inspect.isfunction(fn):
        register(fn)  # the trace keeps the user's frames inside it: errors name their lines
    return flat


def leaf_layouts(
    in_layouts: Any, names: Sequence[str], args: Sequence[Any], structure: _Structure
) -> list[str | None] | None:
    """Per leaf: a container's leaves are serial (its entry must be None); another argument keeps its own."""
    if in_layouts is None:
        return None
    given = [in_layouts] if isinstance(in_layouts, str) else list(in_layouts)
    layouts: list[str | None] = []
    for k, (spec, n) in enumerate(zip(structure.specs, structure.counts)):
        layout = given[k] if k < len(given) else None
        if spec is not _LEAF and layout is not None:
            raise FrontendError(
                f"<layouts>: error: argument '{names[k]}' is a {type(args[k]).__name__} of tensors: its in_layouts "
                "entry must be None (its tensors are serial); pass a tensor that needs a layout as an argument of "
                "its own"
            )
        layouts += [layout] * n if spec is _LEAF else [None] * n
    return layouts


def refuse_on_mesh(example_args: Sequence[Any], mesh: Sequence[int] | None) -> None:
    """Containers of tensors are arguments on one device only."""
    if mesh is not None:
        kinds = ", ".join(f"#{k} is a {type(a).__name__}" for k, a in enumerate(example_args) if is_container(a))
        raise FrontendError(
            f"<inputs>: error: example argument {kinds}: containers of tensors are not supported on a mesh; pass "
            "their tensors as arguments of their own"
        )


def flattened(
    fn: Callable[..., Any] | torch.nn.Module, example_args: Sequence[Any], in_layouts: Any
) -> tuple[Callable[..., Any] | torch.nn.Module, list[Any], list[str | None] | None]:
    """`fn` taking the leaves of `example_args`, the leaves, and their layouts (for `hir.import_torch`)."""
    parameters = _call_parameters(fn)
    names = [p.name for p in parameters]
    structure = _Structure(names, example_args, "<inputs>", f"<{getattr(fn, '__name__', type(fn).__name__)}>")
    layouts = leaf_layouts(in_layouts, names, example_args, structure)
    return _flat_function(fn, parameters, structure), structure.leaves, layouts


class PytreeFunction(NotPickled):
    """
    A compiled function of arguments that are containers of tensors: one compiled flat function
    per structure of the arguments (at most `max_specializations`), each taking the leaves.
    """

    def __init__(
        self,
        fn: Callable[..., Any] | torch.nn.Module,
        example_args: Sequence[Any],
        in_layouts: Any,
        compile_flat: Callable[[Any, list[Any], Any], Any],
        max_specializations: int,
        call_kwargs: Mapping[str, Any] | None = None,
    ):
        """`call_kwargs`: where the example is a call's (`example_args` and these by name)."""
        self._fn = fn
        self._name = f"<{getattr(fn, '__name__', type(fn).__name__)}>"
        self._parameters = _call_parameters(fn)
        kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        target = fn.forward if isinstance(fn, torch.nn.Module) else fn
        try:
            every = inspect.signature(target).parameters.values()
        except (TypeError, ValueError):
            every = []
        if any(p.kind in kinds for p in every) or len(example_args) > len(self._parameters):
            raise FrontendError(
                f"<inputs>: error: {self._name} takes *args or **kwargs: containers of tensors are arguments of a "
                "function with named parameters (`forward(self, x, past_key_values)`)"
            )
        self._in_layouts = in_layouts
        self._compile_flat = compile_flat
        self._max = max_specializations
        self._compiled: dict[tuple[Any, ...], tuple[_Structure, Any]] = {}
        self._settings: dict[str, Any] = {}
        if call_kwargs is None:
            self._last = self._specialize(self._with_defaults(list(example_args)), "<inputs>")
        else:
            self._last = self._specialize(self._positional(example_args, call_kwargs), "<call>")

    @property
    def _names(self) -> list[str]:
        return [p.name for p in self._parameters]

    def _with_defaults(self, args: list[Any]) -> list[Any]:
        """The parameters after the given ones whose defaults are static values (`cache=None`)."""
        for p in self._parameters[len(args) :]:
            if p.default is inspect.Parameter.empty or not is_static(p.default):
                break
            args.append(p.default)
        return args

    def _specialize(self, args: list[Any], where: str) -> tuple[_Structure, Any]:
        structure = _Structure(self._names, args, where, self._name)
        if structure.key in self._compiled:
            return structure, self._compiled[structure.key][1]  # this call's leaves, that structure's function
        if len(self._compiled) >= self._max:
            first = next(iter(self._compiled.values()))[0]
            differ = [
                f"'{n}' is {s} (compiled for {f})"
                for n, s, f in zip(self._names, structure.shown, first.shown)
                if s != f
            ]
            count = len(self._compiled)
            raise CallError(
                f"<call>: error: {self._name} is compiled for {count} structure{'s' * (count > 1)} of its arguments "
                f"(max_specializations={self._max}); this call's {', '.join(differ)}"
            )
        flat = _flat_function(self._fn, self._parameters, structure)
        compiled = self._compile_flat(
            flat, structure.leaves, leaf_layouts(self._in_layouts, self._names, args, structure)
        )
        for attribute, value in self._settings.items():
            setattr(compiled, attribute, value)
        self._compiled[structure.key] = (structure, compiled)
        return structure, compiled

    def _positional(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
        names = self._names
        keyword_only = sum(p.kind == inspect.Parameter.KEYWORD_ONLY for p in self._parameters)
        check_positional_count(self._name, names, keyword_only, len(args))
        check_keywords(self._name, names, len(args), kwargs)
        if len(args) > len(names):
            raise CallError(
                f"<call>: error: {self._name} takes {len(names)} argument{'s' * (len(names) != 1)} "
                f"({', '.join(names)}), got {len(args)}"
            )
        values = list(args)
        for p in self._parameters[len(args) :]:
            if p.name in kwargs:
                values.append(kwargs[p.name])
            elif p.default is not inspect.Parameter.empty and is_static(p.default):
                values.append(p.default)
            else:
                raise CallError(f"<call>: error: {self._name} is missing argument {p.name}")
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        structure, compiled = self._specialize(self._positional(args, kwargs), "<call>")
        self._last = (structure, compiled)
        try:
            return compiled(*structure.leaves)
        except CallError as err:
            raise structure.in_users_terms(err) from None

    @property
    def structures(self) -> list[Any]:
        """The compiled flat functions, one per structure of the arguments, in the order they were compiled."""
        return [c for _, c in self._compiled.values()]

    def __getattr__(self, attribute: str) -> Any:
        # `fusion_text`, `module`, `specializations`, ...: the flat function of the last call's structure
        last = self.__dict__.get("_last")
        if last is None:  # an instance being built (copy.deepcopy): no function yet
            raise AttributeError(attribute)
        return getattr(last[1], attribute)

    def __setattr__(self, attribute: str, value: Any) -> None:
        if attribute.startswith("_"):
            object.__setattr__(self, attribute, value)
            return
        self._settings[attribute] = value  # `compiled.cuda_graph = False`: every structure's, also later ones
        for _, compiled in self._compiled.values():
            setattr(compiled, attribute, value)


class LateContainers:
    """
    For a function compiled from an example without containers: a call that passes some (a
    decode loop's `past_key_values=None` first, then the cache) compiles the function for them
    then, as a function compiled with them; the calls without any stay the function's own.
    """

    def __init__(self, build: Callable[[Sequence[Any], Mapping[str, Any]], PytreeFunction]):
        self._build = build
        self.function: PytreeFunction | None = None

    @staticmethod
    def wanted(args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
        """Some argument is a container holding a tensor (a list of numbers stays the call's error)."""
        return any(
            is_container(a) and any(isinstance(t, torch.Tensor) for t in pytree.tree_leaves(a))
            for a in (*args, *kwargs.values())
        )

    def __call__(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if self.function is None:
            self.function = self._build(args, kwargs)
            structure = self.function._last[0]
            return self.function._last[1](*structure.leaves)
        return self.function(*args, **kwargs)


def _shown(spec: Any, arg: Any = None) -> str:
    """A structure in short: `tuple(tuple(*, *), tuple(*, *))`, `dict('input_ids': *)`, `*` a leaf."""
    if spec is _LEAF:
        return "a tensor" if isinstance(arg, torch.Tensor) else repr(arg)
    if spec.is_leaf():
        return "*"
    children = [_shown(c) for c in spec.children()]
    if spec.type is dict:
        children = [f"{k!r}: {c}" for k, c in zip(spec.context, children)]
    return f"{spec.type.__name__}({', '.join(children)})"
