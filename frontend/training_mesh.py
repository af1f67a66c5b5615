"""
`hir.compile(..., training=True, mesh=...)`: the training step of a tensor-parallel module, its
forward and its backward both lowered hir programs on the mesh.

The joint forward/backward graph is traced with `make_fx` (fake tensors of the global shapes,
the decompositions of frontend/training.py) and cut by torch's partitioner
(`min_cut_rematerialization_partition`, as AOT autograd does) into a forward graph, which also
returns the values the backward reads, and a backward graph. `TrainingMeshMode`
(frontend/sharded_backward.py) types both. An `autograd.Function` runs them:

- every rank holds the whole module; each call reads this rank's shard of each parameter;
- the forward returns this rank's rows (as inference does) and keeps the saved values as the
  forward program's local tensors, which the backward program takes as they are;
- a sharded parameter's `.grad` is full-shaped: this rank's block holds the gradient of its shard,
  the rest is zero; a replicated parameter gets the whole gradient (an all-reduce in the
  backward program); the input's gradient is this rank's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.fx import GraphModule, Node
from torch.nn.attention import SDPBackend, sdpa_kernel
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from hir.dialects import fusion
from hir.dialects.parallel_encoding import SERIAL
from hir.frontend.autocast import autocast_state
from hir.frontend.compiled import CompiledFunction, compile_imported
from hir.frontend.emitter import Emitter
from hir.frontend.errors import FrontendError, capture_error, located_error, user_lines
from hir.frontend.importer import (
    ImportedProgram,
    InputSource,
    Signature,
    _import_node,
    split_call,
    value_name,
    verified_module,
)
from hir.frontend.layouts import AxisLayout, LayoutError, parse_layout
from hir.frontend.module_state import (
    AttributeWatch,
    StateReader,
    StateSpecs,
    TrainFlags,
    changed_state,
    functional_call,
    recorded_attributes,
    state_specs,
)
from hir.frontend.rank_agreement import RankAgreement, ValueCheck
from hir.frontend.sharded import (
    ACTIVATIONS,
    COLUMN_BIAS,
    COLUMN_WEIGHT,
    REPLICATED,
    ROW_WEIGHT,
    WHOLE,
    Form,
    MeshMode,
    _key,
)
from hir.frontend.sharded_backward import BLOCKS, TrainingMeshMode, Transposed
from hir.frontend.specialize import CallError, CallSignature, Key, Specializations
from hir.frontend.training import (
    aot_log_options,
    attribute_tensor,
    refused_observer_hooks,
    refused_stored_tensors,
    scalar_constant,
)
from hir.frontend.training_ops import FusedTrainingOps
from hir.frontend.training_step import refuse_double_backward
from hir.frontend.types import element_type


class _StepMode(TrainingMeshMode):
    """Takes saved values as the forward program's local tensors and returns local tensors."""

    def __init__(self, mesh: tuple[int, ...]):
        super().__init__(mesh)
        self.raw: set[str] = set()

    def local_input(self, tensor: torch.Tensor, source: Any) -> torch.Tensor:
        if _key(source) in self.raw:
            return tensor
        return super().local_input(tensor.contiguous(), source)  # a tangent: the output's rows

    def local_output(self, tensor: torch.Tensor, index: int) -> torch.Tensor:
        return tensor


@dataclass
class Primal:
    """An input of the joint graph: a parameter (or buffer) of the module, or a user argument."""

    name: str
    layout: str | None
    is_state: bool
    shape: tuple[int, ...]


@dataclass
class Saved:
    """A value the forward keeps for the backward: one of the primals, or a program output."""

    primal: int | None = None
    output: int = 0
    """The forward program's output index (when not a primal)."""
    type: TensorType | None = None
    form: Form | None = None
    transposed: bool = False
    gathered: int | None = None
    """Rows in one chunk that the forward gathered whole: the output index of the gathered rows,
    which the backward reads instead of gathering them again."""


def _typed_input(
    mode: _StepMode,
    block: Block,
    k: int,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    primal: Primal,
    node: Node,
    weight_block: bool = False,
) -> tuple[BlockArgument, InputSource]:
    """
    @main's argument k: a parameter typed by its layout (its shard), or an activation's rows. A
    sharded weight is W^T's block, as the forward reads it, or with `weight_block` W's block
    (`TrainingMeshMode._oriented`).
    """
    source = InputSource("user", index=k, name=primal.name, layout=primal.layout)
    layout = parse_layout(primal.layout, len(shape), primal.name) if primal.layout else None
    element = element_type(dtype, node)
    parsed = layout or tuple(AxisLayout(SERIAL) for _ in shape)
    try:
        if primal.is_state:
            t, form = mode._weight_type(shape, element, parsed, primal.name)
        else:
            t, form = mode._activation_type(shape, element, parsed, primal.name)
    except LayoutError as err:
        raise FrontendError(f"<layouts>: error: {err}") from None
    if weight_block and form.kind in (COLUMN_WEIGHT, ROW_WEIGHT):
        *lead, p, q = t.get_shape()
        t, form = TensorType(t.element_type, (*lead, q, p), t.encoding), Form(form.kind, axis=1)
    mode._input_forms[_key(source)] = form
    arg = block.insert_arg(t, len(block.args))
    arg.name_hint = value_name(primal.name)
    mode.forms[arg] = form
    return arg, source


