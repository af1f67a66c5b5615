"""
frontend/batch_streams.py: hir.compile's candidate with the batch in stream chunks. On a GPU the
first call measures it against the program as written; here the candidate is made by hand on CPU
and the timer is replaced, so that the choice is known.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from test_first_call_measurement import timer
from test_model_blocks import BLOCKS

import hir
from hir.frontend import compiled as compiled_module
from hir.frontend.batch_streams import NAME, batch_layouts, batch_stream_candidates
from hir.frontend.compiled import compile_imported
from hir.frontend.importer import import_program
from hir.frontend.lowering_choice import PLAIN_POLICY


class Attention(torch.nn.Module):
    """Projections, causal attention, output projection and a residual, on [batch, seq, hidden]."""

    def __init__(self, hidden: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(hidden, hidden, bias=False) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, H = x.shape
        q, k, v = (p(x).view(B, T, self.heads, H // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.o(a.transpose(1, 2).reshape(B, T, H))


def with_candidate(model: torch.nn.Module, x: torch.Tensor) -> hir.CompiledFunction:
    """What hir.compile builds on a GPU, on the CPU: the program as written, and the candidate from its capture."""

    def compile_on_cpu(imported: Any) -> hir.CompiledFunction:
        return compile_imported(imported, "<Attention>", "stream-lowering", {}, False, cuda_graph=False)

    imported = import_program(model, (x,))
    compiled = compile_on_cpu(imported)
    compiled.layout_candidates = batch_stream_candidates(model, (x,), imported, compile_on_cpu)
    return compiled


@pytest.mark.parametrize(
    ("times", "streamed"),
    # Within 3 % the program as written stays: the candidate holds all its intermediates at once.
    [([2.0, 1.0], True), ([1.0, 2.0], False), ([1.0, 0.98], False), ([1.0, 0.96], True)],
)
def test_the_faster_of_the_two_is_kept(monkeypatch: pytest.MonkeyPatch, times: list[float], streamed: bool) -> None:
    torch.manual_seed(0)
    model, x = Attention(), torch.randn(4, 8, 32)
    compiled = with_candidate(model, x)
    assert [what for what, _ in compiled.layout_candidates] == [NAME]
    monkeypatch.setattr(compiled_module, "medians_interleaved", timer(times))
    with torch.no_grad():
        for seed in range(3):
            x = torch.randn(4, 8, 32, generator=torch.Generator().manual_seed(seed))
            torch.testing.assert_close(compiled(x), model(x))
    # The program as written has no layouts: hir.compile segments it with its plain-program policy.
    as_written = f"stream-lowering{{policy={PLAIN_POLICY}}}"
    assert compiled.measured == {as_written: times[0], f"stream-lowering, {NAME}": times[1]}
    assert ("stream(2)" in compiled.fusion_text) == streamed
    assert ("hir.for" in str(compiled.module)) == streamed
    assert not compiled.layout_candidates  # measured once


def test_a_program_that_mixes_the_batch_has_no_candidate() -> None:
    """A sum over the batch cannot run chunk by chunk: the import refuses, and there is no candidate."""

    def pooled(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (x @ w).sum(0)

    x, w = torch.randn(4, 8, 16), torch.randn(16, 16)
    assert batch_layouts((x, w)) == ["[stream(2), serial, serial]", None]
    assert batch_stream_candidates(pooled, (x, w), import_program(pooled, (x, w)), lambda again: None) == []


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        ([(3, 8)], None),  # an odd batch
        ([(1, 8)], None),
        ([(8,)], None),  # no batch axis
        ([(4, 8), (4, 2, 2)], ["[stream(2), serial]", "[stream(2), serial, serial]"]),
        ([(4, 8), (8, 8), (4,)], ["[stream(2), serial]", None, None]),  # another leading extent, a vector
    ],
    ids=str,
)
def test_batch_layouts(shapes: list[tuple[int, ...]], expected: list[str | None] | None) -> None:
    assert batch_layouts([torch.empty(s) for s in shapes]) == expected


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_gpu_compile_measures_the_batch_in_stream_chunks() -> None:
    torch.manual_seed(0)
    model = Attention(64, 4).cuda()
    x = torch.randn(4, 16, 64, device="cuda")
    compiled = hir.compile(model, (x,))
    assert [what for what, _ in compiled.layout_candidates] == [NAME]
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 16, 64, device="cuda")
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert any(NAME in key for key in compiled.measured), compiled.measured
    as_written = hir.compile(model, (x,), ["[serial, serial, serial]"])  # layouts given: no candidate
    assert not as_written.layout_candidates


def test_a_candidate_that_runs_out_of_memory_loses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured beside the program as written, a candidate may not fit: it loses, the call goes on."""
    torch.manual_seed(0)
    model, x = Attention(), torch.randn(4, 8, 32)
    compiled = with_candidate(model, x)
    ((_, streamed),) = compiled.layout_candidates
    original = compiled._run

    def run(inputs: list[Any], communicator: Any, device: torch.device, graph: bool, program: Any = None, **kw: Any):
        if program is streamed.program:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(inputs, communicator, device, graph, program, **kw)

    monkeypatch.setattr(compiled, "_run", run)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    assert compiled.measured[f"stream-lowering, {NAME}"] == float("inf")
    assert "stream(2)" not in compiled.fusion_text


