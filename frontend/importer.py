"""
`import_torch`: captures a function or nn.Module with torch.export and builds the fusion-level
module of its graph, one ATen node at a time through `ATEN_TABLE`.

@main's arguments are torch.export's inputs, in its order: the module's parameters and buffers
(and tensor constants it lifted) and the user's tensor arguments. `Signature` records where each
comes from, so that `hir.compile` can pass them.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import operator
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import ConstantArgument, InputKind, OutputKind
from torch.fx import Node
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from hir.frontend.aten_complex import COMPLEX_TABLE, is_complex_node, real_dtype
from hir.frontend.aten_table import ATEN_TABLE, FFT_OPS, IGNORED, TRAINING_OPS_TABLE
from hir.frontend.autocast import autocast_state, exported_in
from hir.frontend.decompositions import decompose
from hir.frontend.emitter import Emitter
from hir.frontend.errors import (
    GENERATOR_REFUSAL,
    FrontendError,
    SourceLine,
    capture_error,
    located_error,
    unregistered_output,
    user_source_line,
)
from hir.frontend.function_state import global_names
from hir.frontend.layouts import (
    LayoutError,
    check_mesh,
    check_param_layouts,
    parse_layout,
    serial_layout,
    single_device_type,
    tied_param_layouts,
)
from hir.frontend.module_state import global_hooks_on_each_module, recorded_attributes
from hir.frontend.running_stats import cumulative_batch_norms
from hir.frontend.specialize import is_static
from hir.frontend.types import element_type
from hir.frontend.unchecked_losses import UncheckedLosses

Layouts = Sequence[str | None] | None


@dataclass
class InputSource:
    """Where an argument of @main comes from: a user argument, or a parameter/buffer/tensor constant."""

    kind: str
    """"user" (index) or "state" (name, tensor)."""
    index: int = 0
    name: str = ""
    tensor: torch.Tensor | None = None
    layout: str | None = None


@dataclass(frozen=True)
class StateUpdate:
    """A buffer of the module (`name`) or an argument of the call (`index`) the function updates in place."""

    kind: str
    """"buffer" or "input"."""
    name: str
    index: int = 0


@dataclass
class Signature:
    inputs: list[InputSource] = field(default_factory=list)
    num_user_inputs: int = 0
    num_outputs: int = 0
    out_layouts: list[str | None] = field(default_factory=list)
    out_spec: Any = None
    """torch's pytree spec of what the function returns (a tensor, a tuple, a dict, nested): `structured`."""
    arg_names: list[str] = field(default_factory=list)
    """The names of the user's arguments, in order, static ones (None, numbers) included."""
    none_outputs: tuple[int, ...] = ()
    """Positions among the returned leaves that are None (a model's `past_key_values=None`) or
    another Python constant of this specialization (`x.shape[0]`, a flag): no program result;
    `structured` puts the value back."""
    constant_outputs: tuple[Any, ...] = ()
    """The values at `none_outputs`, in their order."""
    updates: list[StateUpdate] = field(default_factory=list)
    """The buffers and arguments the function updates in place, in order: the program returns their
    new values after the user's outputs, and each call writes them back (`CompiledFunction`)."""
    output_views: tuple[OutputView, ...] = ()
    """The outputs that are views of an argument or of another output (`x.view(-1)`, `(y, y.t())`):
    a call hands them out as views of that tensor, as eager does, not as copies."""

    def structured(self, results: Sequence[Any]) -> Any:
        """The program's results (flat, in order) in the structure the function returns: `(h,)` stays a tuple."""
        if self.none_outputs:
            leaves = list(results)
            values = self.constant_outputs or (None,) * len(self.none_outputs)
            for k, value in zip(self.none_outputs, values):
                leaves.insert(k, value)
            results = leaves
        if self.out_spec is None:
            return results[0] if len(results) == 1 else tuple(results)
        return torch.utils._pytree.tree_unflatten(list(results), self.out_spec)


_CONSTANT_OUTPUTS = (bool, int, float, str)
"""Python values a function may return beside its tensors (each specialization's own)."""

aten = torch.ops.aten
_VIEW_OPS = {
    aten.view.default, aten.permute.default, aten.t.default, aten.transpose.int, aten.slice.Tensor,
    aten.select.int, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
    aten.expand.default, aten.alias.default, aten.diagonal.default, aten.as_strided.default,
}  # fmt: skip
"""ATen's views whose result shares its operand's memory in eager (not `_unsafe_view`, a reshape's copy)."""


@dataclass(frozen=True)
class OutputView:
    """Output `index` (among the program's results) as the views `chain` of argument or output `base`."""

    index: int
    base: tuple[str, int]
    """('input', the user's argument's position) or ('output', another result's index)."""
    chain: tuple[tuple[Any, tuple[Any, ...]], ...]
    """Each view: the ATen op and its arguments after the tensor."""

    def of(self, args: Sequence[Any], results: Sequence[Any]) -> Any:
        """The view of this call's tensor; None where it is not there (a static argument)."""
        kind, position = self.base
        tensor = args[position] if kind == "input" else results[position]
        if not isinstance(tensor, torch.Tensor) or not isinstance(results[self.index], torch.Tensor):
            return None
        if tensor.device != results[self.index].device:
            return None
        for op, rest in self.chain:
            tensor = op(tensor, *rest)
        return tensor


