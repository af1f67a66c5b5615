"""
Calls of a `hir.compile`d function with other shapes: one specialization (an imported, lowered and
compiled program) per input signature, the shapes, dtypes and device of the user's tensors, kept
in a cache of at most `max_specializations` entries (least recently used dropped first).

The checks here run before any program does, so that a call the function cannot take is an error
in the user's terms: the argument's name (from the function's or `forward`'s signature) and its
shape, never the position of an argument of `@main` or a line of the imported module.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from hir.dialects.parallel_encoding import DIDX
from hir.frontend.errors import FrontendError, also_users_exception, user_stacklevel
from hir.frontend.layouts import AxisLayout, LayoutError, parse_layout
from hir.frontend.rank_agreement import FAILED, RankAgreement, ValueCheck, check_every_call, program_digest
from hir.frontend.types import _ELEMENT_TYPES

DEFAULT_MAX_SPECIALIZATIONS = 8


class CallError(FrontendError):
    """A call the compiled function cannot take; the message names the argument and its shape."""


class SpecializationWarning(RuntimeWarning):
    """A compiled function dropped a specialization: more input signatures than `max_specializations`."""


@dataclass(frozen=True)
class ArgSpec:
    """What a specialization is specific to, per user tensor (its local shard on a mesh)."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool = False
    """Whether a call of a training function differentiates with respect to it (a graph of its own)."""

    def __str__(self) -> str:
        return f"{str(self.dtype).removeprefix('torch.')}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class StaticArg:
    """
    An argument that is no tensor: None (an optional input left out, `attention_mask=None`), a
    bool, int, float or str (`return_dict=False`). The program is specialized for its value, as
    torch.export specializes it: another value is another signature.
    """

    value: Any
    kind: type
    """The value's type: `1`, `1.0` and `True` compare equal, but are different specializations."""
    sign: float = 1.0
    """A float's sign: `-0.0 == 0.0`, but `x * -0.0` is another program."""

    def __str__(self) -> str:
        return repr(self.value)


STATIC_TYPES = (type(None), bool, int, float, str)
"""The types of the arguments a program is specialized for (`StaticArg`); other non-tensors are errors."""


Key = tuple[ArgSpec | StaticArg, ...]


def spec_of(tensor: torch.Tensor, grad: bool = False) -> ArgSpec:
    """With `grad`: whether autograd records the tensor (it requires grad, under grad mode)."""
    recorded = grad and tensor.requires_grad and torch.is_grad_enabled()
    return ArgSpec(tuple(tensor.shape), tensor.dtype, tensor.device, recorded)


def arg_spec(arg: Any, grad: bool = False) -> ArgSpec | StaticArg:
    """A tensor's `ArgSpec`, or the `StaticArg` of a value the program is specialized for."""
    if isinstance(arg, torch.Tensor):
        return spec_of(arg, grad)
    return StaticArg(arg, type(arg), _sign(arg))


def _sign(value: Any) -> float:
    return math.copysign(1.0, value) if type(value) is float else 1.0


def is_static(arg: Any) -> bool:
    """Whether `arg` is an argument the program is specialized for (None, a bool, int, float or str)."""
    return type(arg) in STATIC_TYPES


def check_keywords(function: str, names: Sequence[str], positional: int, kwargs: Mapping[str, Any]) -> None:
    """A CallError for an argument passed by a name the function lacks, or by name and by position."""
    for name in kwargs:
        if name not in names:
            raise CallError(f"<call>: error: {function} has no argument '{name}' (its arguments: {', '.join(names)})")
        if names.index(name) < positional:
            raise CallError(f"<call>: error: {function} got argument '{name}' twice (by position and by name)")


