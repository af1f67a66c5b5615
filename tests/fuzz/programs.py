"""
Random valid single-device fusion programs: the strategy `fusion_programs()`.

What a program looks like: `func.func @main` with 1-4 inputs of one element type (float32 half the
time, else f64, f16, bf16, i8-i64 or i1), rank 1-4, extents 1..6 drawn from a small per-program
pool so shapes are shared (now and then 0: empty tensors), 1-10 fusion ops (casts switch element
types) and 1-3 returned op results. Every op result gets a random `#fusion.parallel` encoding:
serial (with or without an explicit all-serial encoding), `stream` on an axis, or `stream(N)` with
N dividing the extent. Each value carries a *hint*, the stream axis of its nearest
stream-parallel ancestor mapped through the ops' axis maps (`dialects/shape_rules.py`), and a
result often takes that axis again, so chains of stream ops whose axes map through one another
(one loop, one segment) alternate with serial ops between them (a loop ends, a new one follows).
Shapes and axis maps come from the shape rules, so every program verifies: a verifier error on a
generated program is a bug here.

Values stay finite and in range: each value carries a bound on its magnitude (below its element
type's limit) and, when it is known to be positive, a lower bound. `exp` only takes small values,
a `div` denominator is known positive (an `exp(tanh(x))` is built when none exists), and an op
whose bound would pass the limit becomes a `tanh` (or a copy) instead. Ops that torch does not run
on an element type (`neg` of a boolean, an integer matmul on CUDA, max over an empty axis) are not
generated, and a float is cast to an integer or a boolean only when it is computed exactly alike
slice by slice (`Value.exact`).

Stream axes that stream-lowering refuses with a diagnostic (`UNSLICEABLE`, `PER_USE_SLICING`)
mostly turn serial; one in `REFUSAL_RATE` is kept and the program marked `may_reject`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from .builder import MAX_OPS, MAX_RESULTS, OP_CHOICES, Builder, extent_pool, input_element_type
from .values import UNANNOTATED, FuzzProgram


def finish_program(builder: Builder, seed: int, world_size: int = 1, unannotate: bool = False) -> FuzzProgram:
    """
    The function text: the last op's result and up to two more (unused values first) are returned.
    With `unannotate`, some of the other op results (at least one, when there is one) lose their
    `#fusion.parallel` encoding, for fusion-propagate-sharding to place them.
    """
    draw = builder.draw
    results = [v for v in builder.values if v.name.startswith("%v")]
    returned = [results[-1]]
    others = sorted(results[:-1], key=lambda v: v.uses > 0)  # unused values first
    for _ in range(draw(st.integers(0, min(MAX_RESULTS - 1, len(others))))):
        returned.append(others.pop(draw(st.integers(0, len(others) - 1)) if draw(st.booleans()) else 0))
    if unannotate and (intermediates := [v for v in results if all(v is not r for r in returned)]):
        chosen = [v for v in intermediates if draw(st.booleans())] or [intermediates[-1]]
        for v in chosen:
            v.unannotated = True
        builder.num_stream_ops -= sum(v.stream is not None for v in chosen)
        builder.facts.add(UNANNOTATED)
    lines = [builder.line(*record) for record in builder.records]
    args = ", ".join(f"{v.name}: {v.type}" for v in builder.inputs)
    signature = ", ".join(v.type for v in returned)
    text = (
        f"func.func @main({args}) -> ({signature}) {{\n"
        + "\n".join(lines)
        + f"\n  func.return {', '.join(v.name for v in returned)} : {signature}\n}}\n"
    )
    return FuzzProgram(
        text,
        seed,
        len(lines),
        builder.num_stream_ops,
        builder.may_reject,
        world_size,
        frozenset(builder.facts),
    )


def build_ops(builder: Builder, max_ops: int, choices: Sequence[str] = OP_CHOICES) -> None:
    """1..max_ops ops; a list of kinds (rather than a count) balances short and long programs, and shrinks by deleting ops."""
    kinds = builder.draw(st.lists(st.sampled_from(choices), min_size=1, max_size=max_ops))
    builder.ops_left = max_ops  # helper ops (a div's denominator, a fallback) count too
    for i, kind in enumerate(kinds):
        if builder.ops_left <= 0:
            break
        builder.final_op = i == len(kinds) - 1 or builder.ops_left == 1
        builder.op(kind)
    if not builder.lines:  # every op was infeasible: one that always fits
        builder.fallback()


@st.composite
def fusion_programs(draw: st.DrawFn, max_ops: int = MAX_OPS, int_matmul: bool = True) -> FuzzProgram:
    """A random valid single-device fusion-level module (see the module docstring)."""
    builder = Builder(draw, extent_pool(draw), input_element_type(draw), int_matmul=int_matmul)
    for _ in range(draw(st.integers(1, 2))):
        if builder.inputs and draw(st.booleans()):
            builder.new_input(builder.inputs[-1].shape)  # the same shape: elementwise ops combine them
        else:
            builder.new_input(builder.shape())
    build_ops(builder, max_ops)
    return finish_program(builder, draw(st.integers(0, 2**16)))