def output_views(
    outputs: Sequence[Node], user_positions: Mapping[str, int], updated_inputs: Mapping[Node, int] | None = None
) -> tuple[OutputView, ...]:
    """
    The outputs that are chains of views of a user argument or of another output (`Signature.output_views`),
    and those that are (views of) the new value of an argument the function updates in place
    (`updated_inputs`: `out.copy_(y); return out`), which eager returns as that argument.
    """
    updated_inputs = updated_inputs or {}
    index = {node: k for k, node in enumerate(outputs)}
    found = []
    for k, node in enumerate(outputs):
        chain = []
        while node not in updated_inputs and node.op == "call_function" and node.target in _VIEW_OPS:
            if node.kwargs:
                break
            chain.append((node.target, tuple(node.args[1:])))
            node = node.args[0]
            if node in index:
                break
        if (not chain and node not in updated_inputs) or any(isinstance(a, Node) for _, rest in chain for a in rest):
            continue
        if node in updated_inputs:  # the argument itself, written back before the results are handed out
            base = ("input", updated_inputs[node])
        elif node.op == "placeholder" and node.name in user_positions:
            base = ("input", user_positions[node.name])
        elif index.get(node, k) != k:
            base = ("output", index[node])
        else:
            continue
        found.append(OutputView(k, base, tuple(reversed(chain))))
    return tuple(view for view in found if view.base[0] == "input" or view.base[1] not in {v.index for v in found})


@dataclass
class ImportedProgram:
    module: ModuleOp
    signature: Signature
    mode: Any
    """The layout mode (single device or a mesh) that typed the arguments; it also shards them."""
    origins: dict[Operation, SourceLine] = field(default_factory=dict)
    """The user's line each op of `module` was imported from (where torch recorded one)."""
    exported: ExportedProgram | None = None
    """The captured program it was imported from (imported again with other layouts without a capture)."""


def _as_module(fn: Callable[..., Any]) -> torch.nn.Module:
    """
    A plain function as a module for torch.export. The export records only the stack frames of
    `forward` methods and of registered anchors, so the function is registered as one: its lines
    are then what errors name. A torch without anchors (before 2.13) keeps frames by name only:
    there the module's forward is the function's code renamed `forward`.
    """
    if not inspect.isfunction(fn):
        return _Wrapper(fn)  # a builtin such as torch.relu: no lines of the user's inside
    register = getattr(torch.fx.proxy, "_register_stack_trace_anchor", None)
    if register is not None:
        register(fn)
        forward = fn
    else:
        forward = types.FunctionType(
            fn.__code__.replace(co_name="forward"), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
        )
        forward.__kwdefaults__ = fn.__kwdefaults__
    return type(fn.__name__, (torch.nn.Module,), {"forward": staticmethod(forward)})()


