"""
`hir.compile(..., training=True)`: a callable with a backward, both lowered hir programs.

torch's AOT autograd (`aot_function`) traces the joint forward/backward graph of the function
(an nn.Module through `torch.func.functional_call`, with its parameters and buffers as inputs)
with the decompositions below, and its partitioner (`min_cut_rematerialization_partition`, the
one torch.compile uses) cuts it into a forward graph, which also returns the activations the
backward needs, and a backward graph. Each is imported here from its FX graph through the same
ATen table as `hir.import_torch`, lowered with the same pipeline and compiled
(`compile_imported`); AOT autograd's own `torch.autograd.Function` runs them and keeps the saved
activations between the two. The programs run under `torch.no_grad()`: they write their results
in place (`out=`), which autograd does not record.

One AOT-compiled function per input signature (shapes, dtypes, device and which inputs require
grad), in the same capped cache as the inference specializations (frontend/specialize.py).

On a mesh (`mesh=`, `param_layouts=`): frontend/training_mesh.py.
"""

from __future__ import annotations

import inspect
import linecache
import math
import operator
import os
import sys
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.utils._pytree as pytree

# Imported with this module, not at a step's first call: importing torch._dynamo leaves a cycle of
# frames (torch.fx.wrap keeps its caller's), which would hold that call's arguments until a full
# garbage collection.
from functorch.compile import aot_function, min_cut_rematerialization_partition
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.fx import GraphModule, Node
from torch.nn.attention import SDPBackend, sdpa_kernel
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.ir import Block, BlockArgument, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from hir.frontend.aten_complex import real_dtype
from hir.frontend.aten_table import ATEN_TABLE
from hir.frontend.autocast import autocast_state
from hir.frontend.compiled import CompiledFunction, compile_imported
from hir.frontend.decompositions import checked_one_hot, decomposition_table
from hir.frontend.emitter import Emitter
from hir.frontend.errors import (
    FrontendError,
    NotPickled,
    SourceLine,
    _users,
    at_line,
    capture_error,
    located_error,
    user_lines,
)
from hir.frontend.function_state import function_environment
from hir.frontend.importer import (
    ImportedProgram,
    InputSource,
    Layouts,
    Signature,
    SingleDevice,
    _import_node,
    _locate_unverified,
    _parameter_names,
    _per_entry,
    capturing_module,
    check_example_args,
    keyword_only_count,
    split_call,
    static_defaults,
    unchecked_distributions,
    value_name,
    verified_module,
    with_static_defaults,
)
from hir.frontend.layouts import LayoutError
from hir.frontend.module_state import (
    RECORDING_SETATTR,
    AttributeWatch,
    Registrations,
    StateReader,
    TrainFlags,
    changed_state,
    functional_call,
    recorded_attributes,
    state_specs,
)
from hir.frontend.older_torch import lstm_hidden_states_kept
from hir.frontend.pytree_args import LateContainers
from hir.frontend.running_stats import cumulative_batch_norms
from hir.frontend.specialize import (
    DEFAULT_MAX_SPECIALIZATIONS,
    CallSignature,
    Key,
    Specializations,
    arg_spec,
    spec_of,
)
from hir.frontend.training_ops import FusedTrainingOps
from hir.frontend.training_step import AotStep, Graphs, borrow_backward, lend_forward, reach_of
from hir.frontend.types import element_type

aten = torch.ops.aten
_REQUIRES_GRAD = operator.attrgetter("requires_grad")


def _scalar_tensor(
    value: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None
) -> Any:
    return torch.full((), value, dtype=dtype or torch.float32, device=device)