def check_positional_count(function: str, names: Sequence[str], keyword_only: int, given: int) -> None:
    """
    A CallError for more arguments by position than the function's positional parameters, the
    last `keyword_only` of `names` being keyword-only (`forward(x, *, mask=None)`): eager raises
    a TypeError for `f(x, m)`, where the compiled function would take `m` for `mask`.
    """
    count = len(names) - keyword_only
    if keyword_only and given > count:
        rest = ", ".join(repr(n) for n in names[count:])
        raise CallError(
            f"<call>: error: {function} takes {count} positional argument{'s' * (count != 1)} "
            f"({', '.join(names[:count])}), got {given}: {rest} {'is' if keyword_only == 1 else 'are'} keyword-only "
            "(pass by name)"
        )


def fast_key(args: Sequence[Any]) -> tuple[Any, ...] | None:
    """
    Everything `CallSignature.check` and the specialization's key read from a call, as one tuple
    compared without building an `ArgSpec` (the grad mode too, which the check reads); None when
    an argument is neither a tensor nor a static value (the full check reports it).
    """
    if all(isinstance(a, torch.Tensor) for a in args):
        return (torch.is_grad_enabled(), *[(a.shape, a.dtype, a.device, a.requires_grad) for a in args])
    if not all(isinstance(a, torch.Tensor) or is_static(a) for a in args):
        return None
    return (
        torch.is_grad_enabled(),
        *[
            (a.shape, a.dtype, a.device, a.requires_grad) if isinstance(a, torch.Tensor) else (type(a), a, _sign(a))
            for a in args
        ],
    )


def _axes(layout: str, rank: int) -> tuple[AxisLayout, ...] | None:
    try:
        return parse_layout(layout, rank, "")
    except LayoutError:
        return None  # the importer reports a layout that does not fit


def rows_sharded(layout: str | None, rank: int) -> bool:
    """Whether a user tensor of this layout is a shard of its rows on a mesh (axis 0 `didx`)."""
    axes = None if layout is None or rank == 0 else _axes(layout, rank)
    return axes is not None and axes[0].kind == DIDX


def replicated(layout: str | None, rank: int) -> bool:
    """Whether a user tensor of this layout is whole on every rank of a mesh (no `didx` axis)."""
    axes = None if layout is None else _axes(layout, rank)
    return layout is None or (axes is not None and not any(a.kind == DIDX for a in axes))