def capturing_module(fn: Callable[..., Any] | torch.nn.Module) -> Callable[..., Any] | torch.nn.Module:
    """
    A plain function that reads modules or tensors it does not take as arguments (a training
    step's `loss(model(x), y)` with a global `model`, a closure's mask): as a module that holds them
    under their names (`model.weight`), so that their parameters and buffers are read at every
    call, and trained, as a module's are (torch.export lifts them as the module's; a training
    trace takes them as inputs). The function itself, where it reads none.
    """
    if inspect.ismethod(fn) and inspect.isfunction(fn.__func__) and not isinstance(fn.__self__, type):
        return _bound_method_module(fn)
    if _callable_object(fn):  # `obj(x)` of a class of the user's with `__call__`: its bound `__call__`
        return _bound_method_module(types.MethodType(type(fn).__call__, fn))
    if not inspect.isfunction(fn):
        return fn
    found: dict[str, Any] = {}

    def note(name: str, value: Any) -> None:
        held = isinstance(value, torch.nn.Module | torch.Tensor)
        if held and name not in found and not hasattr(torch.nn.Module, name):
            found[name] = value

    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            note(name, cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    for name in global_names(code):
        note(name, fn.__globals__.get(name))
    parameters = list(inspect.signature(fn).parameters.values())
    for p in parameters:
        if p.default is not inspect.Parameter.empty:
            note(p.name, p.default)
    if not found:
        return fn
    module = _as_module(fn)
    module._hir_function = fn  # its globals and closure variables, read at every call (function_state.py)
    for name, value in found.items():
        if isinstance(value, torch.nn.Module):
            module.add_module(name, value)
        elif isinstance(value, torch.nn.Parameter):
            module.register_parameter(name, value)
        else:
            setattr(module, name, value)  # a plain attribute: read at every call (module_state.py)
    tensors = [name for name, value in found.items() if isinstance(value, torch.Tensor)]
    if tensors:  # the function reads them by name: it runs with the names bound to the module's (a trace's)

        def forward(*args: Any, **kwargs: Any) -> Any:
            return _rebound(fn, {name: getattr(module, name) for name in tensors})(*args, **kwargs)

        forward.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        module.forward = forward
    return module


def _bound_method_module(method: types.MethodType) -> torch.nn.Module:
    """
    A method of a module (`model.encode`, `model.forward`) as a module that holds the module under
    the name `self` and calls the method's function on it: the module's parameters and buffers are
    read at every call, and trained (`self.proj.weight`), as a module's are (a bound method
    captured alone had them lifted as constants of the trace: a replaced weight was not read).
    """
    owner, function = method.__self__, method.__func__
    register = getattr(torch.fx.proxy, "_register_stack_trace_anchor", None)
    if register is not None:
        register(function)

    def forward(*args: Any, **kwargs: Any) -> Any:
        return function(wrapper.self, *args, **kwargs)

    forward.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    wrapper = type(function.__name__, (torch.nn.Module,), {"forward": staticmethod(forward)})()
    if isinstance(owner, torch.nn.Module):
        wrapper.add_module("self", owner)
    else:  # an object of the user's class: a plain attribute, whose attributes are read at every call
        wrapper.self = owner
    return wrapper


def _callable_object(fn: Any) -> bool:
    """An instance of a class of the user's (not a module, a function or torch's) that defines `__call__`."""
    call = inspect.getattr_static(type(fn), "__call__", None)
    return (
        not isinstance(fn, torch.nn.Module | type | types.FunctionType | types.MethodType | functools.partial)
        and inspect.isfunction(call)
        and not type(fn).__module__.startswith("torch")
    )


def _rebound(fn: types.FunctionType, values: dict[str, Any]) -> types.FunctionType:
    """`fn` with the globals, closure cells and defaults named in `values` bound to those values."""
    code = fn.__code__
    closure = fn.__closure__
    if closure is not None:
        closure = tuple(
            types.CellType(values[name]) if name in values else cell for name, cell in zip(code.co_freevars, closure)
        )
    overridden = {name: value for name, value in values.items() if name in fn.__globals__}
    scope = {**fn.__globals__, **overridden} if overridden else fn.__globals__
    parameters = list(inspect.signature(fn).parameters.values())
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    defaults = fn.__defaults__
    if defaults is not None:
        named = positional[len(positional) - len(defaults) :]
        defaults = tuple(values.get(p.name, d) for p, d in zip(named, defaults))
    kwdefaults = {k: values.get(k, v) for k, v in (fn.__kwdefaults__ or {}).items()} or None
    rebound = types.FunctionType(code, scope, fn.__name__, defaults, closure)
    rebound.__kwdefaults__ = kwdefaults
    return rebound


class _Wrapper(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # keyword-only ones by name (a partial's `scale=`)
        return self.fn(*args, **kwargs)


def capture(fn: Callable[..., Any] | torch.nn.Module, example_args: Sequence[Any]) -> ExportedProgram:
    module = fn if isinstance(fn, torch.nn.Module) else _as_module(fn)
    check_example_args(example_args)
    check_example_count(fn, example_args)
    # an attribute the trace changed: an error after it
    with cumulative_batch_norms(module), recorded_attributes(module) as attributes:
        try:
            with (
                unchecked_distributions(),
                exported_in(module, autocast_state()),
                _fake_tensor_log_quiet(),
                global_hooks_on_each_module(module),
                _returned_dataclasses_registered(module),
            ):
                args, kwargs = _unaliased(split_call(fn, example_args), module)
                program = torch.export.export(module, args, kwargs or None, strict=False)
        except Exception as err:  # torch's message about the user's code; no hir frames to show
            returned = _unregistered_dataclass(fn, err)
            if returned is not None:
                raise FrontendError(f"{returned[1]}: error: {unregistered_output(returned[0])}") from None
            raise capture_error(err) from err
    _refuse_state_updates(program)
    decomposed = decompose(program)
    decomposed.hir_attributes = attributes  # type: ignore[attr-defined]  # what the trace read (AttributeWatch)
    return decomposed


def _unaliased(call: tuple[Any, Any], module: torch.nn.Module) -> tuple[Any, Any]:
    """
    The example arguments with each tensor whose memory an earlier one (or a parameter or buffer of
    the module) holds (`f(a, a)`, `f(x, model.weight)`) replaced by a copy: torch.export traces the
    two as one input, and the program would read the first at both at every later call (`f(a, b)`
    computed `f(a, a)`). Calls with aliased arguments run the same program (one that updates an
    argument another aliases is refused at the call).
    """
    state = [*module.parameters(), *module.buffers()]
    seen = {t.untyped_storage().data_ptr() for t in state if t.device.type != "meta"}

    def distinct(leaf: Any) -> Any:
        if not isinstance(leaf, torch.Tensor) or leaf.device.type == "meta":
            return leaf
        storage = leaf.untyped_storage().data_ptr()
        if storage in seen and leaf.untyped_storage().nbytes() > 0:
            return leaf.detach().clone().requires_grad_(leaf.requires_grad)
        seen.add(storage)
        return leaf

    return pytree.tree_map(distinct, call)


@contextmanager
def _returned_dataclasses_registered(module: torch.nn.Module) -> Iterator[None]:
    """
    While the trace runs: a dataclass the function returns (`return Output(logits=y, loss=l)`, a
    class of its own, also one defined inside a function) that is no pytree node yet is registered
    with `torch.utils._pytree.register_dataclass` as its forward returns it, so that torch.export
    takes it apart and the call returns it as eager does. One that cannot be registered (a field
    left out of `__init__`) is left to torch's refusal (`_unregistered_dataclass`).
    """

    def register(out: Any, depth: int = 0) -> None:
        if depth > 32:
            return
        if dataclasses.is_dataclass(out) and not isinstance(out, type):
            if type(out) not in pytree.SUPPORTED_NODES:
                try:
                    pytree.register_dataclass(type(out))
                except Exception:  # torch's refusal names it after the trace
                    return
            children: Any = [getattr(out, f.name, None) for f in dataclasses.fields(out)]
        elif isinstance(out, dict):
            children = list(out.values())
        elif isinstance(out, (list, tuple)):
            children = out
        else:
            return
        for child in children:
            register(child, depth + 1)

    handle = module.register_forward_hook(lambda _module, _args, out: register(out))
    try:
        yield
    finally:
        handle.remove()


def _unregistered_dataclass(fn: Callable[..., Any] | torch.nn.Module, err: Exception) -> tuple[str, str] | None:
    """
    (name, `file:line` of the function) when torch refused a returned dataclass that is no pytree
    node with only `unhashable type: 'Name'` (torch 2.11; newer torch names the output) and the
    function's module defines a dataclass of that name; None otherwise.
    """
    found = re.fullmatch(r"unhashable type: '(\w+)'", str(err).strip())
    if not isinstance(err, TypeError) or found is None:
        return None
    function = fn.forward if isinstance(fn, torch.nn.Module) else fn
    cls = getattr(sys.modules.get(getattr(function, "__module__", None) or ""), found.group(1), None)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)) or cls in pytree.SUPPORTED_NODES:
        return None
    try:
        where = f"{inspect.getsourcefile(function)}:{inspect.getsourcelines(function)[1]}"
    except (OSError, TypeError):
        where = "<capture>"
    return found.group(1), where


