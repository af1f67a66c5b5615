"""
The batch in stream chunks, as a candidate lowering that `hir.compile`'s first call measures.

On one GPU, a block whose phases load the GPU differently (GEMMs, then attention, then GEMMs)
can run faster with its batch in two stream chunks: the second chunk's projections overlap the
first chunk's attention (docs/benchmarks.md, "Attention block"). Whether it does depends on the
shapes and the machine, so `hir.compile` measures it rather than assumes it: where the caller gave
no layouts, the program is imported a second time from the same capture with the leading (batch)
axis of each input in `BATCH_CHUNKS` stream chunks, lowered, and timed at the first call beside
the program as written; the faster is kept (`CompiledFunction.measured` shows both).

A program that cannot run chunk by chunk (an op reduces over the batch, a view regroups it) is
refused by the import or the lowering, and then simply has no such candidate; nor has one that
updates a buffer or an argument in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from xdsl.utils.exceptions import DiagnosticException

from hir.frontend.errors import FrontendError
from hir.frontend.importer import ImportedProgram, import_program

BATCH_CHUNKS = 2
NAME = f"the batch in {BATCH_CHUNKS} stream chunks"
"""How `CompiledFunction.measured` names the candidate."""


def batch_layouts(examples: Sequence[Any]) -> list[str | None] | None:
    """
    `[stream(N), serial, ...]` for each tensor whose leading axis is the first tensor's batch
    (of rank >= 2, a multiple of N), None for the others; None where there is no such batch.
    """
    tensors = [t for t in examples if isinstance(t, torch.Tensor)]
    if not tensors or tensors[0].dim() < 2:
        return None
    batch = tensors[0].shape[0]
    if batch < BATCH_CHUNKS or batch % BATCH_CHUNKS:
        return None

    def layout(t: Any) -> str | None:
        if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.shape[0] != batch:
            return None
        return "[" + ", ".join([f"stream({BATCH_CHUNKS})", *["serial"] * (t.dim() - 1)]) + "]"

    return [layout(t) for t in examples]


def streamed_import(
    fn: Callable[..., Any] | torch.nn.Module, examples: Sequence[Any], imported: ImportedProgram
) -> ImportedProgram | None:
    """`imported`'s capture imported again with the batch in stream chunks; None where it cannot be."""
    layouts = batch_layouts(examples)
    if layouts is None or imported.exported is None or imported.signature.updates:
        return None  # an update (a KV cache written at positions) writes state the chunks would share
    try:
        streamed = import_program(fn, examples, layouts, exported=imported.exported)
    except (FrontendError, DiagnosticException):
        return None
    streamed.exported = None  # not kept: it holds the module's tensors as they were
    if _inputs(streamed) != _inputs(imported):  # the same program inputs, in the same order
        return None
    return streamed


def _inputs(imported: ImportedProgram) -> list[tuple[str, int | None, str | None]]:
    return [(s.kind, s.index, s.name) for s in imported.signature.inputs]


def batch_stream_candidates(
    fn: Callable[..., Any] | torch.nn.Module,
    examples: Sequence[Any],
    imported: ImportedProgram,
    compile_again: Callable[[ImportedProgram], Any],
) -> list[tuple[str, Any]]:
    """The candidate, as (what it is, its compiled function), where the import and the lowering take it."""
    streamed = streamed_import(fn, examples, imported)
    if streamed is None:
        return []
    try:
        return [(NAME, compile_again(streamed))]
    except (FrontendError, DiagnosticException):  # a lowering that refuses the chunks
        return []
