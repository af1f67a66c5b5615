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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree


def refuse_double_backward() -> None:
    """
    In a backward program's `autograd.Function.backward`: create_graph=True (grad mode on there)
    is an error, since the program records no graph and its gradients would silently have none
    (a gradient penalty's own gradient lost); AOT autograd's function refuses it too.
    """
    if torch.is_grad_enabled():
        raise RuntimeError(
            "a function compiled by hir.compile(..., training=True) has no double backward: "
            "its gradients cannot be differentiated again (create_graph=True)"
        )


@dataclass
class Graphs:
    """What the compilers and the partitioner saw of one specialization (filled as AOT compiles)."""

    programs: dict[str, Any] = field(default_factory=dict)
    """"forward" / "backward" -> the `GraphProgram` AOT autograd calls."""
    forward_outputs: int | None = None
    """How many of the forward graph's outputs are the function's (the partitioner's num_fwd_outputs)."""
    out_spec: pytree.TreeSpec | None = None
    """The structure the function returns, as traced (AOT autograd returns a tuple's leaves as a list)."""


class AotStep:
    """A specialization's callable: `step(state, *args)`, as AOT autograd's compiled function takes them."""

    def __init__(self, aot: Callable[..., Any], graphs: Graphs) -> None:
        self.aot = aot
        self.graphs = graphs
        self.programs = aot.programs  # type: ignore[attr-defined]
        self.out_spec: pytree.TreeSpec | None = None
        self.lean: LeanForm | None = None
        self._lean_checked = False

    def __call__(self, state: dict[str, torch.Tensor], *args: torch.Tensor) -> Any:
        if not self._lean_checked and self.out_spec is not None and "backward" in self.graphs.programs:
            self.lean = lean_form(self.graphs, self.out_spec.num_leaves, len(state) + len(args))
            self._lean_checked = True  # both programs exist: their form does not change
        if self.lean is not None and torch.is_grad_enabled():
            outputs = LeanStep.apply(self.lean, *state.values(), *args)
            return pytree.tree_unflatten(list(outputs), self.out_spec)  # type: ignore[arg-type]
        leaves = pytree.tree_leaves(self.aot(state, *args))
        if self.out_spec is None:
            self.out_spec = self.graphs.out_spec
            assert self.out_spec is not None, "the function was traced at its first call"
        return pytree.tree_unflatten(leaves, self.out_spec)


@dataclass(frozen=True)
class LeanForm:
    """The two programs of a specialization whose graphs have the plain form `LeanStep` runs."""

    forward: Any
    backward: Any
    results: int
    """How many of the forward's outputs are the function's results (the rest are saved)."""


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
    return LeanForm(forward, backward, results)


class LeanStep(torch.autograd.Function):
    """The forward program, its saved activations, and the backward program on the results' gradients."""

    @staticmethod
    def forward(ctx: Any, form: LeanForm, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:  # type: ignore[override]
        outputs = form.forward(list(inputs))
        ctx.form = form
        ctx.save_for_backward(*outputs[form.results :])
        return tuple(outputs[: form.results])

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:  # type: ignore[override]
        refuse_double_backward()
        form: LeanForm = ctx.form
        # The backward was traced with contiguous gradients, as AOT autograd passes them.
        tangents = [g.contiguous() for g in grads]
        gradients: Sequence[Any] = form.backward([*ctx.saved_tensors, *tangents])
        return (None, *gradients)


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