def check_example_args(example_args: Sequence[Any]) -> None:
    """Each example argument is a tensor, or a value the program is specialized for (None, a number, ...)."""
    if isinstance(example_args, torch.Tensor):  # iterating it would pass its rows as arguments
        raise FrontendError("<inputs>: error: example_args is a tensor, not a tuple of tensors: pass (x,)")
    for i, arg in enumerate(example_args):
        if not isinstance(arg, torch.Tensor) and not is_static(arg):
            raise FrontendError(
                f"<inputs>: error: example argument #{i} is a {type(arg).__name__}, not a tensor (nor None, a bool, "
                "int, float or str, which the program is specialized for)"
            )


@contextmanager
def _fake_tensor_log_quiet() -> Iterator[None]:
    """
    While torch.export traces: torch's fake tensors do not log the traceback of an op that fails
    on them (a call with a shape the code cannot take: "failed while attempting to run meta for
    aten.mm.default" and 20 lines of torch's frames on stderr). The error itself reaches the
    user as hir's located error, with torch's message.
    """
    log = logging.getLogger("torch._subclasses.fake_tensor")
    before = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(before)


@contextmanager
def unchecked_distributions() -> Iterator[None]:
    """
    While a trace runs: `torch.distributions` do not check their arguments' values (a Normal's
    `scale > 0`: `if not valid.all(): raise`), a branch on data that a program traced once for
    every value cannot take (PPO's `Normal(mu, std).log_prob(a)`). A distribution made with
    `validate_args=True` still checks, and is the trace's error at its line. Nor do torch's
    transformers inspect a mask's values (`_causal_masks_not_inspected`), nor the losses of
    frontend/unchecked_losses.py their arguments' (a Gaussian NLL's variance), and
    parametrizations are computed, not cached (`_parametrizations_uncached`).
    """
    from torch.distributions import Distribution

    before = Distribution._validate_args
    Distribution.set_default_validate_args(False)
    try:
        with _causal_masks_not_inspected(), UncheckedLosses(), _parametrizations_uncached():
            yield
    finally:
        Distribution.set_default_validate_args(before)


@contextmanager
def _parametrizations_uncached() -> Iterator[None]:
    """
    While a trace runs inside `torch.nn.utils.parametrize.cached()`: a parametrized weight is
    computed from its originals, not taken from (or put in) the cache. Cached, the trace read the
    region's eager value as a constant (a `<capture>:` error in training), or left its fake
    tensor in the cache, which the caller's eager calls in the region then read.
    """
    from torch.nn.utils import parametrize

    enabled = parametrize._cache_enabled
    parametrize._cache_enabled = 0
    try:
        yield
    finally:
        parametrize._cache_enabled = enabled


@contextmanager
def _causal_masks_not_inspected() -> Iterator[None]:
    """
    While a trace runs: `nn.TransformerEncoder` and `nn.TransformerDecoder` given a mask without
    `is_causal` do not compare the mask's values with a causal mask (`bool((mask == causal).all())`,
    a branch on data that a trace cannot take). That comparison only picks a hint: a layer given
    `is_causal=True` still applies its mask (or the same causal mask) and computes the same values,
    so the trace takes the hint as False, the mask as given.
    """
    from torch.nn.modules import transformer

    detect = getattr(transformer, "_detect_is_causal_mask", None)
    if detect is None:  # a torch without the detection
        yield
        return

    def hint(mask: torch.Tensor | None, is_causal: bool | None = None, size: int | None = None) -> bool:
        return is_causal is True

    transformer._detect_is_causal_mask = hint
    try:
        yield
    finally:
        transformer._detect_is_causal_mask = detect


_UPDATE = (
    "the program updates {what} in place; compiled programs write back the module's buffers and the "
    "arguments they update, not {kind}: return the new value instead"
)


_MAX_NORM = (
    " (nn.Embedding's max_norm rescales the rows it looks up, in its weight, at each call: rescale "
    "every row once before compiling, `weight.copy_(torch.renorm(weight, p, 0, max_norm))` under "
    "torch.no_grad(), and set max_norm to None; the looked-up rows are the same)"
)