BATCH_COUPLED: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "flip": lambda x: x.flip(0) * 2,
    "roll": lambda x: torch.roll(x, 1, 0) + 1,
    "cumsum": lambda x: x.cumsum(0),
    "strided slice": lambda x: x[::2] * 2,
    "difference": lambda x: x[1:] - x[:-1],
    "cat": lambda x: torch.cat([x, x * 2], 0),
    "contraction over the batch": lambda x: torch.einsum("bij,bik->jk", x, x),
    "gather": lambda x: x[torch.tensor([1, 0, 3, 2])] + 1,
    "softmax over the batch": lambda x: torch.softmax(x, 0),
    "the first row": lambda x: x + x[0],
    "regrouped": lambda x: x.reshape(2, -1) * 2,  # stream(2) on the outer factor: chunk i is rows 2i, 2i+1
    "transposed": lambda x: x.transpose(0, 1) * 2,
}


@pytest.mark.parametrize("name", BATCH_COUPLED)
def test_a_program_that_couples_the_batch_has_no_candidate_or_an_exact_one(name: str) -> None:
    """What the batch's rows do to each other: the candidate is refused, or computes the same values."""
    fn, x = BATCH_COUPLED[name], torch.randn(4, 6, 8)

    def compile_on_cpu(imported: Any) -> hir.CompiledFunction:
        return compile_imported(imported, f"<{name}>", "stream-lowering", {}, False, cuda_graph=False)

    found = batch_stream_candidates(fn, (x,), import_program(fn, (x,)), compile_on_cpu)
    for _, streamed in found:
        torch.testing.assert_close(streamed(x), fn(x))
    assert bool(found) == (name in ("regrouped", "transposed"))


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_the_model_blocks_candidates_compute_what_the_blocks_do(name: str) -> None:
    """nanoGPT, Llama, MoE, embeddings, convolutions, each with its batch in 2 stream chunks: the block's values."""
    torch.manual_seed(0)
    module, inputs = BLOCKS[name]()
    module = module.eval()

    def compile_on_cpu(imported: Any) -> hir.CompiledFunction:
        return compile_imported(imported, f"<{name}>", "stream-lowering", {}, False, cuda_graph=False)

    found = batch_stream_candidates(module, inputs, import_program(module, inputs), compile_on_cpu)
    assert [what for what, _ in found] == [NAME]  # each block runs its batch's rows independently
    ((_, streamed),) = found
    assert "stream(2)" in streamed.fusion_text
    with torch.no_grad():
        torch.testing.assert_close(streamed(*inputs), module(*inputs), rtol=1e-4, atol=1e-4)
