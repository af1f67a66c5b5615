"""
The call of one training specialization on one device: AOT autograd's compiled function for the
first calls, then, once both programs exist, a `torch.autograd.Function` of our own that runs
them directly.

AOT autograd's runtime wrappers handle cases this frontend refuses or never produces (mutated
inputs, outputs that alias inputs or each other, tensor subclasses, saved symbolic sizes, RNG
state); on every call they flatten the arguments, check them against its metadata and wrap the
saved activations, about 75 us of host time before a step's first kernel on a GPU host (docs/
benchmarks.md, "One GPU"). `LeanStep` does what is left for the programs here: the forward's
outputs are the function's results then the activations to save, the backward's inputs those
activations then one gradient per result, its outputs one gradient per input. It is used only
where the traced graphs have exactly that form (`lean_form`); elsewhere every call stays with
AOT autograd.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from hir.frontend.errors import FrontendError
from hir.frontend.module_state import StateSpecs


def refuse_double_backward(grads: Sequence[Any] = ()) -> None:
    """
    In a backward program's `autograd.Function.backward`: create_graph=True (grad mode on there)
    is an error, since the program records no graph and its gradients would silently have none
    (a gradient penalty's own gradient lost); AOT autograd's function refuses it too. So are
    `grads` batched by `is_grads_batched=True` (the engine's vmap), which the program does not take.
    """
    if torch.is_grad_enabled():
        raise RuntimeError(
            "a function compiled by hir.compile(..., training=True) has no double backward: "
            "its gradients cannot be differentiated again (create_graph=True)"
        )
    batched = torch._C._functorch.is_legacy_batchedtensor
    if any(isinstance(g, torch.Tensor) and batched(g) for g in grads):
        raise RuntimeError(
            "a function compiled by hir.compile(..., training=True) has no batched backward: "
            "torch.autograd.grad(..., is_grads_batched=True) (a Jacobian with vectorize=True) cannot run "
            "its backward program on a batch of gradients: loop over the grad_outputs instead"
        )


def _refuse_double_backward_hook(grad: torch.Tensor | None) -> None:
    """A hook on a result of AOT autograd's function: grad mode on in a backward is create_graph=True."""
    refuse_double_backward((grad,))


@contextmanager
def _no_donated_buffers() -> Iterator[None]:
    """
    While AOT autograd compiles a step: no saved activation is marked as a buffer the backward
    may reuse ("donated", for Inductor's backward, which the programs here are not). AOT
    autograd's runtime refuses a backward with `retain_graph=True` (a GAN's two losses through
    one forward) where such buffers exist, even though the backward program here never
    overwrites what the forward saved.
    """
    from torch._functorch._aot_autograd import graph_compile

    original = getattr(graph_compile, "collect_bw_donated_buffer_idxs", None)
    if original is None:  # another torch: nothing to turn off
        yield
        return
    graph_compile.collect_bw_donated_buffer_idxs = lambda *args, **kwargs: []
    try:
        yield
    finally:
        graph_compile.collect_bw_donated_buffer_idxs = original


@dataclass
class Graphs:
    """What the compilers and the partitioner saw of one specialization (filled as AOT compiles)."""

    programs: dict[str, Any] = field(default_factory=dict)
    """"forward" / "backward" -> the `GraphProgram` AOT autograd calls."""
    forward_outputs: int | None = None
    """How many of the forward graph's outputs are the function's (the partitioner's num_fwd_outputs)."""
    out_spec: pytree.TreeSpec | None = None
    """The structure the function returns, as traced (AOT autograd returns a tuple's leaves as a list)."""
    reach: list[frozenset[int]] | None = None
    """Per result (a leaf of out_spec), the inputs (state, then arguments) autograd reaches from it."""
    written: frozenset[int] = frozenset()
    """The inputs the function updates in place (`x.mul_(2)`, a weight clamped under `torch.no_grad()`)."""
    mutated: dict[int, frozenset[int]] = field(default_factory=dict)
    """Of those, the ones autograd records the update of (not under no_grad), and the inputs their new value reaches."""
    input_names: list[str] = field(default_factory=list)
    """The inputs' names (the module's state, then the function's tensor arguments)."""


def reach_of(results: Sequence[Any], inputs: Sequence[Any], nodes: Sequence[Any] | None = None) -> list[frozenset[int]]:
    """
    Per result, the positions of the inputs its autograd graph reaches, as traced: eager autograd
    leaves the gradient of an input None where no result the loss uses reaches it (a head left
    out of this step's loss), and optimizers skip such parameters (no weight decay, no momentum).
    `nodes` are the inputs' autograd nodes before the function ran: an input it updated in place
    (`x.mul_(self.scale)`) has a new node since, and the walk goes on through it to the inputs
    the update reads.
    """
    tensors = [(k, t) for k, t in enumerate(inputs) if isinstance(t, torch.Tensor)]
    position = {id(t): k for k, t in tensors}
    if nodes is None:
        nodes = [t.grad_fn if isinstance(t, torch.Tensor) else None for t in inputs]
    # AOT autograd's traced inputs are no leaves: each has a node of its own (an error if reached twice).
    at_node = {node: k for k, node in enumerate(nodes) if node is not None}
    reach: list[frozenset[int]] = []
    for result in results:
        found: set[int] = set()
        if isinstance(result, torch.Tensor) and result.requires_grad:
            k = position.get(id(result))
            if k is not None and result.grad_fn is nodes[k]:  # an input returned as it came
                found.add(k)
            seen: set[Any] = set()
            stack = [result.grad_fn]
            while stack:
                node = stack.pop()
                if node is None or node in seen:
                    continue
                seen.add(node)
                if node in at_node:
                    found.add(at_node[node])
                    continue
                variable = getattr(node, "variable", None)  # an AccumulateGrad: an input's leaf
                if variable is not None and id(variable) in position:
                    found.add(position[id(variable)])
                stack.extend(next_node for next_node, _ in node.next_functions)
        reach.append(frozenset(found))
    return reach


def partial_reach(reach: Sequence[frozenset[int]]) -> bool:
    """Whether some input is reached from one result and not from another that reaches any input."""
    reaching = [r for r in reach if r]
    return any(r != reaching[0] for r in reaching)


class AotStep:
    """A specialization's callable: `step(state, *args)`, as AOT autograd's compiled function takes them."""

    def __init__(self, aot: Callable[..., Any], graphs: Graphs) -> None:
        self.aot = aot
        self.graphs = graphs
        self.programs = aot.programs  # type: ignore[attr-defined]
        self.out_spec: pytree.TreeSpec | None = None
        self.lean: LeanForm | None = None
        self._lean_checked = False
        self._unreached: frozenset[int] | None = None
        self.state_specs: StateSpecs = {}
        """The dtypes and shapes of the module's tensors the programs were traced for."""
        self.unreached_state: set[str] = set()
        """
        The module's tensors that no result of a traced step reached, shared by the function's steps
        (`_cut_unreached` below): a step's first call, which traces it, does not know its reach yet.
        """

    def __call__(self, state: dict[str, torch.Tensor], *args: torch.Tensor) -> Any:
        if torch.is_grad_enabled() and self.graphs.reach is not None:
            state, args = self._cut_unreached(state, args)
        elif torch.is_grad_enabled() and self.unreached_state:
            # The first call of a new step (an eval switch, a new batch size): a stale weight that the
            # steps traced before found unreached is passed detached, as later calls pass it.
            state = {
                n: t.detach() if n in self.unreached_state and t.grad_fn is not None else t for n, t in state.items()
            }
        if not self._lean_checked and self.out_spec is not None and "backward" in self.graphs.programs:
            self.lean = lean_form(self.graphs, self.out_spec.num_leaves, len(state) + len(args))
            self._lean_checked = True  # both programs exist: their form does not change
        if self.lean is not None and torch.is_grad_enabled():
            outputs = LeanStep.apply(self.lean, *state.values(), *args)
            return pytree.tree_unflatten(list(outputs), self.out_spec)  # type: ignore[arg-type]
        usage = None
        given = [*state.values(), *args]
        if torch.is_grad_enabled():
            refuse_updated_leaves(self.graphs, given)  # before the programs update it (the first call: after)
        if torch.is_grad_enabled() and (
            self.graphs.reach is None or partial_reach(self.graphs.reach) or self._gates_written(given)
        ):
            state, args, usage = _gated(self.graphs, state, args)
        with _no_donated_buffers() if self.out_spec is None else nullcontext():  # the first call compiles
            leaves = pytree.tree_leaves(self.aot(state, *args))
        if usage is not None:
            usage.carry_updates(self.graphs, given)
            # The gate's outputs reach `usage` through their grad_fn's ctx: kept in it they would
            # form a cycle through autograd's C++ nodes, which Python's gc cannot see, and the
            # call's inputs (and their gradients) would live as long as the process.
            usage.gated = {}
        if self._unreached is None and self.graphs.reach is not None:  # traced at this call
            self._find_unreached(list(state), len(given))
        for j, leaf in enumerate(leaves):
            if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                # create_graph=True: refused before AOT autograd's backward runs, as LeanStep refuses it.
                leaf.register_hook(_refuse_double_backward_hook)
                if usage is not None:
                    leaf.register_hook(usage.hook(j))
        if self.out_spec is None:
            self.out_spec = self.graphs.out_spec
            assert self.out_spec is not None, "the function was traced at its first call"
        return pytree.tree_unflatten(leaves, self.out_spec)

    def _gates_written(self, given: Sequence[Any]) -> bool:
        """
        Whether an input that requires grad is updated in place: AOT autograd's runtime writes it
        back as the first call's input was (through the gate there, a tensor with a history, not a
        leaf), so it goes through the gate at every call (a parameter clamped under `no_grad()` in
        forward was written back with `copy_` on the leaf itself from the second call on: an error).
        """
        return any(isinstance(given[k], torch.Tensor) and given[k].requires_grad for k in self.graphs.written)

    def _cut_unreached(
        self, state: dict[str, torch.Tensor], args: tuple[torch.Tensor, ...]
    ) -> tuple[dict[str, torch.Tensor], tuple[torch.Tensor, ...]]:
        """
        An input with a history (a tensor computed before the call, held as a plain attribute)
        that no result reaches is passed detached: the old `torch.nn.utils.weight_norm` keeps
        `fc.weight` computed from `weight_g` and `weight_v` at setup and recomputes it in forward
        (so does pruning), and an edge to the stale one made every backward run its graph, which
        the second one found freed (an edge whose gradient is None still runs the node). Eager
        autograd never reaches it. Leaves (parameters) keep their edge. The first call of a step
        traced later passes detached those its earlier steps found unreached (`unreached_state`).
        """
        if self._unreached is None:
            self._find_unreached(list(state), len(state) + len(args))
        assert self._unreached is not None
        if not self._unreached:
            return state, args
        flat = [*state.values(), *args]
        for k in self._unreached:
            if k < len(flat) and isinstance(flat[k], torch.Tensor) and flat[k].grad_fn is not None:
                flat[k] = flat[k].detach()
        return dict(zip(state, flat[: len(state)])), tuple(flat[len(state) :])

    def _find_unreached(self, state_names: list[str], inputs: int) -> None:
        reached = frozenset().union(*self.graphs.reach)  # type: ignore[union-attr]
        self._unreached = frozenset(range(inputs)) - reached
        self.unreached_state.update(name for k, name in enumerate(state_names) if k in self._unreached)


class _Usage:
    """
    Which results of one call the backward got a gradient for (hooks on the results record them),
    and which of the gated inputs updated in place the loss reads after the call.
    """

    def __init__(self, gated: dict[int, torch.Tensor]) -> None:
        self.used: set[int] = set()
        self.updated: set[int] = set()
        self.gated = gated
        """Per input position, the gate's output AOT autograd was given in its place."""

    def hook(self, j: int) -> Callable[[torch.Tensor | None], None]:
        def record(grad: torch.Tensor | None) -> None:
            if grad is not None:  # None: a result the loss does not use
                self.used.add(j)

        return record

    def carry_updates(self, graphs: Graphs, given: Sequence[Any]) -> None:
        """
        AOT autograd's runtime wrote an input's in-place update (`x.mul_(2)` in forward) into the
        gate's output it was given, with the update's history: the caller's tensor, which shares
        its memory, takes that history too (`copy_` of the same memory), as eager's in-place op
        gives it. Without it, the caller's tensor kept its old history and the loss's gradient
        through it skipped the update. A leaf that requires grad is refused here as eager refuses
        the in-place op on it.
        """
        refuse_updated_leaves(graphs, given)
        for k, alias in self.gated.items():
            if k in graphs.mutated:
                alias.register_hook(self._updated(k))
                given[k].copy_(alias)

    def _updated(self, k: int) -> Callable[[torch.Tensor | None], None]:
        def record(grad: torch.Tensor | None) -> None:
            if grad is not None:
                self.updated.add(k)

        return record


def refuse_updated_leaves(graphs: Graphs, given: Sequence[Any]) -> None:
    """A leaf that requires grad, which forward updates in place where autograd records it: eager's refusal."""
    for k in graphs.mutated:
        if isinstance(given[k], torch.Tensor) and given[k].is_leaf and given[k].requires_grad:
            name = graphs.input_names[k] if k < len(graphs.input_names) else f"input {k}"
            raise FrontendError(
                f"forward updates `{name}` in place, a leaf tensor that requires grad, which eager "
                "refuses too (a leaf Variable that requires grad is being used in an in-place operation): pass a "
                "tensor computed from it, or update a copy in forward (`x = x * 2`)"
            )


def _kept(
    reach: Sequence[frozenset[int]],
    used: Iterator[int] | Sequence[int],
    graphs: Graphs | None = None,
    updated: Sequence[int] = (),
) -> set[int]:
    """The inputs the used results and the used updated inputs reach: the ones eager autograd gives a gradient."""
    kept: set[int] = set()
    for j in used:
        kept |= reach[j]
    for k in updated:
        kept |= graphs.mutated[k]  # type: ignore[union-attr]
    return kept


class _InputGate(torch.autograd.Function):
    """
    Between the inputs that require grad and AOT autograd's function, whose backward gives every
    input a gradient (zeros for a result the loss does not use): None for the inputs no used
    result reaches, as eager autograd leaves them.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, usage: _Usage, graphs: Graphs, positions: tuple[int, ...], *inputs: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        ctx.usage, ctx.graphs, ctx.positions = usage, graphs, positions
        return tuple(t.detach() for t in inputs)  # the same memory, where the programs read it

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        reach = ctx.graphs.reach
        if reach is None:
            return (None, None, None, *grads)
        kept = _kept(reach, sorted(ctx.usage.used), ctx.graphs, sorted(ctx.usage.updated))
        return (None, None, None, *(g if k in kept else None for k, g in zip(ctx.positions, grads)))


def _gated(
    graphs: Graphs, state: dict[str, torch.Tensor], args: tuple[torch.Tensor, ...]
) -> tuple[dict[str, torch.Tensor], tuple[torch.Tensor, ...], _Usage | None]:
    """The inputs that require grad through an `_InputGate`, and the call's `_Usage` (None where none does)."""
    flat: list[Any] = [*state.values(), *args]
    positions = tuple(k for k, t in enumerate(flat) if isinstance(t, torch.Tensor) and t.requires_grad)
    if not positions:
        return state, args, None
    usage = _Usage({})
    gated = _InputGate.apply(usage, graphs, positions, *(flat[k] for k in positions))
    for k, t in zip(positions, gated):
        flat[k] = t
        usage.gated[k] = t
    return dict(zip(state, flat[: len(state)])), tuple(flat[len(state) :]), usage


@dataclass(frozen=True)
class LeanForm:
    """The two programs of a specialization whose graphs have the plain form `LeanStep` runs."""

    forward: Any
    backward: Any
    results: int
    """How many of the forward's outputs are the function's results (the rest are saved)."""
    reach: tuple[frozenset[int], ...] | None = None
    """Per result, the inputs it reaches, where some input is reached from one result and not another."""


def lean_form(graphs: Graphs, results: int, inputs: int) -> LeanForm | None:
    """
    The programs as a `LeanForm`, where both exist and the forward's first `results` outputs are
    the function's results, each computed by the program (not an input passed through, nor a
    view of one: AOT autograd regenerates such aliases), the backward takes the saved
    activations then one gradient per result, and returns one gradient per input; else None.
    """
    forward, backward = graphs.programs.get("forward"), graphs.programs.get("backward")
    if forward is None or backward is None or graphs.forward_outputs != results:
        return None
    if any(kind != "program" for kind, _ in forward.plan[:results]):
        return None
    saved = len(forward.plan) - results
    if len(backward.used) - len(backward.constants) != saved + results or len(backward.plan) != inputs:
        return None
    reach = graphs.reach
    return LeanForm(forward, backward, results, tuple(reach) if reach is not None and partial_reach(reach) else None)


class LeanStep(torch.autograd.Function):
    """The forward program, its saved activations, and the backward program on the results' gradients."""

    @staticmethod
    def forward(ctx: Any, form: LeanForm, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:  # type: ignore[override]
        outputs = form.forward(list(inputs))
        ctx.form = form
        ctx.save_for_backward(*outputs[form.results :])
        results = tuple(outputs[: form.results])
        if form.reach is not None:  # the backward tells the results the loss uses (None) from the others
            ctx.set_materialize_grads(False)
            ctx.like = [(r.shape, r.dtype, r.device) for r in results]
        return results

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        refuse_double_backward(grads)
        form: LeanForm = ctx.form
        # The backward was traced with contiguous gradients, as AOT autograd passes them.
        if form.reach is not None:
            used = [j for j, g in enumerate(grads) if g is not None]
            grads = tuple(
                g if g is not None else torch.zeros(shape, dtype=dtype, device=device)
                for g, (shape, dtype, device) in zip(grads, ctx.like)
            )
        tangents = [g.contiguous() for g in grads]
        gradients: Sequence[Any] = form.backward([*saved_tensors(ctx), *tangents])
        if form.reach is not None:  # None for the inputs no used result reaches, as in eager
            kept = _kept(form.reach, used)
            gradients = [g if k in kept else None for k, g in enumerate(gradients)]
        return (None, *gradients)


def saved_tensors(ctx: Any) -> tuple[torch.Tensor, ...]:
    """
    `ctx.saved_tensors`, where a saved view of a parameter (a weight's transpose, taken in the
    forward as eager autograd keeps it) whose parameter was updated in place since the forward (an
    `optimizer.step()` before this `backward()`) raises eager's error for that update: torch's own
    says "A view was created in no_grad mode ... modified inplace with grad mode enabled", which
    names neither the update nor the tensor (the forward runs under no_grad: its programs write
    their results in place).
    """
    try:
        return ctx.saved_tensors
    except RuntimeError as err:
        if not str(err).startswith("A view was created in no_grad mode"):
            raise
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace operation: a "
            "parameter (or input) that the compiled forward saved for its backward was updated in place between "
            "that forward and this backward() (an optimizer.step(), or an in-place update under torch.no_grad()), "
            "as eager autograd refuses too: run backward() before updating it"
        ) from None


def _position(program: Any, graph_input: int) -> int | None:
    """A graph input's position among the compiled program's arguments (the graph inputs it takes), or None."""
    if not program.used[graph_input]:
        return None
    return sum(program.used[:graph_input])


def lend_forward(forward: Any, state: int, results: int | None) -> None:
    """
    One device: the forward's graph reads the parameters (its first `state` inputs, updated in
    place by an optimizer, so at the same memory every step) where they are, and lends the saved
    activations (its outputs after the `results` the function returns) to the backward as views of
    its buffers (`CompiledFunction.lent_outputs`): a replay then copies in only the function's
    arguments.
    """
    compiled = forward.compiled
    if compiled is None or results is None:
        return
    compiled.borrowed_inputs = frozenset(p for j in range(state) if (p := _position(forward, j)) is not None)
    compiled.lent_outputs = frozenset(k for kind, k in forward.plan[results:] if kind == "program")


def borrow_backward(backward: Any, forward: Any, state: int, results: int | None) -> None:
    """
    The backward's graph reads where they are the saved activations the forward lends and the
    parameters it saved (its first inputs are the forward's outputs after `results`, in order).
    A step whose forward ran eagerly passes them elsewhere, and runs the backward eagerly too.
    """
    compiled = backward.compiled
    if compiled is None or forward is None or forward.compiled is None or results is None:
        return
    lent = forward.compiled.lent_outputs
    borrowed: set[int] = set()
    for i, (kind, k) in enumerate(forward.plan[results:]):
        lent_activation = kind == "program" and k in lent
        saved_parameter = kind == "input" and k < state
        if i >= len(backward.used) or not (lent_activation or saved_parameter):
            continue
        if (p := _position(backward, i)) is not None:
            borrowed.add(p)
    compiled.borrowed_inputs = frozenset(borrowed)
    # The gradients: handed to autograd as the graph's buffers, not copied (frontend/handed_outputs.py).
    # A step whose gradients are dropped before the next backward (`zero_grad()`) copies none;
    # gradients still held there (accumulated over micro-batches) make that backward run eagerly.
    compiled.hands_out_results = True