def _refuse_state_updates(program: ExportedProgram) -> None:
    """
    An in-place op on a parameter or a lifted constant (or a view of one) is an error at its line:
    a compiled function writes back the buffers and arguments it updates (`StateUpdate`), not
    those. In-place ops on the program's own values are fine (the decompositions make them
    functional).
    """
    specs = {spec.arg.name: spec for spec in program.graph_signature.input_specs}
    for node in program.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or not schema.is_mutable or not node.args:
            continue
        base = node.args[0]
        while isinstance(base, Node) and base.op == "call_function" and base.args and _is_view(base.target):
            base = base.args[0]
        spec = specs.get(base.name) if isinstance(base, Node) and base.op == "placeholder" else None
        if spec is not None and spec.kind in (InputKind.PARAMETER, InputKind.CONSTANT_TENSOR):
            kind = "parameters" if spec.kind == InputKind.PARAMETER else "constants"
            what = f"{spec.kind.name.lower()} {spec.target or base.name!r}"
            message = _UPDATE.format(what=what, kind=kind)
            if node.target == torch.ops.aten.embedding_renorm_.default:
                message += _MAX_NORM
            raise located_error(node, message)


def _is_view(target: Any) -> bool:
    schema = getattr(target, "_schema", None)
    return schema is not None and bool(schema.arguments) and schema.arguments[0].alias_info is not None


def import_program(
    fn: Callable[..., Any] | torch.nn.Module,
    example_args: Sequence[Any],
    in_layouts: Layouts = None,
    out_layouts: Layouts = None,
    mesh: Sequence[int] | None = None,
    param_layouts: Mapping[str, str | None] | None = None,
    exported: ExportedProgram | None = None,
) -> ImportedProgram:
    """`fn` captured on `example_args` (or their capture `exported`) as a fusion-level program with these layouts."""
    check_param_layouts(param_layouts)
    program = capture(fn, example_args) if exported is None else exported
    mode = mode_for(mesh)
    user_layouts = _per_entry(in_layouts, len(example_args), "in_layouts")
    param_layouts = tied_param_layouts(
        fn, [s.target for s in program.graph_signature.input_specs if s.target], dict(param_layouts or {})
    )
    block = Block()
    emitter = Emitter(block)
    emitter.on_mesh = not isinstance(mode, SingleDevice)
    signature = Signature(num_user_inputs=len(example_args))
    env: dict[Node, SSAValue] = {}
    specs = {spec.arg.name: spec for spec in program.graph_signature.input_specs}
    user_names = _parameter_names(fn)
    user_index = 0
    user_positions: dict[str, int] = {}
    for node in program.graph.nodes:
        if node.op != "placeholder":
            continue
        spec = specs[node.name]
        value = node.meta["val"]
        if spec.kind == InputKind.USER_INPUT:
            name = user_names[user_index] if user_index < len(user_names) else node.name
            signature.arg_names.append(name)
            if isinstance(spec.arg, ConstantArgument):  # None, a number: torch.export specialized the program for it
                if user_layouts[user_index] is not None:
                    raise FrontendError(
                        f"<layouts>: error: argument '{name}' is {spec.arg.value!r}, not a tensor: its layout must "
                        "be None"
                    )
                user_index += 1
                continue
            source = InputSource("user", index=user_index, layout=user_layouts[user_index], name=name)
            user_positions[node.name] = user_index
            what = f"input #{user_index} ({node.name})"
            user_index += 1
        elif spec.kind == InputKind.TOKEN:  # threads ops with side effects (a linalg op's error check): no value
            continue
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            name = spec.target
            tensor = _state_tensor(program, name)
            source = InputSource("state", name=name, tensor=tensor.detach(), layout=param_layouts.pop(name, None))
            what = f"{spec.kind.name.lower()} {name!r}"
        elif any(user.kwargs.get("generator") is node for user in node.users):
            user = next(u for u in node.users if u.kwargs.get("generator") is node)  # the draw: the user's line
            raise located_error(user, GENERATOR_REFUSAL)
        else:
            raise located_error(next(iter(node.users), node), f"inputs of kind {spec.kind.name} are not supported")
        if not isinstance(value, torch.Tensor):
            raise located_error(node, f"{what} is not a tensor")
        shape, dtype = tuple(value.shape), value.dtype
        if dtype.is_complex:  # carried as its view_as_real pairs (frontend/aten_complex.py)
            if source.kind == "user":
                raise FrontendError(
                    f"<inputs>: error: argument '{source.name}' is a {dtype} tensor: pass torch.view_as_real of it"
                )
            source.tensor = torch.view_as_real(source.tensor)
            shape, dtype = (*shape, 2), real_dtype(dtype)
        try:
            t = mode.input_type(shape, element_type(dtype, node), source.layout, what, source)
        except LayoutError as err:
            raise FrontendError(f"<layouts>: error: {err}") from None
        arg = block.insert_arg(t, len(block.args))
        arg.name_hint = source.name.replace(".", "_") if source.kind == "user" else node.name
        env[node] = arg
        mode.bind_input(arg, source)
        signature.inputs.append(source)
    if param_layouts:
        known = ", ".join(s.name for s in signature.inputs if s.kind == "state") or "none"
        raise FrontendError(
            f"<layouts>: error: param_layouts names {sorted(param_layouts)}, which are not parameters or "
            f"buffers of the module (it has: {known})"
        )

    results: list[SSAValue] = []
    for node in program.graph.nodes:
        if node.op == "call_function":
            env[node] = _import_node(node, emitter, env, mode)
            if isinstance(mode, SingleDevice):
                _check_shape(node, env[node])
        elif node.op == "output":
            outputs, updated = _user_outputs(program, node)
            layouts = _per_entry(out_layouts, len(outputs), "out_layouts")
            names = _output_names(program.call_spec.out_spec, len(outputs))
            # A Python number, bool or str returned (`x.shape[0]`, an argument's flag) is a constant of
            # the specialization: shapes and such values are static, another one is another trace.
            none_outputs = tuple(k for k, out in enumerate(outputs) if out is None or type(out) in _CONSTANT_OUTPUTS)
            for k in none_outputs:
                if layouts[k] is not None:
                    raise FrontendError(
                        f"<layouts>: error: out_layouts gives {names[k]}, which is {outputs[k]!r}, a layout"
                    )
            kept = [(k, out, layout) for k, (out, layout) in enumerate(zip(outputs, layouts)) if k not in none_outputs]
            for k, out, layout in kept:
                if not isinstance(out, Node):
                    raise FrontendError(
                        f"<outputs>: error: {names[k]} is a Python {type(out).__name__} ({out!r}), not a tensor "
                        "computed by the program: return tensors (or None)"
                    )
                if out.meta["val"].dtype.is_complex:
                    raise located_error(
                        out, f"{names[k]} is a {out.meta['val'].dtype} tensor: return torch.view_as_real of it"
                    )
                emitter.where, emitter.name_hint = "<outputs>", None
                try:
                    results.append(mode.output(emitter, env[out], tuple(out.meta["val"].shape), layout, names[k]))
                except LayoutError as err:
                    raise FrontendError(f"<layouts>: error: {err}") from None
            signature.num_outputs = len(kept)
            signature.out_spec = program.call_spec.out_spec
            signature.out_layouts = [layout for _, _, layout in kept]
            signature.none_outputs = none_outputs
            signature.constant_outputs = tuple(outputs[k] for k in none_outputs)
            if isinstance(mode, SingleDevice):
                updated_inputs = {
                    out: user_positions[spec.target]
                    for out, spec in updated
                    if spec.kind == OutputKind.USER_INPUT_MUTATION and spec.target in user_positions
                }
                signature.output_views = output_views([out for _, out, _ in kept], user_positions, updated_inputs)
            for out, spec in updated:
                update = _state_update(spec, user_positions, signature.arg_names, mode, out)
                emitter.where, emitter.name_hint = "<outputs>", None
                shape = tuple(out.meta["val"].shape)
                results.append(mode.output(emitter, env[out], shape, None, f"the new value of {update.name!r}"))
                signature.updates.append(update)
        elif node.op not in ("placeholder", "get_attr"):
            raise located_error(node, f"graph nodes of kind {node.op!r} are not supported")

    with ImplicitBuilder(block):
        func.ReturnOp(*results)
    emitter.erase_unused()
    try:
        module = verified_module(block, results, "module")
    except FrontendError:
        _locate_unverified(block, emitter)
        raise
    return ImportedProgram(module, signature, mode, emitter.origins, program)