@dataclass
class CallSignature:
    """The user's side of a compiled function: argument names, layouts, the mesh size."""

    name: str
    """`<fn>`, as the compiled function's errors name it."""
    arg_names: list[str]
    layouts: list[str | None]
    devices: int = 1
    """D: the mesh's size (1 without one); a rows-sharded argument's logical rows are D times its own."""
    training: bool = False
    """Whether the function has a backward: its arguments may require grad."""
    ranks: tuple[int, ...] = ()
    """The mesh's ranks, which call the function with the same signature (frontend/rank_agreement.py)."""
    defaults: dict[str, Any] = field(default_factory=dict)
    """The arguments' defaults that are static values (`attention_mask=None`): a call may leave them out."""
    tensor_defaults: dict[str, Any] = field(default_factory=dict)
    """The parameters whose default is a tensor (`def f(x, bias=torch.zeros(8))`): one of `arg_names`
    (the example gave it) takes its default where a call leaves it out, as eager does; one that is
    not (the program reads the default as the function's own tensor) cannot be passed."""
    keyword_only: int = 0
    """How many of the last `arg_names` are keyword-only (`forward(x, *, mask=None)`): a call passes them by name."""

    def logical_shape(self, k: int, local: tuple[int, ...]) -> tuple[int, ...]:
        if self.devices > 1 and local and rows_sharded(self.layouts[k], len(local)):
            return (local[0] * self.devices, *local[1:])
        return local

    def local_shape(self, k: int, logical: tuple[int, ...]) -> tuple[int, ...]:
        if self.devices > 1 and logical and rows_sharded(self.layouts[k], len(logical)):
            return (logical[0] // self.devices, *logical[1:])
        return logical

    def describe(self, args: Sequence[Any]) -> str:
        """`x: float32[4, 16], y: float32[4, 8], mask: None` (on a mesh, the local shapes the call passed)."""
        return ", ".join(f"{n}: {arg_spec(a)}" for n, a in zip(self.arg_names, args))

    def value_checks(self, args: Sequence[Any], example: Key) -> list[ValueCheck]:
        """
        The arguments whose values the ranks compare with their signatures: the replicated tensors
        (every rank must pass the same values) and the rows-sharded ones of the example's global
        shape (the same values on every rank: the whole tensor passed for this rank's shard).
        """
        if self.devices < 2:
            return []
        checks = []
        for k, (name, arg, want) in enumerate(zip(self.arg_names, args, example)):
            if not isinstance(arg, torch.Tensor):
                continue
            shape = tuple(arg.shape)
            if replicated(self.layouts[k], len(shape)):  # also a tensor where the example had None
                checks.append(ValueCheck(name, arg))
            elif isinstance(want, ArgSpec) and shape != want.shape and shape == self.logical_shape(k, want.shape):
                checks.append(ValueCheck(name, arg, self.shard_hint(k, name, want.shape)))
        return checks

    def shard_hint(self, k: int, name: str, local: tuple[int, ...]) -> str:
        """How to cut this rank's shard of argument `k` from the global tensor, for its layout."""
        layout = self.layouts[k]
        assert layout is not None
        chunks = parse_layout(layout, len(local), name)[0].chunks
        devices = self.devices
        index = "rank" if self.ranks == tuple(range(devices)) else "p"
        if chunks <= 1:
            cut, rule = f"{name}.chunk({devices})[{index}]", f"block {index} of its rows"
        else:
            rest = "".join(f", {n}" for n in local[1:])
            cut = f"{name}.view({chunks}, {devices}, -1{rest})[:, {index}].flatten(0, 1)"
            rule = f"block {index} of each of its {chunks} chunks of rows"
        where = ", p this rank's position in the mesh" * (index == "p")
        return f"pass this rank's shard {list(local)}, {cut} (layout {layout!r}: {rule}{where})"

    def positional(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """
        The call's arguments in order: those passed by keyword go to the place their name has in
        the function's parameters (`compiled(x, mask=m)`), and those left out take their defaults
        where these are static values (`attention_mask=None`); an unknown, repeated or missing name
        is a CallError, and so is a call inside a `torch.func` transform.
        """
        if torch._C._are_functorch_transforms_active():
            # The programs write their results in place (`out=`), which vmap cannot batch, and
            # AOT autograd's runtime cannot run inside grad / jacrev: a torch traceback otherwise.
            raise CallError(
                f"<call>: error: {self.name} is called inside a torch.func transform (vmap, grad, jacrev, ...), "
                "which a compiled function does not run under: call it per sample (a loop), or transform "
                "the eager function"
            )
        names = self.arg_names
        check_positional_count(self.name, names, self.keyword_only, len(args))
        defaults = {**self.defaults, **self.tensor_defaults} if self.tensor_defaults else self.defaults
        if not kwargs and (len(args) >= len(names) or names[len(args)] not in defaults):
            if len(args) > len(names):
                self._refuse_tensor_default(
                    [n for n in self.tensor_defaults if n not in names][: len(args) - len(names)]
                )
            return tuple(args)
        self._refuse_tensor_default([n for n in kwargs if n in self.tensor_defaults and n not in names])
        check_keywords(self.name, names, len(args), kwargs)
        rest = names[len(args) :]
        if missing := [n for n in rest if n not in kwargs and n not in defaults]:
            plural = "s" * (len(missing) > 1)
            raise CallError(f"<call>: error: {self.name} is missing argument{plural} {', '.join(missing)}")
        return (*args, *(kwargs[n] if n in kwargs else defaults[n] for n in rest))

    def _refuse_tensor_default(self, passed: Sequence[str]) -> None:
        """A CallError for a call that passes a parameter whose default tensor the program reads as its own."""
        if passed:
            name = passed[0]
            raise CallError(
                f"<call>: error: {self.name}: argument '{name}' was compiled at its default tensor, which the "
                f"program reads as the function's own (the example arguments left it out), so a call cannot "
                f"pass it: give it in example_args (hir.compile(fn, (..., {name}))) to pass it, or leave it out"
            )

    def check(self, args: Sequence[Any], example: Key) -> Key:
        """The call's key; a CallError for a call no specialization can take."""
        names = ", ".join(self.arg_names)
        if len(args) != len(example):
            kind = "tensor" if all(isinstance(e, ArgSpec) for e in example) else "argument"
            raise CallError(
                f"<call>: error: {self.name} takes {len(example)} {kind}{'s' * (len(example) != 1)} ({names}), "
                f"got {len(args)}"
            )
        for name, arg in zip(self.arg_names, args):
            if not isinstance(arg, torch.Tensor) and not is_static(arg):
                raise CallError(
                    f"<call>: error: {self.name}: argument '{name}' is of type {type(arg).__name__}, not a tensor "
                    "(nor None, a bool, int, float or str, which the program is specialized for)"
                )
        tensors = [(n, a) for n, a in zip(self.arg_names, args) if isinstance(a, torch.Tensor)]
        devices = {a.device for _, a in tensors}
        if len(devices) > 1:
            where = ", ".join(f"'{n}' on {a.device}" for n, a in tensors)
            raise CallError(f"<call>: error: {self.name}: the arguments are on different devices ({where})")
        for name, arg, want in zip(self.arg_names, args, example):
            if not isinstance(arg, torch.Tensor):
                continue
            if isinstance(want, ArgSpec) and arg.dim() != len(want.shape):
                raise CallError(
                    f"<call>: error: {self.name}: argument '{name}' has shape {list(arg.shape)} ({arg.dim()}-D), "
                    f"but {self.name} was compiled for {len(want.shape)}-D tensors like {list(want.shape)}: its "
                    "layouts and program are per axis (compile it again for another rank)"
                )
            if arg.dtype not in _ELEMENT_TYPES:
                supported = ", ".join(str(d).removeprefix("torch.") for d in _ELEMENT_TYPES)
                raise CallError(
                    f"<call>: error: {self.name}: argument '{name}' ({spec_of(arg)}) has a dtype the compiler "
                    f"does not support (supported: {supported})"
                )
            if not self.training and torch.is_grad_enabled() and arg.requires_grad:
                raise CallError(
                    f"<call>: error: {self.name}: argument '{name}' ({spec_of(arg)}) requires grad, and this "
                    "compiled function has no backward: compile with training=True, or call it under torch.no_grad()"
                )
        return tuple(arg_spec(a, self.training) for a in args)

    def in_users_terms(self, err: FrontendError, args: Sequence[Any], example: Key) -> CallError:
        """A specialization's import or lowering error, with the call's arguments by name."""
        shapes = []
        for k, (name, arg) in enumerate(zip(self.arg_names, args)):
            if not isinstance(arg, torch.Tensor):
                shapes.append(f"{name}: {arg_spec(arg)}")
                continue
            logical = self.logical_shape(k, tuple(arg.shape))
            also = f", logical {list(logical)}" if logical != tuple(arg.shape) else ""
            shapes.append(f"{name}: {spec_of(arg)}{also}")

        def argument(match: re.Match[str]) -> str:
            k = int(match.group(1))
            return f"argument '{self.arg_names[k]}'" if k < len(self.arg_names) else match.group(0)

        text = re.sub(r"input #(\d+)(?: \([^)]*\))?", argument, str(err))
        other = [
            f"'{n}' is {a.dtype}"
            for n, a, e in zip(self.arg_names, args, example)
            if isinstance(a, torch.Tensor) and isinstance(e, ArgSpec) and a.dtype != e.dtype
        ]
        if other:
            compiled_for = ", ".join(f"{n}: {e}" for n, e in zip(self.arg_names, example))
            text += f" ({' and '.join(other)}; {self.name} was compiled for {compiled_for})"
        error = CallError(f"<call>: error: {self.name} cannot be specialized for ({', '.join(shapes)}): {text}")
        return also_users_exception(error, getattr(err, "users_exception", None))  # type: ignore[return-value]


Build = Callable[[Sequence[torch.Tensor]], Any]
"""Imports, lowers and compiles a specialization for example tensors (logical shapes on a mesh)."""


def _program(specialization: Any) -> str:
    """The digest of a specialization's imported program(s): an inference function's, a training step's two."""
    parts = [getattr(specialization, "fusion_text", None)]
    if parts[0] is None:
        parts = [getattr(getattr(specialization, n, None), "fusion_text", "") for n in ("forward", "backward")]
    return program_digest("\n".join(p or "" for p in parts))


def replicated_state(specialization: Any) -> list[ValueCheck]:
    """The module's tensors the specialization reads whole on every rank, where it says (`CompiledFunction`)."""
    state = getattr(specialization, "replicated_state", None)
    return list(state()) if callable(state) else []


class Specializations:
    """
    The compiled function's specializations by call signature. The one compiled from the example
    arguments is bound to the device of its first call; a call on another device, or with other
    shapes or dtypes, compiles a new one (from zero-filled tensors of the call's logical shapes)
    at that call.
    """

    def __init__(
        self,
        signature: CallSignature,
        example: Key,
        build: Build,
        limit: int,
        context: Callable[[], str] | None = None,
        agreement: RankAgreement | None = None,
    ):
        if limit < 1:
            raise FrontendError(f"<compile>: error: max_specializations must be >= 1, got {limit}")
        self.signature = signature
        self.example = example
        self.build = build
        self.limit = limit
        self.cache: OrderedDict[Key, Any] = OrderedDict()
        self._bound = False
        self._last: tuple[tuple[Any, ...], Any] | None = None
        """The last call's `fast_key` and the specialization it ran: a call like the one before
        skips the checks and the key's hashing (most calls; microseconds before the first kernel)."""
        self.dropped = 0
        """How many specializations were dropped for the cap (a signature that comes back compiles again)."""
        self.agreement = RankAgreement(signature, context) if agreement is None else agreement
        """`context`: what else the ranks must agree on at a new signature (a training step's frozen parameters).
        `agreement`: one shared by caches of the same function (a training step's, one per set of frozen
        parameters): the ranks' checks are numbered in call order, so a rank whose call lands in another
        cache than its peers' still compares with theirs, and the next check is the same on every rank."""
        self.every_call = check_every_call() and len(signature.ranks) > 1
        """`HIR_CHECK_REPLICAS=1` at compile time: every call compares with the other ranks (`_agree`)."""

    def lookup(self, first: Any, args: Sequence[Any], key: tuple[Any, ...] | None = None) -> Any:
        """The specialization for this call: `first` (the example's), a cached one, or a new one
        (`key`: the arguments' `fast_key`, where the caller has it)."""
        fast = fast_key(args) if key is None else key
        if fast is not None and self._last is not None and self._last[0] == fast:
            return self._last[1]
        specialization = self._lookup(first, args)
        if fast is not None and not self.every_call:  # every call checked: no shortcut past `_lookup`
            self._last = (fast, specialization)
        return specialization

    def _lookup(self, first: Any, args: Sequence[Any]) -> Any:
        key = self.signature.check(args, self.example)
        if first is not None and not self._bound and self._matches_example(key):
            self._agree(key, args, first)
            self._bound = True
            self.cache[key] = first  # bound to the device of its first call
            self._trim()
            return first
        if key in self.cache:
            if self.every_call:
                self._agree(key, args, self.cache[key])
            self.cache.move_to_end(key)
            return self.cache[key]
        return self._build_new(key, args)

    def _build_new(self, key: Key, args: Sequence[Any]) -> Any:
        """A new signature's specialization, checked with the ranks before and after its build, and cached."""
        self._agree(key, args)
        try:
            specialization = self.build(self.examples(key))
        except FrontendError as err:
            error = self.signature.in_users_terms(err, args, self.example)
            self._agree_on_program(key, None, str(error).splitlines()[0])  # the peers that built it raise too
            raise error from None
        self._agree_on_program(key, specialization)
        self.cache[key] = specialization
        self._trim()
        return specialization

    def build_first(self, args: Sequence[Any]) -> Any:
        """
        This cache's first specialization, built for this call (a new train/eval mode's function,
        compiled.TrainEvalModes): checked with the ranks of the mesh as any new signature is, before
        and after the build, so that a rank whose mode changed meets its peers' checks of the same
        call (with `agreement` shared by the modes' caches), and bound as the example's.
        """
        specialization = self._build_new(self.signature.check(args, self.example), args)
        self._bound = True
        return specialization

    def examples(self, key: Key) -> list[Any]:
        """
        Zero-filled tensors of a signature's logical shapes, dtypes and device, and its static
        values (what `build` compiles from).
        """
        examples: list[Any] = []
        for k, spec in enumerate(key):
            if isinstance(spec, StaticArg):
                examples.append(spec.value)
                continue
            example = torch.zeros(self.signature.logical_shape(k, spec.shape), dtype=spec.dtype, device=spec.device)
            examples.append(example.requires_grad_(spec.requires_grad))
        return examples

    def _agree(self, key: Key, args: Sequence[Any], specialization: Any = None) -> None:
        """
        A new signature on this rank (or any call, with `every_call`): a CallError on every rank of
        the mesh unless it is every rank's and the checked arguments' values are as they must be;
        with the `specialization` built, also its program and replicated state (`_agree_on_program`).
        """
        checks = self.signature.value_checks(args, self.example)
        program = None
        if specialization is not None and len(self.signature.ranks) > 1:
            checks += replicated_state(specialization)
            program = _program(specialization)
        if (error := self.agreement.disagreement(key, checks, self.every_call, program)) is not None:
            raise CallError(error)

    def _agree_on_program(self, key: Key, specialization: Any, failure: str | None = None) -> None:
        """
        After a new signature's build: a CallError on every rank of the mesh unless every rank traced
        the same program (a forward that branches on a per-rank Python value does not) and holds the
        same values of the state the program reads whole; `failure`: this rank's build failed (its
        error's first line), which its peers raise too, rather than wait for it.
        """
        if len(self.signature.ranks) < 2:
            return
        if failure is not None:
            checks, program = [], FAILED + failure.replace("\x1f", " ")
        else:
            checks, program = replicated_state(specialization), _program(specialization)
        if (error := self.agreement.disagreement(key, checks, self.every_call, program)) is not None:
            raise CallError(error)

    def _trim(self) -> None:
        if len(self.cache) > self.limit:
            _, dropped = self.cache.popitem(last=False)
            if self._last is not None and self._last[1] is dropped:
                self._last = None
            self.dropped += 1
            if self.dropped == 1:
                warnings.warn(
                    f"{self.signature.name} was called with more than {self.limit} input signatures (shapes, dtypes, "
                    "devices): the least recently used specialization is dropped and compiled again if it comes "
                    "back (hir.compile's max_specializations raises the cap)",
                    SpecializationWarning,
                    stacklevel=user_stacklevel(),
                )

    def _matches_example(self, key: Key) -> bool:
        def same(a: ArgSpec | StaticArg, b: ArgSpec | StaticArg) -> bool:
            if isinstance(a, StaticArg) or isinstance(b, StaticArg):
                return a == b
            return a.shape == b.shape and a.dtype == b.dtype

        return all(same(a, b) for a, b in zip(key, self.example))

    @property
    def keys(self) -> list[Key]:
        """The cached signatures, least recently used first."""
        return list(self.cache)