def _var_mean(
    x: torch.Tensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """var_mean from means and sums (torch's own decomposition goes through `prims.var`)."""
    dims = list(range(x.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    count = math.prod(x.shape[d] for d in dims)
    mean = torch.mean(x, dims, keepdim=True)
    centered = x - mean
    var = torch.sum(centered * centered, dims, keepdim=keepdim) / max(
        count - (1 if correction is None else correction), 0
    )
    return var, mean if keepdim else torch.squeeze(mean, dims)


def _batch_norm_functional(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, ...]:
    """
    A batch norm in training mode as torch's decomposition computes it, except that a bf16 / f16
    input with f32 parameters (under autocast) saves its mean and 1/std for the backward in f32,
    as torch's CPU kernel does: the decomposition rounds them to the input's dtype on CPU, and
    the backward's gradients (the norm's weight and bias, and through it the layers before) were
    off by 5 to 15 times eager's error.
    """
    from torch._decomp.decompositions import _native_batch_norm_legit_functional

    mixed = weight is not None and weight.dtype != x.dtype
    if not training or not mixed:
        return _native_batch_norm_legit_functional(x, weight, bias, running_mean, running_var, training, momentum, eps)
    dims = [0, *range(2, x.dim())]
    per_channel = [-1] + [1] * (x.dim() - 2)
    var, mean = torch.var_mean(x.to(weight.dtype), dim=dims, correction=0, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    out = (x - mean) * rstd * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    save_mean, save_rstd = torch.squeeze(mean, dims), torch.squeeze(rstd, dims)
    n = x.numel() / x.shape[1]
    new_mean = momentum * save_mean + (1 - momentum) * running_mean
    new_var = momentum * torch.squeeze(var, dims) * (n / (n - 1)) + (1 - momentum) * running_var
    return out.to(x.dtype), save_mean, save_rstd, new_mean, new_var


def _embedding_renorm(weight: torch.Tensor, indices: torch.Tensor, max_norm: float, norm_type: float) -> torch.Tensor:
    """
    `nn.Embedding(max_norm=...)`'s `embedding_renorm_` as a new table (written back to the weight):
    the rows the ids select whose norm exceeds `max_norm` scaled by `max_norm / (norm + 1e-7)`, as
    torch's kernel does. A row selected twice is written twice with the same values.
    """
    ids = indices.reshape(-1)
    rows = weight.index_select(0, ids)
    norms = torch.linalg.vector_norm(rows, ord=norm_type, dim=-1, keepdim=True)
    scale = torch.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    return torch.index_put(weight, (ids,), rows * scale.to(weight.dtype))


def _any(x: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    """any over an axis as a max (the math attention's guard against rows masked whole)."""
    return torch.amax(x.to(torch.float32), [dim], keepdim) > 0


@contextmanager
def _numbered_checkpoint_regions() -> Iterator[None]:
    """
    While a training step is traced: each selective activation checkpoint
    (`checkpoint(..., context_fn=partial(create_selective_checkpoint_contexts, policy))`) tags the
    ops it traces with a region number of its own, as torch.compile's tracer gives it. Traced
    without it, the regions' number is None, and torch's partitioner failed comparing two of
    them (`'>' not supported between instances of 'NoneType' and 'NoneType'`).
    """
    from torch.utils import checkpoint

    mode = getattr(checkpoint, "_CachingTorchDispatchMode", None)
    if mode is None or "ac_graph_id" not in inspect.signature(mode.__init__).parameters:
        yield  # another torch: its regions carry no number to compare
        return
    original = mode.__init__
    count = iter(range(1 << 30))

    def numbered(self: Any, policy_fn: Any, storage: Any, ac_graph_id: Any = None) -> None:
        original(self, policy_fn, storage, next(count) if ac_graph_id is None else ac_graph_id)

    mode.__init__ = numbered
    try:
        yield
    finally:
        mode.__init__ = original


@contextmanager
def _without_onednn() -> Iterator[None]:
    """oneDNN off while tracing (only its flag: `torch.backends.mkldnn.flags` also sets TF32's, with a warning)."""
    enabled = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(enabled)


_MODULE_SETATTR = torch.nn.Module.__setattr__
_REGISTER = {"buffer": torch.nn.Module.register_buffer, "parameter": torch.nn.Module.register_parameter}


@contextmanager
def refused_stored_tensors(module: Any, name: str) -> Iterator[None]:
    """
    While a training step of `module` is traced: a tensor its code stores in a plain attribute
    (`self.aux_loss = loss`, `self.maps.append(attention)`) would hold the trace's value, never a
    call's (the programs do not run the Python code), where the caller's loop reads it after each
    call (a mixture of experts' load-balancing loss, attention maps kept to plot): where it
    requires grad, an error at the line that stores it (or naming the attribute, for a list or
    dict that grew); where it does not (a constant table cast in forward), a warning. The
    attributes are left as they were. Parameters, buffers (updated in place, they are written back) and
    what torch itself assigns (`functional_call`'s swaps) are not refused.
    """
    if not isinstance(module, torch.nn.Module):
        yield
        return
    stored: list[tuple[torch.nn.Module, str, SourceLine, torch.Tensor]] = []
    before = {id(m): (m, dict(m.__dict__)) for m in module.modules()}
    sizes = {
        (id(m), k): len(v) for m, attrs in before.values() for k, v in attrs.items() if isinstance(v, (list, dict))
    }

    def setattr_recorded(self: torch.nn.Module, attr: str, value: Any) -> None:
        caller = sys._getframe(1)
        while caller.f_code is RECORDING_SETATTR:  # called through the trace's recording class (module_state.py)
            caller = caller.f_back  # type: ignore[assignment]
        plain = attr not in self._parameters and attr not in self._buffers and attr not in self._modules
        # Meta's Llama's `self.freqs_cis = self.freqs_cis.to(h.device)` stores the tensor it holds.
        again = value is self.__dict__.get(attr)
        if plain and not again and isinstance(value, torch.Tensor) and _users(caller.f_code.co_filename):
            file, line = caller.f_code.co_filename, caller.f_lineno
            stored.append((self, attr, SourceLine(file, line, linecache.getline(file, line).strip()), value))
        _MODULE_SETATTR(self, attr, value)

    # A buffer or parameter that forward registers (`self.register_buffer("pos", ...)` at its
    # first call) would stay on the module holding the trace's tensor, which no program reads.
    held = {id(m): (set(m._parameters), set(m._buffers)) for m in module.modules()}
    registered: list[tuple[torch.nn.Module, str, str, SourceLine | None]] = []

    def recorded(kind: str) -> Callable[..., None]:
        def register(self: torch.nn.Module, attr: str, value: Any, *args: Any, **kwargs: Any) -> None:
            known = held[id(self)][kind == "buffer"] if id(self) in held else None  # not a module forward makes
            if known is not None and attr not in known and not any(r[0] is self and r[1] == attr for r in registered):
                caller: Any = sys._getframe(1)
                while caller is not None and not _users(caller.f_code.co_filename):
                    caller = caller.f_back
                source = None
                if caller is not None:
                    file, line = caller.f_code.co_filename, caller.f_lineno
                    source = SourceLine(file, line, linecache.getline(file, line).strip())
                registered.append((self, attr, kind, source))
            _REGISTER[kind](self, attr, value, *args, **kwargs)

        return register

    torch.nn.Module.__setattr__ = setattr_recorded  # type: ignore[method-assign]
    torch.nn.Module.register_buffer = recorded("buffer")  # type: ignore[method-assign]
    torch.nn.Module.register_parameter = recorded("parameter")  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.__setattr__ = _MODULE_SETATTR  # type: ignore[method-assign]
        torch.nn.Module.register_buffer = _REGISTER["buffer"]  # type: ignore[method-assign]
        torch.nn.Module.register_parameter = _REGISTER["parameter"]  # type: ignore[method-assign]
        for m, attr, kind, _ in registered:  # the module as it was before the trace
            (m._buffers if kind == "buffer" else m._parameters).pop(attr, None)
        grown = []
        for (key, attr), size in sizes.items():
            m, attrs = before[key]
            container = m.__dict__.get(attr)
            if container is attrs[attr] and len(container) > size:
                added = list(container)[size:] if isinstance(container, list) else list(container.values())
                if any(isinstance(v, torch.Tensor) and v.requires_grad for v in pytree.tree_leaves(added)):
                    grown.append(_attribute_path(module, m, attr))
                if isinstance(container, list):
                    del container[size:]
        for m, attr, _, _ in stored:  # the attributes as they were before the trace
            attrs = before.get(id(m), (m, {}))[1]
            if attr in attrs:
                m.__dict__[attr] = attrs[attr]
            else:
                m.__dict__.pop(attr, None)
    advice = (
        "a compiled training step runs its trace's programs, not the Python code, so it would hold the trace's "
        "value at every call: return the tensor from forward (or keep it in a buffer updated in place)"
    )
    for m, attr, source, value in stored:
        if not value.requires_grad:  # a constant (a table cast in forward): the programs compute it at every call
            where = _attribute_path(module, m, attr)
            warnings.warn(
                at_line(source, f"{name}: forward stores a tensor in {where}, which keeps its value from before the "
                        "call: the programs compute it, the Python code runs once, while tracing"),
                stacklevel=2,
            )  # fmt: skip
    if registered:
        m, attr, kind, where = registered[0]
        message = (
            f"{name}: forward registers the {kind} {_attribute_path(module, m, attr)!r} (at its first call), which "
            "would hold the trace's tensor, read by no program: register it in __init__, before hir.compile"
        )
        raise FrontendError(at_line(where, message) if where is not None else f"<capture>: error: {message}")
    stored = [entry for entry in stored if entry[3].requires_grad]
    if stored:
        m, attr, source, _ = stored[0]
        raise FrontendError(
            at_line(source, f"{name}: forward stores a tensor in {_attribute_path(module, m, attr)}; {advice}")
        )
    if grown:
        raise FrontendError(f"<capture>: error: {name}: forward adds tensors to {grown[0]}; {advice}")


def _hook_code(hook: Callable[..., Any]) -> Any:
    """The code of a hook: a function's or lambda's, or a bound method's (Grad-CAM's `self.save_gradient`)."""
    return getattr(hook, "__code__", None) or getattr(getattr(hook, "__func__", None), "__code__", None)


def _hook_line(hook: Callable[..., Any]) -> SourceLine:
    code = _hook_code(hook)
    return SourceLine(
        code.co_filename, code.co_firstlineno, linecache.getline(code.co_filename, code.co_firstlineno).strip()
    )


def top_backward_hooks(module: Any) -> Any:
    """
    The full backward hooks and backward pre-hooks of the compiled module itself, as
    `nn.Module.__call__` sets them up around a call (a `torch.utils.hooks.BackwardHook`); None where
    it has none. They run at every `backward()`, on the call's gradients, not in the trace
    (`top_hooks_untraced`): the compiled function's inputs and outputs are the module's.
    """
    if not isinstance(module, torch.nn.Module) or not (module._backward_hooks or module._backward_pre_hooks):
        return None
    full = list(module._backward_hooks.values()) if module._is_full_backward_hook is True else []
    pre = list(module._backward_pre_hooks.values())
    if not full and not pre:
        return None
    from torch.utils.hooks import BackwardHook

    return BackwardHook(module, full, pre)


@contextmanager
def top_hooks_untraced(module: Any) -> Iterator[None]:
    """While a training step is traced: without the module's own full backward (pre-)hooks, which each call runs."""
    if not isinstance(module, torch.nn.Module) or not (module._backward_hooks or module._backward_pre_hooks):
        yield
        return
    full = module._is_full_backward_hook is True
    hooks, pre = module._backward_hooks, module._backward_pre_hooks
    if full:
        module._backward_hooks = OrderedDict()
    module._backward_pre_hooks = OrderedDict()
    try:
        yield
    finally:
        if full:
            module._backward_hooks = hooks
        module._backward_pre_hooks = pre


@contextmanager
def refused_observer_hooks(module: Any, name: str) -> Iterator[None]:
    """
    While a training step of `module` is traced: a hook of the user's that returns None observes
    a value (a forward hook: a feature kept for a perceptual or distillation loss; a backward hook
    or a tensor hook registered in forward: a gradient kept for Grad-CAM or logged); it runs
    once, on the trace's values, never at a call, so what it keeps is no call's: an error at the
    hook's line. A hook that returns a new value is part of the traced program and stays. A
    backward hook runs when AOT autograd traces the joint backward, after forward: its wrapper
    raises there, at the hook's first run.
    """
    if not isinstance(module, torch.nn.Module):
        yield
        return
    observers: list[Callable[..., Any]] = []
    swapped: list[tuple[dict[int, Any], int, Callable[..., Any]]] = []

    def recorded(hook: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = hook(*args, **kwargs)
            if result is None:
                observers.append(hook)
            return result

        return call

    def refused_in_backward(hook: Callable[..., Any], what: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = hook(*args, **kwargs)
            if result is None:
                raise FrontendError(
                    at_line(
                        _hook_line(hook),
                        f"{name}: {what} that returns None observes a gradient, but a compiled training step runs "
                        "it once, while tracing, on values of no call: return the tensor from forward and hook "
                        "that output, or take its gradient with torch.autograd.grad",
                    )
                )
            return result

        return call

    def users(hook: Callable[..., Any]) -> bool:
        code = _hook_code(hook)
        return code is not None and _users(code.co_filename)

    for m in module.modules():
        for hooks, wrap in (
            (m._forward_hooks, recorded),
            (m._backward_hooks, lambda h: refused_in_backward(h, "a backward hook")),
            (m._backward_pre_hooks, lambda h: refused_in_backward(h, "a backward pre-hook")),
        ):
            for key, hook in list(hooks.items()):
                if users(hook):
                    swapped.append((hooks, key, hook))
                    hooks[key] = wrap(hook)
    register_hook = torch.Tensor.register_hook

    def register_refused(tensor: torch.Tensor, hook: Callable[..., Any]) -> Any:
        """A tensor hook that forward registers (`a.register_hook(self.save_gradient)`)."""
        return register_hook(tensor, refused_in_backward(hook, "a tensor hook") if users(hook) else hook)

    torch.Tensor.register_hook = register_refused  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.register_hook = register_hook  # type: ignore[method-assign]
        for hooks, key, hook in swapped:
            if key in hooks:
                hooks[key] = hook
    if observers:
        raise FrontendError(
            at_line(
                _hook_line(observers[0]),
                f"{name}: a forward hook that returns None observes a module's output, but a compiled training step "
                "runs it once, while tracing, on values of no call: return what it needs from forward (or compute it "
                "from the outputs)",
            )
        )


def refuse_sparse_gradients(module: Any, name: str) -> None:
    """
    An `nn.Embedding` / `nn.EmbeddingBag` with `sparse=True` (word2vec's, a recommender's, for
    `torch.optim.SparseAdam`): its gradient is a sparse tensor, which the programs do not make;
    the trace failed in torch's sparse backward with a message that named neither the layer nor
    the way out.
    """
    if not isinstance(module, torch.nn.Module):
        return
    for path, m in module.named_modules():
        sparse = isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and m.sparse
        if sparse and m.weight.requires_grad and torch.is_grad_enabled():  # no_grad: an inference program
            raise FrontendError(
                f"<compile>: error: {name}: {path or 'the module'} is an nn.{type(m).__name__} with sparse=True, whose "
                "gradient is a sparse tensor, which a compiled training step does not make: use sparse=False (a "
                "dense gradient, which torch.optim.Adam and SGD take; SparseAdam does not)"
            )


def _attribute_path(root: torch.nn.Module, module: torch.nn.Module, attr: str) -> str:
    """`self.layers.0.aux_loss`: where `module`'s attribute lies, from the compiled module."""
    prefix = next((n for n, m in root.named_modules() if m is module), "")
    return f"self.{prefix + '.' if prefix else ''}{attr}"


def decompositions() -> dict[Any, Callable[..., Any]]:
    """
    `hir.import_torch`'s decompositions (torch's core ATen ones of the ops the ATen table lacks:
    a backward's `threshold_backward`, ...; `gelu_backward` and `silu_backward` stay whole, one
    op each), and those of what autograd records
    that the table may lack: `native_layer_norm` (a LayerNorm, whose forward also returns the
    statistics the backward reads), `var_mean` (torch's own goes through `prims.var`) and
    `scalar_tensor`, `any` (in the attention's math). The ops the table has stay whole.
    """
    from torch._decomp import get_decompositions

    table = decomposition_table()
    table = {op: table[op] for op in list(table.keys())}
    extra = {
        **get_decompositions([aten.addmm, aten.native_layer_norm]),
        aten._native_batch_norm_legit_functional.default: _batch_norm_functional,
        aten.scalar_tensor.default: _scalar_tensor,
        aten.var_mean.correction: _var_mean,
        aten.any.dim: _any,
        aten.embedding_renorm.default: _embedding_renorm,
    }
    table.update({op: fn for op, fn in extra.items() if op not in ATEN_TABLE})
    return table


@dataclass
class GraphProgram:
    """An FX graph of AOT autograd as a compiled hir program, called with AOT's boxed convention."""

    compiled: CompiledFunction | None
    """None when no output is computed (every output is an input or None)."""
    plan: list[tuple[str, int]]
    """
    Per graph output: ("program", k) the program's output k, ("input", i) the graph's input i,
    ("view", v) the view `views[v]` of an input, ("none", 0).
    """
    views: list[InputView]
    used: list[bool]
    """Per graph input: whether the program takes it (inputs only returned, or unused, are not)."""
    complex_inputs: list[bool]
    """Per graph input: complex, passed as its `view_as_real` pairs."""
    complex_results: set[int]
    """The program's outputs that are complex values' pairs, viewed back as complex."""
    constants: list[torch.Tensor] = field(default_factory=list)
    """
    Tensor constants the traced code made (`torch.tensor([...])` in a forward), passed after the
    graph's inputs, moved once to the device the inputs are on.
    """
    copied: frozenset[int] = frozenset()
    """
    The outputs to return as copies: activations saved for the backward that are inputs (or views
    of inputs) the function updates in place, whose memory AOT autograd's runtime overwrites with
    the new value after the forward (`x.mul_(self.scale)` saves the old `x` for the scale's gradient).
    """
    _boxed_call: ClassVar[bool] = True
    """AOT autograd calls it with one list, which it may clear."""

    def __call__(self, args: list[Any]) -> list[Any]:
        inputs = list(args)
        args.clear()  # the boxed convention: the callee frees what it no longer needs
        if self.constants:
            inputs += self._constants_on(next((a.device for a in inputs if isinstance(a, torch.Tensor)), None))
        results: Any = ()
        if self.compiled is not None:
            given = [
                torch.view_as_real(a) if self.complex_inputs[k] else a
                for k, (a, used) in enumerate(zip(inputs, self.used))
                if used
            ]
            with torch.no_grad():
                results = self.compiled(*given)
            if not isinstance(results, tuple):
                results = (results,)
            if self.complex_results:
                results = tuple(
                    torch.view_as_complex(r.contiguous()) if k in self.complex_results else r
                    for k, r in enumerate(results)
                )
        outputs = []
        for j, (kind, k) in enumerate(self.plan):
            if kind == "program":
                outputs.append(results[k])
            elif kind == "input":
                outputs.append(inputs[k].clone() if j in self.copied else inputs[k])
            elif kind == "view":
                outputs.append(self.views[k].of(inputs).clone() if j in self.copied else self.views[k].of(inputs))
            else:
                outputs.append(None)
        return outputs

    def copy_saved_inputs(self, written: frozenset[int], results: int | None) -> None:
        """Return as copies the saved activations (outputs after `results`) that are written inputs or their views."""
        if not written or results is None:
            return
        self.copied = frozenset(
            j
            for j, (kind, k) in enumerate(self.plan)
            if j >= results
            and ((kind == "input" and k in written) or (kind == "view" and self.views[k].input in written))
        )

    def _constants_on(self, device: torch.device | None) -> list[torch.Tensor]:
        if device is not None and self.constants[0].device != device:
            self.constants = [c.to(device) for c in self.constants]
        return self.constants


VIEW_TARGETS = frozenset(
    {
        aten.t.default,
        aten.permute.default,
        aten.transpose.int,
        aten.view.default,
        aten._unsafe_view.default,
        aten.unsqueeze.default,
        aten.squeeze.dim,
        aten.expand.default,
        aten.alias.default,
    }
)
"""ATen views whose other arguments are constants: an output made of these from an input is that view of it."""


@dataclass
class InputView:
    """An output of a graph that is views of one of its inputs: taken by torch at the call, not copied by a program."""

    input: int
    views: list[Node]

    def of(self, inputs: Sequence[Any]) -> torch.Tensor:
        t = inputs[self.input]
        for node in self.views:
            t = node.target(t, *node.args[1:])  # type: ignore[operator]
        return t

    @classmethod
    def find(cls, out: Node, placeholders: list[Node]) -> InputView | None:
        """
        The view chain from a placeholder to `out`, if `out` is one: a weight's transpose that
        the forward saves for the backward, which a program would copy into a buffer of its own
        (a read and a write of the whole weight per step) where eager autograd keeps a view.
        """
        chain: list[Node] = []
        node: Any = out
        while isinstance(node, Node) and node.op == "call_function" and node.target in VIEW_TARGETS:
            if node.kwargs or any(isinstance(a, Node) for a in node.args[1:]):
                return None
            chain.append(node)
            node = node.args[0]
        if not chain or not isinstance(node, Node) or node.op != "placeholder":
            return None
        return cls(placeholders.index(node), chain[::-1])


def import_graph(
    gm: GraphModule, inputs: Sequence[Any], names: Sequence[str], layouts: Sequence[str | None], name: str
) -> tuple[ImportedProgram | None, GraphProgram]:
    """
    The fusion module of an FX graph of ATen ops (placeholders in `inputs`' order, named `names`):
    its outputs that are computed become `@main`'s results; an output that is a graph input, or
    None, is passed through by `GraphProgram` (returned without its compiled program). A complex
    input or output (a complex buffer, a complex value saved for the backward) is carried as its
    `view_as_real` pairs, which `GraphProgram` passes and views back.
    """
    mode = SingleDevice()
    block = Block()
    emitter = Emitter(block)
    env: dict[Node, SSAValue] = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    arguments: list[BlockArgument] = []
    sources: list[InputSource] = []
    complex_inputs: list[bool] = []
    for k, (node, example) in enumerate(zip(placeholders, inputs)):
        value = node.meta.get("val", example)
        if not isinstance(value, torch.Tensor):
            raise located_error(node, f"{name}: input {names[k]!r} is a {type(value).__name__}, not a tensor")
        if k >= len(names):  # an input AOT autograd added (the token of an op with side effects)
            names, layouts = [*names, node.name], [*layouts, None]
        source = InputSource("user", index=k, name=names[k], layout=layouts[k])
        shape, dtype = tuple(value.shape), value.dtype
        complex_inputs.append(dtype.is_complex)
        if dtype.is_complex:  # carried as its view_as_real pairs (frontend/aten_complex.py); GraphProgram passes them
            shape, dtype = (*shape, 2), real_dtype(dtype)
        try:
            t = mode.input_type(shape, element_type(dtype, node), layouts[k], names[k], source)
        except LayoutError as err:
            raise FrontendError(f"<layouts>: error: {err}") from None
        arg = block.insert_arg(t, len(block.args))
        arg.name_hint = value_name(names[k])
        env[node] = arg
        arguments.append(arg)
        sources.append(source)
    plan: list[tuple[str, int]] = []
    views: list[InputView] = []
    results: list[SSAValue] = []
    complex_results: set[int] = set()
    constants: list[torch.Tensor] = []
    for node in gm.graph.nodes:
        if node.op == "call_function":
            # The ATen table's builders compute with real tensors (as_strided's memory positions),
            # which AOT autograd's fake mode, on while it compiles the graph, would make fake.
            with unset_fake_temporarily():
                env[node] = _import_node(node, emitter, env, mode)
        elif node.op == "get_attr":
            with unset_fake_temporarily():  # a real tensor, read while AOT autograd's fake mode is on
                constant = attribute_tensor(gm, node).detach()
            if constant.numel() == 1 and not constant.dtype.is_complex:
                env[node] = scalar_constant(emitter, node, constant)
                continue
            # A tensor of several values: an input of @main after the graph's, passed by GraphProgram.
            source = InputSource("user", index=len(arguments), name=node.name)
            shape, dtype = tuple(constant.shape), constant.dtype
            if dtype.is_complex:
                shape, dtype = (*shape, 2), real_dtype(dtype)
            t = mode.input_type(shape, element_type(dtype, node), None, node.name, source)
            arg = block.insert_arg(t, len(block.args))
            arg.name_hint = node.name
            env[node] = arg
            arguments.append(arg)
            sources.append(source)
            complex_inputs.append(constant.dtype.is_complex)
            constants.append(constant)
        elif node.op == "output":
            for out in node.args[0]:
                value = env.get(out) if isinstance(out, Node) else None
                if value is None:
                    if out is not None:
                        raise FrontendError(
                            f"<{name}>: error: an output is a Python {type(out).__name__} ({out!r}), not a tensor "
                            "computed by the program: return tensors (or None)"
                        )
                    plan.append(("none", 0))
                elif isinstance(value, BlockArgument):
                    plan.append(("input", arguments.index(value)))
                elif (view := InputView.find(out, placeholders)) is not None:
                    plan.append(("view", len(views)))
                    views.append(view)
                elif value in results:
                    plan.append(("program", results.index(value)))
                else:
                    plan.append(("program", len(results)))
                    results.append(value)
                    val = out.meta.get("val")
                    if isinstance(val, torch.Tensor) and val.dtype.is_complex:  # its pairs: GraphProgram views them
                        complex_results.add(len(results) - 1)
        elif node.op != "placeholder":
            raise located_error(node, f"graph nodes of kind {node.op!r} are not supported")
    if not results:
        return None, GraphProgram(None, plan, views, [False] * len(arguments), complex_inputs, set(), constants)
    with ImplicitBuilder(block):
        func.ReturnOp(*results)
    emitter.erase_unused()
    used = [bool(arg.uses) for arg in arguments]
    for arg in reversed([a for a, u in zip(arguments, used) if not u]):
        block.erase_arg(arg)
    kept = [s for s, u in zip(sources, used) if u]
    for k, source in enumerate(kept):
        source.index = k
    try:
        module = verified_module(block, results, name)
    except FrontendError:
        _locate_unverified(block, emitter)  # the op that does not verify, at the user's line
        raise
    signature = Signature(kept, len(kept), len(results), [None] * len(results))
    program = GraphProgram(None, plan, views, used, complex_inputs, complex_results, constants)
    return ImportedProgram(module, signature, mode, emitter.origins), program


def attribute_tensor(gm: GraphModule, node: Node) -> torch.Tensor:
    """The tensor a `get_attr` node reads: a constant the traced code made (`torch.tensor(v)`)."""
    value = operator.attrgetter(str(node.target))(gm)
    if not isinstance(value, torch.Tensor):
        raise located_error(node, f"the graph reads {node.target!r}, a {type(value).__name__}, not a tensor")
    return value


def _overlaps_itself(t: torch.Tensor) -> bool:
    """
    Whether two elements of t share memory other than through broadcasting (stride 0): windows
    that overlap (`x.unfold(0, 7, 5)`, `x.as_strided((20, 7), (5, 1))`). Sorted by stride, each
    axis must step past the span of the ones below it.
    """
    axes = sorted((step, n) for n, step in zip(t.shape, t.stride()) if n > 1 and step != 0)
    span = 0
    for step, n in axes:
        if step <= span:
            return True
        span += step * (n - 1)
    return False


def _dense_if_overlapping(value: Any) -> Any:
    """
    A result whose elements overlap in memory, copied densely in the trace: AOT autograd's runtime
    copies each output's gradient into a tensor of the traced output's strides, where overlapping
    elements would keep one value of several (a wrong gradient).
    """
    if isinstance(value, torch.Tensor) and value.requires_grad and _overlaps_itself(value):
        return value.clone(memory_format=torch.contiguous_format)
    return value


def scalar_constant(e: Emitter, node: Node, constant: torch.Tensor) -> SSAValue:
    """A one-element tensor constant (`torch.tensor(torch.finfo(x.dtype).min)`) as a `fusion.full` of its shape."""
    with unset_fake_temporarily():
        number = constant.item()
    value = e.constant(number, element_type(constant.dtype, node))
    return e.broadcast_to(value, tuple(constant.shape)) if constant.dim() else value


@dataclass
class Settings:
    """What every graph of a training function is compiled with (hir.compile's arguments)."""

    pipeline: str
    options: Mapping[str, Any]
    num_streams: int
    cuda_graph: bool | None
    measure_candidates: bool


class TrainingFunction(NotPickled):
    """
    Takes and returns torch tensors like the function it was compiled from, differentiably: the
    forward and the backward are lowered hir programs. An nn.Module's parameters and buffers are
    read at every call, so an optimizer step is seen by the next call.
    """

    def __init__(
        self,
        fn: Callable[..., Any] | torch.nn.Module,
        call: CallSignature,
        example: Key,
        layouts: list[str | None],
        settings: Settings,
        max_specializations: int,
    ):
        self.fn = fn
        self.containers: LateContainers | None = None
        """Compiles the function for a call whose arguments are containers of tensors (set on the first one)."""
        self._read_state = StateReader(fn, call.name, attributes=True) if isinstance(fn, torch.nn.Module) else None
        self.name = call.name
        self.layouts = layouts
        self.settings = settings
        self._mode = TrainFlags(fn)
        """The submodules' `training` flags: `model.eval()` after training traces its own programs."""
        self._attributes = AttributeWatch(function_environment(fn, call.name))
        """The plain attributes the traces read (`self.scale`): a new value traces programs of its own."""
        self._watched = 0
        self._unreached_state: set[str] = set()
        """The module's tensors no traced step reached, shared by the steps (AotStep.unreached_state)."""
        self._registrations = Registrations.count
        self._names = tuple(self._state())
        self._generation = 0
        """Counts the changes of the module's tensor names (a parametrization registered since): each traces anew."""
        self._cache_of = (call, example, max_specializations)
        self._flags = self._mode_at_call()
        self._grads = tuple(map(_REQUIRES_GRAD, self._state().values()))
        """Per parameter and buffer, whether it requires grad: the traced backward is that of these flags."""
        self._by_mode = {(self._flags, self._grads): self._new_cache()}
        self._inference_by_flags = {self._flags: self._new_cache()}
        self.specializations = self._by_mode[self._flags, self._grads]
        self.inference = self._inference_by_flags[self._flags]
        """
        The functions AOT autograd compiles, by input signature, for calls under grad mode, and
        the same for calls under `torch.no_grad()` (their forward saves nothing): those of the
        module's current train / eval flags and, under grad mode, of which of its tensors require
        grad (a parameter unfrozen after the first call gets its gradient, as in eager).
        """

    def _new_cache(self) -> Specializations:
        call, example, most = self._cache_of
        return Specializations(call, example, self._specialize, most)

    @property
    def graphs(self) -> dict[tuple[bool, Key], dict[str, CompiledFunction]]:
        """
        Per grad mode and cached input signature, its compiled programs by graph ("forward",
        "backward"; "inference" where nothing requires grad), for the module's current train /
        eval flags.
        """
        self._select_mode()
        return {
            (grad, key): aot.programs
            for grad, cache in ((True, self.specializations), (False, self.inference))
            for key, aot in cache.cache.items()
        }

    def _select_mode(self, state: Mapping[str, torch.Tensor] | None = None) -> None:
        """The caches of the module's current flags and, given the state a call reads, of its requires_grad."""
        flags = self._mode_at_call()
        grads = self._grads if state is None else tuple(map(_REQUIRES_GRAD, state.values()))
        if flags != self._flags:
            if flags not in self._inference_by_flags:
                self._inference_by_flags[flags] = self._new_cache()
            self.inference = self._inference_by_flags[flags]
        if flags != self._flags or grads != self._grads:
            # A parameter frozen or unfrozen since (`requires_grad_()`, a GAN's discriminator between
            # its steps and the generator's): the trace differentiates the tensors that require grad.
            if (flags, grads) not in self._by_mode:
                self._by_mode[flags, grads] = self._new_cache()
            self.specializations = self._by_mode[flags, grads]
        self._flags, self._grads = flags, grads

    def _state(self) -> dict[str, torch.Tensor]:
        if self._read_state is None:
            return {}
        if self._mode.replaced():  # `model.fc = nn.Linear(...)`: read the new submodule's tensors (and trace it)
            self._read_state = StateReader(self.fn, self.name, attributes=True)
            self._mode()  # takes the new structure
        if Registrations.count != self._registrations:  # a tensor or submodule registered somewhere since
            self._registrations = Registrations.count
            reader = StateReader(self.fn, self.name, attributes=True)
            if (names := tuple(reader())) != self._names:  # `register_parametrization`, pruning, a new parameter
                self._read_state, self._names = reader, names
                self._generation += 1
                self._mode.collect()  # the submodules it added, their flags and hooks
        return self._read_state()

    def _mode_at_call(self) -> tuple[Any, ...]:
        """
        The train / eval flags, the autocast regions the call is made in and the values of the
        attributes the traces read (AttributeWatch): each traces programs of its own.
        """
        if len(self._attributes) != self._watched:  # a trace read attributes no earlier one did
            extra = self._attributes.since(self._watched)
            self._by_mode = {((*f[:2], f[2] + extra), g): cache for (f, g), cache in self._by_mode.items()}
            self._inference_by_flags = {(*f[:2], f[2] + extra): c for f, c in self._inference_by_flags.items()}
            self._flags = (*self._flags[:2], self._flags[2] + extra)
            self._watched = len(self._attributes)
        # `_state()` took a replaced submodule, and new tensor names (a generation of their own).
        return (self._generation, self._mode(checked=True)), autocast_state(), self._attributes()

    def __call__(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        if self.containers is not None and self.containers.wanted(args, kwargs):  # `past_key_values` after None
            return self.containers(args, kwargs)
        if torch.is_grad_enabled() and (hooks := top_backward_hooks(self.fn)) is not None:
            # The module's own full backward hooks: on this call's inputs and outputs, as eager runs them.
            result = self._call(hooks.setup_input_hook(args), kwargs)  # the positional ones, as eager hooks them
            if not isinstance(result, (torch.Tensor, tuple)):
                warnings.warn(
                    "For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                    f"but received {type(result)}",
                    stacklevel=2,
                )
            return hooks.setup_output_hook(result)
        return self._call(args, kwargs)

    def _call(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        if self._attributes.environment is not None:
            self._attributes.environment()  # a reassigned global tensor or module, rebound before the state read
        state = self._state()
        self._select_mode(state)
        args = self.specializations.signature.positional(args, kwargs)
        cache = self.specializations if torch.is_grad_enabled() else self.inference
        aot = cache.lookup(None, args)
        traced = aot.out_spec is not None
        try:
            if torch.is_inference_mode_enabled():
                # An evaluation under `torch.inference_mode()`: the inference program, run outside it
                # (AOT autograd's trace reads version counters, which inference tensors do not keep).
                with torch.inference_mode(False), torch.no_grad():
                    return aot(state, *[a for a in args if isinstance(a, torch.Tensor)])
            return aot(state, *[a for a in args if isinstance(a, torch.Tensor)])  # statics: the specialization's
        except FrontendError as err:
            raise cache.signature.in_users_terms(err, args, cache.example) from None
        except DiagnosticException:
            if traced and (changed := changed_state(self.name, state, aot.state_specs)) is not None:
                raise changed from None  # `model.to(torch.bfloat16)` since the trace: the program refused its inputs
            raise  # a program's run-time error, located at its op
        except Exception as err:
            if traced:
                raise
            # AOT autograd's own trace around the function (its joint backward: a reentrant checkpoint).
            error = capture_error(err, "the training step could not be traced")
            raise cache.signature.in_users_terms(error, args, cache.example) from err

    def _specialize(self, examples: Sequence[torch.Tensor]) -> Callable[..., Any]:
        refuse_sparse_gradients(self.fn, self.name)
        programs: dict[str, CompiledFunction] = {}
        graphs = Graphs()
        state_names = list(self._state())
        # The arguments that are no tensors (None, numbers) are this specialization's: the traced
        # function takes the tensors and puts them back in place.
        tensor_at = [k for k, a in enumerate(examples) if isinstance(a, torch.Tensor)]
        arg_names = [self.specializations.signature.arg_names[k] for k in tensor_at]
        graphs.input_names = [*state_names, *arg_names]
        arg_layouts = [self.layouts[k] for k in tensor_at]

        def with_statics(tensors: Sequence[torch.Tensor]) -> list[Any]:
            full = list(examples)
            for k, t in zip(tensor_at, tensors):
                full[k] = t
            return full

        def compiler(graph: str) -> Callable[[GraphModule, Sequence[Any]], GraphProgram]:
            def compile_graph(gm: GraphModule, inputs: Sequence[Any]) -> GraphProgram:
                if graph == "backward":
                    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
                    layouts: list[str | None] = [None] * len(names)
                else:
                    names = [*state_names, *arg_names]
                    layouts = [None] * len(state_names) + arg_layouts
                try:
                    imported, program = import_graph(gm, inputs, names, layouts, f"{self.name[1:-1]}.{graph}")
                except FrontendError as err:
                    if graph != "backward":
                        raise  # __call__ names the call's arguments
                    # Compiled at the first backward() of the signature, inside the autograd engine.
                    described = self.specializations.signature.describe(examples)
                    raise FrontendError(
                        f"<backward>: error: {self.name}: the backward of the call with ({described}) cannot be "
                        f"compiled: {err}"
                    ) from None
                if imported is not None:
                    on_cuda = any(isinstance(t, torch.Tensor) and t.is_cuda for t in inputs)
                    s = self.settings
                    program.compiled = compile_imported(
                        imported, f"<{self.name[1:-1]}.{graph}>", s.pipeline, s.options, on_cuda,
                        s.num_streams, s.cuda_graph, s.measure_candidates, replay_must_win=True,
                    )  # fmt: skip
                    programs[graph] = program.compiled
                graphs.programs[graph] = program
                if graph == "forward":
                    program.copy_saved_inputs(graphs.written, graphs.forward_outputs)
                    lend_forward(program, len(state_names), graphs.forward_outputs)
                elif graph == "backward":
                    borrow_backward(program, graphs.programs.get("forward"), len(state_names), graphs.forward_outputs)
                return program

            return compile_graph

        def run(state: dict[str, torch.Tensor], *args: torch.Tensor) -> Any:
            # Attention and norms as ops with a backward of their own (frontend/training_ops.py), or where
            # that op does not apply, as its math (matmuls, softmax), which the table has. Without
            # oneDNN, torch's decomposition of nn.LSTM on CPU unrolls its cells (ops the table has)
            # instead of tracing `mkldnn_rnn_layer`, where the sequence needs no gradient.
            # The inputs as passed: functional_call writes what the module holds after the call back
            # into `state` (the old spectral_norm's pre-hook assigns `fc.weight = weight_orig / sigma`),
            # and the reach would stop at that computed weight, short of `weight_orig`.
            inputs = [*state.values(), *args]
            nodes = [t.grad_fn if isinstance(t, torch.Tensor) else None for t in inputs]
            versions = [t._version if isinstance(t, torch.Tensor) else None for t in inputs]
            try:
                with (
                    FusedTrainingOps(),
                    sdpa_kernel(SDPBackend.MATH),
                    user_lines(),
                    unchecked_distributions(),
                    _without_onednn(),
                    _numbered_checkpoint_regions(),
                    lstm_hidden_states_kept(),
                    checked_one_hot(),
                    refused_stored_tensors(self.fn, self.name),
                    top_hooks_untraced(self.fn),
                    refused_observer_hooks(self.fn, self.name),
                    cumulative_batch_norms(self.fn),
                    recorded_attributes(self.fn) as attributes,
                ):
                    positional, keywords = split_call(self.fn, with_statics(args))
                    if isinstance(self.fn, torch.nn.Module):
                        result = functional_call(self.fn, state, positional, keywords)
                    else:
                        result = self.fn(*positional, **keywords)
            except FrontendError:
                raise
            except Exception as err:  # torch's message about the user's code (a value read: `.item()`, a branch)
                raise capture_error(err, "the training step could not be traced") from err
            self._attributes.add(attributes)
            result = pytree.tree_map(_dense_if_overlapping, result)
            graphs.out_spec = pytree.tree_structure(result)
            # The inputs updated in place: AOT autograd's runtime writes their new values back
            # (with the update's history, where autograd records it) into the tensors it is given.
            graphs.written = frozenset(
                k for k, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t._version != versions[k]
            )
            if torch.is_grad_enabled():
                graphs.reach = reach_of(pytree.tree_leaves(result), inputs, nodes)
                graphs.mutated = {
                    k: reach_of([inputs[k]], inputs, nodes)[0]
                    for k in graphs.written
                    if inputs[k].grad_fn is not nodes[k]
                }
            return result

        def partition(joint: GraphModule, joint_inputs: Any, **options: Any) -> tuple[GraphModule, GraphModule]:
            graphs.forward_outputs = options.get("num_fwd_outputs")
            return min_cut_rematerialization_partition(joint, joint_inputs, **options)

        aot = aot_function(
            run,
            compiler("forward"),
            compiler("backward"),
            partition_fn=partition,
            decompositions=decompositions(),
            inference_compiler=compiler("inference"),
            **aot_log_options(),
        )
        aot.programs = programs  # type: ignore[attr-defined]
        step = AotStep(aot, graphs)
        step.state_specs = state_specs(self._state())
        step.unreached_state = self._unreached_state
        return step


def aot_log_options() -> dict[str, bool]:
    """
    `enable_log=False` for `aot_function` unless the user asked torch for AOT autograd's graphs
    (TORCH_LOGS=aot_graphs / aot_joint_graph, `torch._logging.set_logs`, TORCH_TRACE): with it on,
    AOT autograd prints the joint, forward and backward graphs to text at every trace whether or not
    a log shows them (a tenth of tracing a small training step).
    """
    try:
        from torch._logging._internal import TRACE_ENV_VAR, log_state
    except ImportError:  # an older torch: its defaults
        return {}
    wanted = os.environ.get(TRACE_ENV_VAR) or any(
        log_state.is_artifact_enabled(name) for name in ("aot_graphs", "aot_joint_graph")
    )
    return {} if wanted else {"enable_log": False}


def compile_training(
    fn: Callable[..., Any] | torch.nn.Module,
    example_args: Sequence[Any],
    in_layouts: Layouts = None,
    out_layouts: Layouts = None,
    mesh: Sequence[int] | None = None,
    pipeline: str = "stream-lowering",
    *,
    param_layouts: Mapping[str, str | None] | None = None,
    num_streams: int = 4,
    cuda_graph: bool | None = None,
    measure_candidates: bool = True,
    max_specializations: int = DEFAULT_MAX_SPECIALIZATIONS,
    **options: Any,
) -> TrainingFunction:
    """
    `cuda_graph=None` (automatic): on a GPU, the first call of each program (the forward, the
    backward) times it replayed and eagerly and keeps the faster, as for inference; a replay copies
    its inputs into the graph's buffers, and the forward's inputs are all the parameters, the
    backward's all the saved activations, which a host-bound step repays.
    """
    name = f"<{getattr(fn, '__name__', type(fn).__name__)}>"
    if mesh is None:  # a function reading a global model: a module holding it, whose parameters train
        fn = capturing_module(fn)
    if param_layouts and mesh is None:
        raise FrontendError(f"<compile>: error: {name}: param_layouts shard parameters over a mesh: pass mesh=")
    check_example_args(example_args)
    layouts = _per_entry(in_layouts, len(example_args), "in_layouts")
    if mesh is None:  # `labels=None` after them: a call may pass a tensor
        example_args = with_static_defaults(fn, example_args)
        layouts += [None] * (len(example_args) - len(layouts))
    for k, arg in enumerate(example_args):
        if not isinstance(arg, torch.Tensor) and (mesh is not None or layouts[k] is not None):
            where = "a layout" if layouts[k] is not None else "a mesh"
            raise FrontendError(f"<inputs>: error: example argument #{k} is {arg!r}, not a tensor, which {where} takes")
    names = _parameter_names(fn)[: len(example_args)]
    names += [f"arg{k}" for k in range(len(names), len(example_args))]
    settings = Settings(pipeline, options, num_streams, cuda_graph, measure_candidates)
    if mesh is not None:
        mesh_args = (layouts, out_layouts, tuple(mesh), param_layouts, names, settings, max_specializations)
        return _compile_on_mesh(fn, example_args, *mesh_args)
    if out_layouts is not None:
        raise FrontendError(f"<compile>: error: {name}: training=True takes no out_layouts")
    call = CallSignature(
        name, names, layouts, training=True, defaults=static_defaults(fn), keyword_only=keyword_only_count(fn)
    )
    example = tuple(arg_spec(a) for a in example_args)
    return TrainingFunction(fn, call, example, layouts, settings, max_specializations)


def _compile_on_mesh(
    fn: Callable[..., Any] | torch.nn.Module,
    example_args: Sequence[torch.Tensor],
    layouts: list[str | None],
    out_layouts: Layouts,
    mesh: tuple[int, ...],
    param_layouts: Mapping[str, str | None] | None,
    names: list[str],
    settings: Settings,
    max_specializations: int,
) -> Any:
    """The tensor-parallel training step (frontend/training_mesh.py): outputs are rows like the first input."""
    from dataclasses import replace

    from hir.frontend.training_mesh import MeshTrainingFunction

    name = f"<{getattr(fn, '__name__', type(fn).__name__)}>"
    if not isinstance(fn, torch.nn.Module):
        raise FrontendError(f"<compile>: error: {name}: training=True on a mesh compiles an nn.Module")
    if len(set(mesh)) != len(mesh) or not mesh:
        raise FrontendError(f"<compile>: error: {name}: mesh {list(mesh)} must list distinct device ids")
    if not example_args:
        raise FrontendError(f"<compile>: error: {name}: training=True on a mesh takes the activation's rows")
    # Every output is rows laid out as the first input: one entry per output, each that layout
    # (the outputs are counted when the step is traced, at its first call).
    outs = [layouts[0]] if out_layouts is None else [out_layouts] if isinstance(out_layouts, str) else list(out_layouts)
    if not outs or any(o != layouts[0] for o in outs):
        raise FrontendError(
            f"<layouts>: error: {name}: training=True on a mesh returns rows laid out as the first input's "
            f"({layouts[0]!r}), got out_layouts {outs}"
        )
    call = CallSignature(
        name, names, layouts, len(mesh), training=True, ranks=tuple(mesh), keyword_only=keyword_only_count(fn)
    )
    example = tuple(replace(spec_of(a), shape=call.local_shape(k, tuple(a.shape))) for k, a in enumerate(example_args))
    return MeshTrainingFunction(fn, call, example, mesh, layouts, param_layouts or {}, settings, max_specializations)