def _locate_unverified(block: Block, emitter: Emitter) -> None:
    """The first op of `block` that does not verify, as an error at the user's line and ATen op it was made for."""
    for op in block.ops:
        try:
            op.verify()
        except VerifyException as err:
            node = emitter.made_for.get(op)
            if node is not None:
                raise located_error(node, f"{_op_name(node.target)} cannot be imported: {err}") from None
            return


def _check_shape(node: Node, value: Any) -> None:
    """
    The imported value of `node` has the shape torch computed for it: a mapping that disagrees (an
    op whose decomposition differs between torch versions, say) is an error at the user's line,
    never a result of another shape. Values of a mesh program have their fusion form, not torch's.
    """
    val = node.meta.get("val")
    if not (isinstance(value, SSAValue) and isinstance(value.type, TensorType) and isinstance(val, torch.Tensor)):
        return
    want = tuple(val.shape)
    if val.dtype.is_complex or not all(isinstance(n, int) for n in want):
        return
    got = tuple(value.type.get_shape())
    if got != want:
        raise located_error(
            node,
            f"internal error: {node.target} was imported as a value of shape {list(got)} where torch computes "
            f"{list(want)}; please report it",
        )


def verified_module(block: Block, results: Sequence[SSAValue], what: str) -> ModuleOp:
    """`@main` of `block` (which returns `results`) in a module that verifies, else the error naming `what`."""
    function = func.FuncOp("main", ([a.type for a in block.args], [r.type for r in results]), Region(block))
    module = ModuleOp([function])
    try:
        module.verify()
    except VerifyException as err:
        raise FrontendError(f"<import>: error: the imported {what} does not verify: {err}") from None
    return module


def _import_node(node: Node, emitter: Emitter, env: dict[Node, SSAValue], mode: Any) -> SSAValue | None:
    source = user_source_line(node)
    emitter.where = str(source) if source else f"<{node.name}>"
    emitter.name_hint = node.name
    if node.target in IGNORED:
        return None
    if node.target is torch.ops.higher_order.with_effects:  # (token, op, *args): an op run for its side effect
        if node.args[1] in IGNORED:  # a check (a linalg op's `_linalg_check_errors`): the token alone
            return (None,)  # type: ignore[return-value]
        raise located_error(node, f"{_op_name(node.args[1])}, an op with side effects, is not supported")
    if node.target is operator.getitem:  # an entry of a multi-output op (split, topk, max.dim)
        values, index = node.args
        return env[values][index] if isinstance(env.get(values), tuple) else None
    builder = mode.overrides.get(node.target) or ATEN_TABLE.get(node.target) or TRAINING_OPS_TABLE.get(node.target)
    if node.target in FFT_OPS:  # complex results too: named as what they are, not as complex arithmetic
        raise located_error(node, f"{_op_name(node.target)}: Fourier transforms (torch.fft) are not supported")
    if is_complex_node(node):
        builder = COMPLEX_TABLE.get(node.target) if isinstance(mode, SingleDevice) else None
        if builder is None:
            where = "" if isinstance(mode, SingleDevice) else " on a mesh"
            raise located_error(node, f"{_op_name(node.target)} on complex tensors is not supported{where}")
    if builder is None:
        raise located_error(
            node, f"{_op_name(node.target)} is not supported by the fusion dialect (no entry in the ATen table)"
        )

    def value(arg: Any) -> Any:
        if isinstance(arg, Node):
            if arg not in env:
                raise located_error(node, f"{_op_name(node.target)} uses {arg.name}, which is not a tensor value")
            return env[arg]
        if isinstance(arg, list | tuple):
            return type(arg)(value(a) for a in arg)
        return arg

    before = emitter.block.last_op
    try:
        result = builder(emitter, node, *value(node.args), **{k: value(v) for k, v in node.kwargs.items()})
        # The ops this node made: a run-time failure in one names the user's line, one that does not
        # verify the node's ATen op too.
        op = before.next_op if before is not None else emitter.block.first_op
        while op is not None:
            emitter.made_for[op] = node
            if source is not None:
                emitter.origins[op] = source
            op = op.next_op
        return result
    except FrontendError as err:
        if source and source.code and str(err).startswith(str(source)) and "\n" not in str(err):
            raise FrontendError(f"{err}\n    {source.code}") from None
        raise
    except (VerifyException, TypeError) as err:
        raise located_error(node, f"{_op_name(node.target)} cannot be imported: {err}") from None