def _finish(e: Emitter, block: Block, results: list[SSAValue], name: str) -> ModuleOp:
    with ImplicitBuilder(block):
        func.ReturnOp(*results)
    e.erase_unused()
    return verified_module(block, results, name)


class MeshStep:
    """One input signature's forward and backward programs, and how their values map to torch's."""

    def __init__(
        self,
        fn_name: str,
        mesh: tuple[int, ...],
        primals: list[Primal],
        out_layout: str | None,
        graphs: tuple[GraphModule, GraphModule, int],
        compile: Callable[[ImportedProgram, str], CompiledFunction],
        state: Callable[[], Mapping[str, torch.Tensor]] | None = None,
    ):
        fw, bw, num_outputs = graphs
        self.mesh = mesh
        self._state = state
        """The module's parameters and buffers as they are at a call (`replicated_state`)."""
        self.primals = primals
        self.num_outputs = num_outputs
        self.out_layout = out_layout
        self.name = fn_name
        self._import_forward(fw)
        self._import_backward(bw)
        self._drop_unread_gathered()
        self.forward = compile(self.forward_imported, "forward")
        self.backward = compile(self.backward_imported, "backward")
        # Replayed, the forward lends the activations only the backward reads (views of its graph's
        # buffers, not copies) and the backward's graph reads them there: no copy on either side.
        lent = frozenset(k for kind, k in self.backward_inputs if kind == "saved" and k >= num_outputs)
        self.forward.lent_outputs = lent
        self.backward.borrowed_inputs = frozenset(
            j for j, (kind, k) in enumerate(self.backward_inputs) if kind == "saved" and k in lent
        )
        self.state_specs: StateSpecs = state_specs(state()) if state is not None else {}
        """The dtypes and shapes of the module's tensors the programs were traced for."""
        self._gradient_bases: dict[int, tuple[torch.Tensor, int]] = {}
        """Per sharded parameter (primal index): the full-shaped gradient last returned, as the
        base it is a view of, and the base's version after this rank's block was written."""

    def replicated_state(self) -> list[ValueCheck]:
        """
        The module's parameters and buffers, as they are now, that both programs read whole on every
        rank (no didx axis in their param_layouts entry: a norm's weight, a row-parallel bias): the
        ranks compare their values at a new signature (frontend/rank_agreement.py), as for inference.
        Each rank's optimizer updates its own copy from the all-reduced gradient, so they stay equal.
        """
        if self._state is None:
            return []
        state = self._state()
        checks = []
        for primal in self.primals:
            if not primal.is_state or (primal.layout is not None and "didx" in primal.layout):
                continue
            tensor = state.get(primal.name)
            if isinstance(tensor, torch.Tensor) and tensor.device.type != "meta":
                what = "parameter" if isinstance(tensor, torch.nn.Parameter) else "buffer"
                checks.append(ValueCheck(primal.name, tensor, what=what))
        return checks

    # -- forward ---------------------------------------------------------------------------------

    def _import_forward(self, gm: GraphModule) -> None:
        mode = _StepMode(self.mesh)
        block = Block()
        e = Emitter(block)
        e.on_mesh = True
        env: dict[Node, Any] = {}
        sources = []
        self.primal_forms: list[str] = []
        """Per primal: its form on the mesh (a parameter's shard, or rows)."""
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for k, (node, primal) in enumerate(zip(placeholders, self.primals)):
            val = node.meta["val"]
            env[node], source = _typed_input(mode, block, k, tuple(val.shape), val.dtype, primal, node)
            self.primal_forms.append(mode.forms[env[node]].kind)
            sources.append(source)
            mode.raw.add(_key(source))  # `shard` made its local tensor
        results: list[SSAValue] = []
        self.saved: dict[str, Saved] = {}
        self.output_forms: list[Form] = []
        for node in gm.graph.nodes:
            if node.op == "call_function":
                env[node] = _import_node(node, e, env, mode)
            elif node.op == "get_attr":
                env[node] = _mesh_constant(e, gm, node, mode)
            elif node.op == "output":
                outs = list(node.args[0])
                for k, out in enumerate(outs[: self.num_outputs]):
                    e.where, e.name_hint = "<outputs>", None
                    value = env.get(out) if isinstance(out, Node) else None
                    if not isinstance(value, SSAValue) or mode.form(e, value).kind not in (*ACTIVATIONS, "partial"):
                        raise FrontendError(f"<outputs>: error: output #{k} is not rows of an activation")
                    try:
                        result = mode.output(e, value, tuple(out.meta["val"].shape), self.out_layout, f"output #{k}")
                    except LayoutError as err:
                        raise FrontendError(f"<layouts>: error: {err}") from None
                    self.output_forms.append(mode.forms.get(result, mode.forms.get(value)))  # type: ignore[arg-type]
                    results.append(result)
                for out in outs[self.num_outputs :]:
                    value = env[out]
                    transposed = isinstance(value, Transposed)
                    value = value.value if transposed else value
                    # A saved partial sum is saved summed (the forward sums it for its own use).
                    value = mode._reduced(e, value)
                    if isinstance(value, BlockArgument):
                        self.saved[out.name] = Saved(primal=value.index, transposed=transposed)
                        continue
                    if value not in results:
                        results.append(value)
                    assert isinstance(value.type, TensorType)
                    self.saved[out.name] = Saved(
                        output=results.index(value), type=value.type, form=mode.forms[value], transposed=transposed
                    )
                # Saved rows that the forward gathered whole: the gathered rows are saved too, after
                # every other output (the backward may not read them: `_drop_unread_gathered`).
                for out in outs[self.num_outputs :]:
                    value = env[out]
                    value = value.value if isinstance(value, Transposed) else value
                    gathered = mode._gathered.get(value)
                    if gathered is not None and not self.saved[out.name].transposed:
                        if gathered not in results:
                            results.append(gathered)
                        self.saved[out.name].gathered = results.index(gathered)
        module = _finish(e, block, results, f"{self.name}.forward")
        signature = Signature(sources, len(sources), len(results), [None] * len(results))
        self.forward_imported = ImportedProgram(module, signature, mode, e.origins)
        self._shard_mode, self._shard_sources = mode, sources
        self._views: dict[int, tuple[torch.Tensor, tuple[Any, ...], torch.Tensor]] = {}
        """Per parameter: the tensor, its memory and strides, and the view of its block made for it."""

    # -- backward --------------------------------------------------------------------------------

    def _import_backward(self, gm: GraphModule) -> None:
        mode = _StepMode(self.mesh)
        block = Block()
        e = Emitter(block)
        e.on_mesh = True
        env: dict[Node, Any] = {}
        sources: list[InputSource] = []
        self._gathered_args: list[BlockArgument] = []
        self.backward_inputs: list[tuple[str, int]] = []
        """Per backward program input: ("primal", i), ("primal block", i) (a weight as W's block),
        ("saved", forward output) or ("tangent", k)."""
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        tangents = [n for n in placeholders if n.name.startswith("tangents")]
        # The tangents first: they fix the stream chunks of the rows.
        for node in [*tangents, *[n for n in placeholders if n not in tangents]]:
            k = len(sources)
            val = node.meta["val"]
            if node in tangents:
                index = tangents.index(node)
                like = Primal(f"grad_output{index}", self.out_layout, False, tuple(val.shape))
                env[node], source = _typed_input(mode, block, k, tuple(val.shape), val.dtype, like, node)
                self.backward_inputs.append(("tangent", index))
            elif node.name not in self.saved:
                raise located_error(node, f"the backward reads {node.name}, which the forward does not save")
            else:
                saved = self.saved[node.name]
                if saved.primal is not None:
                    primal = self.primals[saved.primal]
                    arg, source = _typed_input(mode, block, k, primal.shape, val.dtype, primal, node, True)
                    mode.raw.add(_key(source))  # the forward's local tensor of the primal
                    swapped = mode.forms[arg].axis == 1
                    self.backward_inputs.append(("primal block" if swapped else "primal", saved.primal))
                else:
                    assert saved.type is not None
                    assert saved.form is not None
                    source = InputSource("user", index=k, name=node.name)
                    arg = block.insert_arg(saved.type, len(block.args))
                    arg.name_hint = node.name
                    mode.forms[arg] = saved.form
                    mode.raw.add(_key(source))
                    self.backward_inputs.append(("saved", saved.output))
                env[node] = Transposed(arg) if saved.transposed else arg
                if saved.gathered is not None:
                    sources.append(source)
                    source = self._gathered_input(mode, block, arg, saved.gathered)
            sources.append(source)
        results: list[SSAValue] = []
        self.gradients: list[tuple[str, int, bool]] = []
        """Per primal: ("none"|"rows"|"whole"|"block"|"bias", program output, transposed)."""
        for node in gm.graph.nodes:
            if node.op == "call_function":
                env[node] = _import_node(node, e, env, mode)
            elif node.op == "get_attr":
                env[node] = _mesh_constant(e, gm, node, mode)
            elif node.op == "output":
                outs = list(node.args[0])
                for primal, want, out in zip(self.primals, self.primal_forms, outs):
                    e.where, e.name_hint = f"<gradient of {primal.name}>", None
                    if out is None:
                        self.gradients.append(("none", 0, False))
                        continue
                    kind, value, transposed = self._gradient(mode, e, primal, want, env.get(out))
                    if value not in results:
                        results.append(value)
                    self.gradients.append((kind, results.index(value), transposed))
        unread = [a for a in self._gathered_args if not a.uses]
        for arg in reversed(unread):  # rows that the backward does not gather: not an input
            k = arg.index
            del sources[k], self.backward_inputs[k]
            block.erase_arg(arg)
        self._gathered_args = [a for a in self._gathered_args if a.uses]
        for k, source in enumerate(sources):  # renumbered: the mode knows each by its key
            old = _key(source)
            source.index = k
            if old in mode.raw:
                mode.raw.discard(old)
                mode.raw.add(_key(source))
            if old in mode._input_forms:
                mode._input_forms[_key(source)] = mode._input_forms.pop(old)
        module = _finish(e, block, results, f"{self.name}.backward")
        signature = Signature(sources, len(sources), len(results), [None] * len(results))
        self.backward_imported = ImportedProgram(module, signature, mode, e.origins)

    def _gathered_input(self, mode: _StepMode, block: Block, rows: BlockArgument, output: int) -> InputSource:
        """The forward's gathered rows as the backward's input after `rows`: what gathering `rows` gives."""
        function = self.forward_imported.module.body.block.first_op
        assert isinstance(function, func.FuncOp)
        name = f"{rows.name_hint}_gathered"
        source = InputSource("user", index=len(block.args), name=name)
        arg = block.insert_arg(function.function_type.outputs.data[output], len(block.args))
        arg.name_hint = name
        mode.forms[arg] = Form(REPLICATED)
        mode.raw.add(_key(source))
        mode._gathered[rows] = arg
        self._gathered_args.append(arg)
        self.backward_inputs.append(("saved", output))
        return source

    def _drop_unread_gathered(self) -> None:
        """The forward returns only the gathered rows that the backward reads (they are its last results)."""
        read = {k for kind, k in self.backward_inputs if kind == "saved"}
        function = self.forward_imported.module.body.block.first_op
        assert isinstance(function, func.FuncOp)
        ret = function.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        gathered = {s.gathered for s in self.saved.values() if s.gathered is not None}
        keep = [k for k in range(len(ret.arguments)) if k not in gathered or k in read]
        if len(keep) == len(ret.arguments):
            return
        assert keep == list(range(len(keep))), "the gathered rows are the forward's last results"
        values = [ret.arguments[k] for k in keep]
        ret.detach()
        ret.erase()
        with ImplicitBuilder(function.body.block):
            func.ReturnOp(*values)
        inputs = function.function_type.inputs.data
        function.function_type = FunctionType.from_lists(list(inputs), [v.type for v in values])
        for op in reversed(list(function.body.block.ops)):  # the gathers only they read
            if isinstance(op, fusion.FusionOp) and not any(r.uses for r in op.results):
                op.detach()
                op.erase()
        signature = self.forward_imported.signature
        signature.num_outputs = len(values)
        signature.out_layouts = [None] * len(values)
        for s in self.saved.values():
            if s.gathered is not None and s.gathered not in read:
                s.gathered = None

    def _gradient(
        self, mode: _StepMode, e: Emitter, primal: Primal, want: str, value: Any
    ) -> tuple[str, SSAValue, bool]:
        """How the backward program returns the gradient of a primal whose form is `want`."""
        transposed = isinstance(value, Transposed)
        if transposed:
            value = value.value
        if not isinstance(value, SSAValue) or isinstance(value, BlockArgument):
            raise e.error(f"the gradient of {primal.name} is not computed by the backward program")
        form = mode.form(e, value)
        if not primal.is_state:
            if transposed:
                raise e.error(f"the gradient of {primal.name} is transposed")
            try:
                return (
                    "rows",
                    mode.output(e, value, primal.shape, primal.layout, f"the gradient of {primal.name}"),
                    False,
                )
            except LayoutError as err:
                raise FrontendError(f"<layouts>: error: {err}") from None
        if want == WHOLE and form.kind == WHOLE and not transposed:
            return "whole", value, False
        if want == COLUMN_BIAS and form.kind == COLUMN_BIAS:
            return "bias", value, False
        if want in (COLUMN_WEIGHT, ROW_WEIGHT) and form.kind == BLOCKS:
            axis = form.axis ^ int(transposed)
            if axis == (0 if want == COLUMN_WEIGHT else 1):
                return "block", value, transposed
        raise e.error(
            f"the gradient of {primal.name} (layout {primal.layout}) is computed as a {form.kind} tensor: "
            "not a gradient of that parameter's shard"
        )

    # -- running ---------------------------------------------------------------------------------

    def shard(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """The primals' local tensors (this rank's shard of each parameter, the rows' fusion view),
        made once per step for both programs. A parameter's shard is a view of its block, read in
        place (a copy per step cost as much as a small GEMM); an in-place update of the parameter
        between the forward and the backward is then autograd's error, as in eager."""
        mode, sources = self._shard_mode, self._shard_sources
        local = []
        for k, (t, source) in enumerate(zip(tensors, sources)):
            known = self._views.get(k)
            # A parameter's view is made once: the same tensor (held here, so its id is not
            # reused) with the same memory and strides has the same block.
            if known is not None and known[0] is t and known[1] == (t.data_ptr(), t.shape, t.stride()):
                local.append(known[2])
                continue
            view = MeshMode.local_input(mode, t.detach().contiguous(), source, copy=False)
            if self.primals[k].is_state and t.is_contiguous():  # a copy would miss the parameter's updates
                self._views[k] = (t, (t.data_ptr(), t.shape, t.stride()), view)
            local.append(view)
        return local

    def run_forward(self, local: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The user's outputs (this rank's rows) and every result of the forward program (the saved ones too)."""
        with torch.no_grad():
            results = self.forward(*local)
        results = list(results) if isinstance(results, tuple) else [results]
        outputs = [r.reshape(-1, r.shape[-1]) for r in results[: self.num_outputs]]
        return outputs, results

    def run_backward(
        self, local: Sequence[torch.Tensor], forward_results: Sequence[torch.Tensor], grads: Sequence[Any]
    ) -> list[torch.Tensor | None]:
        """The gradients of the primals: rows, whole, or full-shaped with this rank's block (zeros elsewhere)."""
        inputs = []
        for kind, k in self.backward_inputs:
            if kind == "primal":
                inputs.append(local[k])
            elif kind == "primal block":  # W's block: the memory of the forward's W^T block view
                inputs.append(local[k].transpose(-2, -1))
            elif kind == "saved":
                inputs.append(forward_results[k])
            else:
                g = grads[k]
                inputs.append(
                    torch.zeros_like(forward_results[k].reshape(-1, forward_results[k].shape[-1]))
                    if g is None
                    else g.contiguous()
                )
        D = len(self.mesh)
        d = self._shard_mode.position()  # the blocks `shard` read
        full = self._full_gradients(local, d, D)
        into: list[torch.Tensor | None] = [None] * len(self._result_shapes)
        for j, (_, view) in full.items():
            k = self.gradients[j][1]
            if into[k] is None and view.shape == self._result_shapes[k]:  # one destination per output
                into[k] = view
        with torch.no_grad():
            results = self.backward.call_into(inputs, into)
        results = list(results) if isinstance(results, tuple) else [results]
        out: list[torch.Tensor | None] = []
        for j, (primal, (kind, k, _)) in enumerate(zip(self.primals, self.gradients)):
            if kind == "none":
                out.append(None)
                continue
            result = results[k]
            if kind == "rows":
                out.append(result.reshape(-1, result.shape[-1]))
            elif kind == "whole":
                out.append(result.reshape(primal.shape))
            else:
                gradient, view = full[j]
                if result is not view:  # the program wrote another buffer: one copy into the block
                    view.copy_(result.reshape(view.shape))
                out.append(gradient)
        for j, (base, _) in self._gradient_bases.items():
            self._gradient_bases[j] = base, base._version  # this rank's block written
        return out

    def _full_gradients(
        self, local: Sequence[torch.Tensor], d: int, D: int
    ) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        """
        Per sharded parameter (by primal index): its full-shaped gradient, the other ranks' blocks
        zeroed, and the view of this rank's block oriented as the backward program's result, which
        the program writes into where the shapes agree (no copy of the block after the program).
        """
        full: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        for j, (primal, form, (kind, k, transposed)) in enumerate(zip(self.primals, self.primal_forms, self.gradients)):
            if kind not in ("block", "bias"):
                continue
            axis = 0 if kind == "bias" or form == COLUMN_WEIGHT else 1
            n = primal.shape[axis] // D
            base = self._reusable_base(j, local[j])
            if base is None:
                base = local[j].new_empty(primal.shape)
                base.narrow(axis, 0, d * n).zero_()
                base.narrow(axis, (d + 1) * n, primal.shape[axis] - (d + 1) * n).zero_()
                self._gradient_bases[j] = base, base._version
            # Autograd keeps a tensor it holds the only reference to as the `.grad`; a view shares
            # the base's version counter, so an in-place change of that `.grad` is seen here.
            gradient = base.view(primal.shape)
            block = gradient.narrow(axis, d * n, n)
            view = block.t() if kind == "block" and transposed else block
            while view.dim() < len(self._result_shapes[k]):  # the program's leading unit axes
                view = view.unsqueeze(0)
            full[j] = gradient, view
        return full

    def _reusable_base(self, j: int, like: torch.Tensor) -> torch.Tensor | None:
        """
        The full-shaped gradient returned last time, when its zeros can be returned again: nothing
        holds its memory any more (the `.grad` was set to None, or replaced) and nothing changed it
        in place since this rank wrote its block. Else None: a new one is zeroed, as a `.grad` still
        held (gradient accumulation, a reference kept) must not be overwritten.
        """
        cached = self._gradient_bases.get(j)
        if cached is None:
            return None
        base, version = cached
        storage = base.untyped_storage()
        use_count = getattr(torch._C, "_storage_Use_Count", None)  # torch's own, as cudagraph trees use it
        # References to the memory: `base` and the `storage` wrapper here, nothing else.
        if use_count is None or use_count(storage._cdata) != 2 or base._version != version:
            del self._gradient_bases[j]
            return None
        if base.device != like.device or base.dtype != like.dtype:
            return None
        return base

    @cached_property
    def _result_shapes(self) -> list[torch.Size]:
        """The backward program's result shapes (every lowering has the same)."""
        return [torch.Size(t.get_shape()) for t in self.backward.program.func.function_type.outputs.data]


class _Apply(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, step: MeshStep, *tensors: torch.Tensor) -> Any:  # type: ignore[override]
        local = step.shard(tensors)
        outputs, results = step.run_forward(local)
        ctx.step = step
        ctx.num_tensors = len(local)
        ctx.save_for_backward(*local, *results)  # the backward reads the shards the forward read
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Any:  # type: ignore[override]
        refuse_double_backward(grads)
        saved = ctx.saved_tensors
        tensors, results = saved[: ctx.num_tensors], saved[ctx.num_tensors :]
        return (None, *ctx.step.run_backward(tensors, results, grads))


@contextmanager
def _recording_stack_traces() -> Iterator[None]:
    """
    AOT autograd's tracer records each node's Python stack (for errors at the user's line), as
    `make_fx(record_stack_traces=True)` does; AOT autograd itself has no such option.
    """
    from torch.fx.experimental import proxy_tensor

    tracer = getattr(proxy_tensor, "_MakefxTracer", None)
    if tracer is None:  # another torch: errors then name the op, not the line
        yield
        return
    init = tracer.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.record_stack_traces = True

    tracer.__init__ = recording
    try:
        yield
    finally:
        tracer.__init__ = init


class _Traced(Exception):
    """Raised by the forward's compiler once AOT autograd has partitioned the joint graph."""


def trace_joint(
    run: Callable[..., Any], primals: list[torch.Tensor], decompositions: Mapping[Any, Any]
) -> tuple[GraphModule, GraphModule, int]:
    """
    The forward and backward graphs of `run(*primals)` (global shapes, on fake tensors), as AOT
    autograd traces and functionalizes the joint graph (in-place ops such as RMSNorm's `add_`
    become functional; an activation's backward is its one op) and torch's partitioner cuts it.
    Only the primals that require grad are differentiated.
    """
    from functorch.compile import aot_function, min_cut_rematerialization_partition

    graphs: dict[str, Any] = {}

    def partition(joint: GraphModule, inputs: Any, *, num_fwd_outputs: int, **kwargs: Any) -> Any:
        fw, bw = min_cut_rematerialization_partition(joint, inputs, num_fwd_outputs=num_fwd_outputs, **kwargs)
        graphs.update(forward=fw, backward=bw, outputs=num_fwd_outputs)
        return fw, bw

    def stop(gm: GraphModule, example_inputs: Any) -> Any:
        raise _Traced

    traced = aot_function(
        run, stop, stop, partition_fn=partition, decompositions=dict(decompositions), **aot_log_options()
    )
    try:
        with _recording_stack_traces():
            traced(*primals)
    except _Traced:
        pass
    if not graphs:
        raise FrontendError("<capture>: error: no parameter or input of the training step requires grad")
    return graphs["forward"], graphs["backward"], graphs["outputs"]


class MeshTrainingFunction:
    """`hir.compile(..., training=True)` on a mesh: call it with this rank's rows, as inference."""

    def __init__(self, fn: torch.nn.Module, call: CallSignature, example: Key, mesh: tuple[int, ...],
                 layouts: list[str | None], param_layouts: Mapping[str, str | None], settings: Any,
                 max_specializations: int):  # fmt: skip
        self.fn = fn
        self._read_state = StateReader(fn, call.name)
        self._flags = TrainFlags(fn)
        self.name = call.name
        self.mesh = mesh
        self.layouts = layouts
        self.param_layouts = dict(param_layouts)
        self.settings = settings
        unknown = sorted(set(self.param_layouts) - set(self._state()))
        if unknown:
            raise FrontendError(
                f"<layouts>: error: param_layouts names {unknown}, which are not parameters or buffers of the module"
            )
        self._mesh_checked = self._check_mesh("compile")
        self._cache_of = (call, example, max_specializations)
        self._attributes = AttributeWatch()
        """The plain attributes the traces read (`self.scale`, a config's flag): the programs hold them
        as constants, so a new value traces steps of its own, as on one device."""
        self._watched = 0
        self._agreement = RankAgreement(call, self._frozen)
        """Shared by the caches of every set of frozen parameters: a parameter frozen on one rank only
        puts that rank's call in a cache its peers do not use, and its check must still meet theirs
        (one error on every rank) and leave every rank at the same next check."""
        self._mode = self._mode_at_call(self._state())
        self._by_mode = {self._mode: self._new_cache()}
        self.specializations = self._by_mode[self._mode]
        """
        The steps by input signature, of the module's current mode: the train / eval flags and
        structure (dropout in training mode, a replaced head: the trace follows them), and the
        parameters' requires_grad (a parameter frozen or unfrozen since the last call changes the
        backward program: a gradient of its own, or none). A call in another mode runs the steps
        traced in it, never those of the mode of the first call.
        """

    def _new_cache(self) -> Specializations:
        call, example, most = self._cache_of
        return Specializations(call, example, self._specialize, most, agreement=self._agreement)

    @property
    def graphs(self) -> dict[tuple[bool, Key], dict[str, CompiledFunction]]:
        """Per (grad mode, input signature) the compiled programs, as on one device (a call under
        `torch.no_grad()` runs the same forward program)."""
        return {
            (True, key): {"forward": s.forward, "backward": s.backward} for key, s in self.specializations.cache.items()
        }

    def _state(self) -> dict[str, torch.Tensor]:
        if self._flags.replaced():  # `model.fc = nn.Linear(...)`: read the new submodule's tensors (and trace it)
            self._read_state = StateReader(self.fn, self.name)
            self._flags()  # takes the new structure
        return self._read_state()

    def _mode_at_call(self, state: dict[str, torch.Tensor]) -> tuple[Any, ...]:
        """The flags and structure (`_state()` has taken a replaced submodule), what requires grad, and
        the values of the attributes the traces read."""
        if len(self._attributes) != self._watched:  # a trace read attributes no earlier one did
            extra = self._attributes.since(self._watched)  # the values those earlier traces ran with
            self._by_mode = {(*m[:2], m[2] + extra): cache for m, cache in self._by_mode.items()}
            self._mode = (*self._mode[:2], self._mode[2] + extra)
            self._watched = len(self._attributes)
        return self._flags(checked=True), tuple(t.requires_grad for t in state.values()), self._attributes()

    def _frozen(self) -> str:
        """The parameters that do not require grad (they change the backward program), for the ranks to compare."""
        state = self._state().items()
        frozen = [name for name, t in state if isinstance(t, torch.nn.Parameter) and not t.requires_grad]
        return f"frozen {', '.join(frozen)}" if frozen else ""

    def _check_mesh(self, stage: str) -> bool:
        """
        Whether the job's ranks are known (then checked): every rank of the job is in the mesh,
        else a FrontendError on every rank. Inference lets a rank outside the mesh take position
        0 and get None for the outputs; a training step cannot: such a rank has no output to
        differentiate, so it would run no backward program while the mesh's ranks run theirs
        (SPMD: a barrier of the copy-engine pipeline spans the job).
        """
        if not torch.distributed.is_available() or not torch.distributed.is_initialized():
            return False  # checked at the first call in a job
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        outside = [r for r in range(world) if r not in self.mesh]
        if outside:
            plural = len(outside) > 1
            raise FrontendError(
                f"<{stage}>: error: {self.name}: training=True on mesh {list(self.mesh)} in a job of {world} ranks: "
                f"rank{'s' * plural} {', '.join(map(str, outside))} {'are' if plural else 'is'} outside the mesh "
                f"(this is rank {rank}); a training step runs on every rank of the job (a rank outside the mesh "
                "would get no output to differentiate and run no backward program while the mesh's ranks run "
                f"theirs): compile it with mesh=list(range({world}))"
            )
        return True

    def __call__(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        if not self._mesh_checked:
            self._mesh_checked = self._check_mesh("call")
        if autocast_state():  # the steps were traced without its casts: f32 results where eager's are bf16
            raise CallError(
                f"<call>: error: {self.name}: training on a mesh does not follow torch.autocast (its casts of "
                "sharded parameters are not supported): call it outside the autocast region, and for bf16 "
                "training cast the module and its inputs (`model.to(torch.bfloat16)`)"
            )
        state = self._state()
        mode = self._mode_at_call(state)
        if mode != self._mode:
            if mode not in self._by_mode:
                self._by_mode[mode] = self._new_cache()
            self._mode, self.specializations = mode, self._by_mode[mode]
        args = self.specializations.signature.positional(args, kwargs)
        try:
            if torch.is_inference_mode_enabled():
                # An evaluation under `torch.inference_mode()`: traced and run outside it (AOT autograd's
                # trace of a new mode or signature reads version counters, which inference tensors lack).
                with torch.inference_mode(False), torch.no_grad():
                    return self._forward_only(state, args)
            tensors = [*state.values(), *args]
            if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
                return _Apply.apply(self.specializations.lookup(None, args), *tensors)
            return self._forward_only(state, args)
        except DiagnosticException:
            # `model.to(torch.bfloat16)` since the trace: the program refused the module's tensors.
            step = self.specializations.lookup(None, args)  # the call's own: its signature was just looked up
            if (changed := changed_state(self.name, state, step.state_specs)) is not None:
                raise changed from None
            raise

    def _forward_only(self, state: dict[str, torch.Tensor], args: Sequence[Any]) -> Any:
        """The forward program alone (no gradient is recorded): a call under no_grad or inference mode."""
        step = self.specializations.lookup(None, args)
        outputs, _ = step.run_forward(step.shard([*state.values(), *args]))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def clip_grad_norm_(
        self, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False
    ) -> torch.Tensor:
        """
        `torch.nn.utils.clip_grad_norm_` of the module's gradients on the mesh: the norm of the whole
        gradient, the same on every rank, and every rank scales its gradients by the same factor.
        torch's own sees a sharded parameter's full-shaped `.grad` (this rank's block, zeros
        elsewhere), so each rank would get its own norm and clip by its own factor: the replicated
        parameters would drift apart between the ranks. Here each sharded gradient contributes its
        block, summed over the ranks (an all-reduce of the job; every rank calls it), and each
        replicated one its whole gradient once. Returns the total norm, as torch's does.
        """
        import torch.distributed as dist

        rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
        sharded: list[torch.Tensor] = []
        replicated: list[torch.Tensor] = []
        grads: list[torch.Tensor] = []
        for name, p in self._state().items():
            if not isinstance(p, torch.nn.Parameter) or p.grad is None:
                continue
            grads.append(p.grad)
            layout = self.param_layouts.get(name)
            parsed = parse_layout(layout, p.dim(), name) if layout else None
            axes = [k for k, a in enumerate(parsed or ()) if a.is_sharded]
            if not axes:
                replicated.append(p.grad.detach())
                continue
            n = p.shape[axes[0]] // len(self.mesh)
            sharded.append(p.grad.detach().narrow(axes[0], self.mesh.index(rank) * n, n))
        if not grads:
            return torch.tensor(0.0)
        device = grads[0].device
        norm_type = float(norm_type)

        def norms(tensors: list[torch.Tensor]) -> torch.Tensor:
            if not tensors:
                return torch.zeros((), device=device)
            each = torch.stack([torch.linalg.vector_norm(t.float(), norm_type).to(device) for t in tensors])
            return each.max() if norm_type == float("inf") else (each**norm_type).sum()

        part = norms(sharded)
        if world > 1:
            dist.all_reduce(part, op=dist.ReduceOp.MAX if norm_type == float("inf") else dist.ReduceOp.SUM)
        rest = norms(replicated)
        if norm_type == float("inf"):
            total = torch.maximum(part, rest)
        else:
            total = (part + rest) ** (1.0 / norm_type)
        if error_if_nonfinite and not torch.isfinite(total):
            raise RuntimeError(
                f"the total norm of order {norm_type} of the gradients of {self.name} is non-finite, so it cannot "
                "be clipped (error_if_nonfinite=False skips this check)"
            )
        scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
        with torch.no_grad():
            for g in grads:
                g.mul_(scale.to(g.device, g.dtype))
        return total

    def _specialize(self, examples: Sequence[torch.Tensor]) -> MeshStep:
        from hir.frontend.training import decompositions

        state = self._state()
        names = list(state)
        arg_names = self.specializations.signature.arg_names
        primals = [
            *[Primal(n, self.param_layouts.get(n), True, tuple(t.shape)) for n, t in state.items()],
            *[Primal(n, lay, False, tuple(x.shape)) for n, lay, x in zip(arg_names, self.layouts, examples)],
        ]
        tensors = [*state.values(), *examples]

        def run(*inputs: torch.Tensor) -> Any:
            params = dict(zip(names, inputs[: len(names)]))
            # Attention and norms as ops with a backward of their own (frontend/training_ops.py), or where
            # that op does not apply, as its math (frontend/sharded_heads_math.py).
            with (
                FusedTrainingOps(),
                sdpa_kernel(SDPBackend.MATH),
                user_lines(),
                refused_stored_tensors(self.fn, self.name),
                refused_observer_hooks(self.fn, self.name),
            ):
                return functional_call(self.fn, params, *split_call(self.fn, inputs[len(names) :]))

        try:
            # Traced with grad on also when the first call of a signature runs under no_grad (an
            # evaluation batch of a new size): the step's programs are the joint's, whatever the mode.
            with torch.enable_grad(), recorded_attributes(self.fn) as attributes:
                graphs = trace_joint(run, tensors, decompositions())
        except FrontendError:
            raise
        except Exception as err:  # torch's message about the user's code
            raise capture_error(err, "the training step could not be traced") from err
        self._attributes.add(attributes)
        s = self.settings
        on_cuda = any(t.is_cuda for t in tensors)

        def compile(imported: ImportedProgram, graph: str) -> CompiledFunction:
            return compile_imported(
                imported, f"<{self.name[1:-1]}.{graph}>", s.pipeline, s.options, on_cuda, s.num_streams,
                s.cuda_graph, s.measure_candidates, replay_must_win=True,
            )  # fmt: skip

        out_layout = self.layouts[0] if self.layouts else None
        return MeshStep(self.name, self.mesh, primals, out_layout, graphs, compile, self._state)


def _mesh_constant(e: Emitter, gm: GraphModule, node: Node, mode: MeshMode) -> SSAValue:
    """
    A one-element tensor constant of the traced code (`torch.tensor(v)`, `torch.tensor(self.scale)`)
    as a `fusion.full`, whole on every device (it goes with any form, as a 0-d buffer does); no
    other on a mesh.
    """
    with unset_fake_temporarily():
        constant = attribute_tensor(gm, node).detach()
    if constant.numel() != 1 or constant.dtype.is_complex:
        raise located_error(
            node, f"a tensor constant of {constant.numel()} values ({node.target}) is not supported on a mesh"
        )
    value = scalar_constant(e, node, constant)
    mode.forms[value] = Form(WHOLE)
    return value