def _state_tensor(program: ExportedProgram, name: str) -> torch.Tensor:
    """A parameter or persistent buffer (the state dict), or a non-persistent buffer or lifted constant."""
    if name in program.state_dict:
        return program.state_dict[name]
    if name in program.constants and isinstance(program.constants[name], torch.Tensor):
        return program.constants[name]
    raise FrontendError(f"<inputs>: error: the module's state {name!r} is not a tensor torch.export recorded")


def _output_names(spec: Any, count: int) -> list[str]:
    """How the user indexes each returned leaf: `output ['logits']`, `output [1]`, `output #0` (a bare tensor)."""
    if spec is None:
        return [f"output #{k}" for k in range(count)]
    numbered = torch.utils._pytree.tree_unflatten(list(range(count)), spec)
    paths = [path for path, _ in torch.utils._pytree.tree_flatten_with_path(numbered)[0]]
    return [f"output {torch.utils._pytree.keystr(path)}" if path else f"output #{k}" for k, path in enumerate(paths)]


def _user_outputs(program: ExportedProgram, node: Node) -> tuple[list[Any], list[tuple[Node, Any]]]:
    """
    The user's outputs of the output node, and the in-place updates of buffers and inputs
    (`self.cache[:, :, pos] = k`, `x.add_(1)`), each with its output spec: torch.export's
    functional program returns the new values as extra outputs, which the compiled function
    writes back.
    """
    outputs = list(node.args[0])
    specs = program.graph_signature.output_specs
    kept, updated = [], []
    for out, spec in zip(outputs, specs):
        if spec.kind == OutputKind.USER_OUTPUT:
            kept.append(out)
        elif spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION) and isinstance(out, Node):
            updated.append((out, spec))
        elif spec.kind != OutputKind.TOKEN:
            parameter = spec.kind == OutputKind.PARAMETER_MUTATION
            what = f"{'parameter' if parameter else spec.kind.name.lower()} {spec.target!r}"
            kind = "parameters" if parameter else f"outputs of kind {spec.kind.name}"
            raise located_error(out if isinstance(out, Node) else None, _UPDATE.format(what=what, kind=kind))
    return kept, updated


def _state_update(
    spec: Any, user_positions: Mapping[str, int], arg_names: Sequence[str], mode: Any, out: Node
) -> StateUpdate:
    """What an update output writes back: a buffer, or the call's argument (by position)."""
    if not isinstance(mode, SingleDevice):  # a rank's new value is its shard: writing it back means gathering
        what = "buffer" if spec.kind == OutputKind.BUFFER_MUTATION else "input"
        raise located_error(
            out,
            f"the program updates {what} {spec.target!r} in place; on a mesh, compiled programs do not write "
            "back the buffers and arguments they update: return the new value instead",
        )
    if out.meta["val"].dtype.is_complex:
        raise located_error(out, f"the program updates {spec.target!r} in place, a complex tensor: not supported")
    if spec.kind == OutputKind.BUFFER_MUTATION:
        return StateUpdate("buffer", spec.target)
    index = user_positions[spec.target]
    return StateUpdate("input", arg_names[index] if index < len(arg_names) else spec.target, index)


def _parameter_names(fn: Callable[..., Any] | torch.nn.Module) -> list[str]:
    """The names of the function's (or forward's) parameters that take tensors, for readable IR."""
    return [p.name for p in _call_parameters(fn)]


def _call_parameters(fn: Callable[..., Any] | torch.nn.Module) -> list[inspect.Parameter]:
    """
    The parameters a compiled function takes in order: the positional ones, then the keyword-only
    ones (`forward(x, *, mask=None)`), which the compiled function takes at the places after them
    (by name as eager does, `compiled(x, mask=m)`); without keyword-only ones after a `*args`.
    """
    try:
        parameters = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in parameters if p.kind in kinds]
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return positional
    return positional + [p for p in parameters if p.kind == inspect.Parameter.KEYWORD_ONLY]


def check_example_count(fn: Callable[..., Any] | torch.nn.Module, example_args: Sequence[Any]) -> None:
    """
    An `<inputs>:` error for example arguments that do not fit the function's parameters (one
    without a default left out, more than it takes), in the user's terms: torch.export's own
    error is a TypeError located in Python's inspect.py.
    """
    try:
        signature = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn)
    except (TypeError, ValueError):
        return
    name = getattr(fn, "__name__", type(fn).__name__)
    given = f"{len(example_args)} value{'s' * (len(example_args) != 1)}"
    parameters = _call_parameters(fn)
    takes = ", ".join(p.name for p in parameters) or "no arguments"
    variadic = any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in signature.parameters.values())
    if not variadic and len(example_args) > len(parameters):
        raise FrontendError(
            f"<inputs>: error: example_args has {given}, but <{name}> takes {len(parameters)} ({takes})"
        )
    if missing := [p.name for p in parameters[len(example_args) :] if p.default is inspect.Parameter.empty]:
        plural = "s" * (len(missing) > 1)
        raise FrontendError(
            f"<inputs>: error: example_args has {given}, but <{name}> takes {takes}: give an "
            f"example for {', '.join(repr(m) for m in missing)}, which ha{'ve' if plural else 's'} no default"
        )


def split_call(fn: Callable[..., Any] | torch.nn.Module, args: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments in the compiled function's order as eager takes them: positional, and keyword-only by name."""
    keyword_only = [p.name for p in _call_parameters(fn) if p.kind == inspect.Parameter.KEYWORD_ONLY]
    count = len(_call_parameters(fn)) - len(keyword_only)
    if not keyword_only or len(args) <= count:
        return tuple(args), {}
    return tuple(args[:count]), dict(zip(keyword_only, args[count:], strict=False))


def keyword_only_count(fn: Callable[..., Any] | torch.nn.Module, names: Sequence[str] | None = None) -> int:
    """
    How many of the compiled function's parameters (`_call_parameters`) are keyword-only, of
    `names` alone where given (the program's arguments: those after a parameter left at its
    default tensor are not among them).
    """
    return sum(
        p.kind == inspect.Parameter.KEYWORD_ONLY and (names is None or p.name in names) for p in _call_parameters(fn)
    )


def static_defaults(fn: Callable[..., Any] | torch.nn.Module) -> dict[str, Any]:
    """The defaults of the function's (or forward's) parameters that are static values (None, numbers)."""
    return {
        p.name: p.default
        for p in _call_parameters(fn)
        if p.default is not inspect.Parameter.empty and is_static(p.default)
    }


def tensor_defaults(fn: Callable[..., Any] | torch.nn.Module) -> dict[str, torch.Tensor]:
    """The defaults of the function's (or forward's) parameters that are tensors (`bias=torch.zeros(8)`)."""
    return {p.name: p.default for p in _call_parameters(fn) if isinstance(p.default, torch.Tensor)}


def with_static_defaults(fn: Callable[..., Any] | torch.nn.Module, example_args: Sequence[Any]) -> list[Any]:
    """
    The example arguments, then the defaults of the parameters after them (positional, then
    keyword-only) as long as these are static values (Hugging Face's `labels=None`,
    `return_dict=True`, `forward(x, *, mask=None)`): the program is
    specialized for those too, and a call may pass others (a tensor for `labels`), each a
    specialization of its own.
    """
    args = list(example_args)
    for p in _call_parameters(fn)[len(args) :]:
        if p.default is inspect.Parameter.empty or not is_static(p.default):
            break
        args.append(p.default)
    return args


def value_name(name: str) -> str:
    """A parameter's or buffer's name (`blocks.0.weight`, `0.weight` of an nn.Sequential) as an SSA name hint:
    dots as underscores, and one that would start with a digit prefixed with `p_` (as torch.export's `p_0_weight`)."""
    hint = re.sub(r"[^A-Za-z0-9_$-]", "_", name)
    return f"p_{hint}" if not hint or hint[0].isdigit() else hint


def _op_name(target: Any) -> str:
    name = str(target)
    return (
        name if name.startswith("aten.") else f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', name)}"
    )


def _per_entry(layouts: Layouts, count: int, what: str) -> list[str | None]:
    if layouts is None:
        return [None] * count
    if isinstance(layouts, str):
        layouts = [layouts]
    layouts = list(layouts)
    if len(layouts) != count:
        raise FrontendError(f"<layouts>: error: {what} has {len(layouts)} entries, the program has {count}")
    return layouts


class SingleDevice:
    """Logical types are fusion types; layouts are their encodings."""

    overrides: dict = {}

    def input_type(
        self,
        shape: tuple[int, ...],
        element: Attribute,
        layout: str | None,
        what: str,
        source: InputSource | None = None,
    ) -> TensorType:
        parsed = parse_layout(layout, len(shape), what) if layout else serial_layout(len(shape))
        return single_device_type(shape, element, parsed, what)

    def output(self, e: Emitter, value: SSAValue, shape: tuple[int, ...], layout: str | None, what: str) -> SSAValue:
        if layout is None:
            return value
        assert isinstance(value.type, TensorType)
        return e.set_type(value, self.input_type(shape, value.type.element_type, layout, what))

    def bind_input(self, value: SSAValue, source: InputSource) -> None:
        pass

    def local_input(self, tensor: torch.Tensor, source: InputSource) -> torch.Tensor:
        return tensor

    def local_output(self, tensor: torch.Tensor, index: int) -> torch.Tensor:
        return tensor


def mode_for(mesh: Sequence[int] | None) -> Any:
    checked = check_mesh(mesh)
    if checked is None:
        return SingleDevice()
    from hir.frontend.sharded import MeshMode

    return MeshMode(checked)
