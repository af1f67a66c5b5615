"""
`hir.compile`d functions called with shapes other than the example's: one specialization per input
signature (shapes, dtypes, device), capped, and call-time errors that name the argument and its
shape. Each case against eager torch on random data.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import torch
from ranks import run_ranks

import hir
from hir.frontend.specialize import CallError, SpecializationWarning

REPO = Path(__file__).resolve().parent.parent


class Mlp(torch.nn.Module):
    def __init__(self, hidden: int = 16, ffn: int = 32) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, ffn)
        self.fc2 = torch.nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(x))) + residual


class Scores(torch.nn.Module):
    """Batched [B, S, H] attention scores: the batch and the sequence length both change."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.q = torch.nn.Linear(hidden, hidden)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        q = self.q(tokens)
        return torch.softmax(q @ tokens.transpose(1, 2) * 0.25, dim=-1)


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def test_a_new_batch_size_is_compiled_once_and_matches_eager() -> None:
    torch.manual_seed(0)
    mlp = Mlp()
    compiled = hir.compile(mlp, (randn(8, 16), randn(8, 16, seed=1)))
    for rows in (8, 3, 12, 3, 8):
        x, r = randn(rows, 16, seed=rows), randn(rows, 16, seed=rows + 1)
        torch.testing.assert_close(compiled(x, r), mlp(x, r))
    assert compiled.specializations is not None
    assert [key[0].shape for key in compiled.specializations.keys] == [(12, 16), (3, 16), (8, 16)]
    assert compiled.specialization(randn(8, 16), randn(8, 16)) is compiled  # the example's, bound at its call
    three = compiled.specialization(randn(3, 16), randn(3, 16))
    assert three is not compiled
    assert "3x32xf32" in three.fusion_text


@torch.no_grad()
def test_batch_and_sequence_length_change() -> None:
    torch.manual_seed(0)
    scores = Scores()
    compiled = hir.compile(scores, (randn(2, 8, 16),))
    for batch, length in ((2, 8), (1, 5), (3, 8), (2, 11)):
        tokens = randn(batch, length, 16, seed=batch * length)
        torch.testing.assert_close(compiled(tokens), scores(tokens))
    assert compiled.specializations is not None
    assert len(compiled.specializations.keys) == 4


@torch.no_grad()
def test_stream_layouts_are_specialized_per_shape() -> None:
    torch.manual_seed(0)
    mlp = Mlp()
    layouts = ["[stream(2), serial]", "[stream(2), serial]"]
    compiled = hir.compile(mlp, (randn(8, 16), randn(8, 16)), layouts, "[stream(2), serial]")
    x, r = randn(6, 16, seed=3), randn(6, 16, seed=4)
    torch.testing.assert_close(compiled(x, r), mlp(x, r))
    with pytest.raises(CallError) as err:
        compiled(randn(5, 16), randn(5, 16))
    assert str(err.value) == (
        "<call>: error: <Mlp> cannot be specialized for (x: float32[5, 16], residual: float32[5, 16]): "
        "<layouts>: error: argument 'x': stream(2) does not divide axis 0 of extent 5"
    )


@torch.no_grad()
def test_the_cache_is_capped() -> None:
    torch.manual_seed(0)
    mlp = Mlp()
    compiled = hir.compile(mlp, (randn(2, 16), randn(2, 16)), max_specializations=2)

    def check(rows: int) -> None:
        x, r = randn(rows, 16, seed=rows), randn(rows, 16, seed=100 + rows)
        torch.testing.assert_close(compiled(x, r), mlp(x, r))

    check(2)
    check(3)
    with pytest.warns(SpecializationWarning, match=r"more than 2 input signatures .* max_specializations"):
        check(4)
    check(2)  # dropped first: compiled again, without a second warning
    assert compiled.specializations is not None
    assert [key[0].shape for key in compiled.specializations.keys] == [(4, 16), (2, 16)]
    assert compiled.specializations.dropped == 2
    assert compiled.specialization(randn(2, 16), randn(2, 16)) is not compiled  # the example's was dropped
    with pytest.raises(hir.FrontendError, match="max_specializations must be >= 1, got 0"):
        hir.compile(mlp, (randn(2, 16), randn(2, 16)), max_specializations=0)


def call_error(compiled: hir.CompiledFunction, *args: object) -> str:
    with pytest.raises(CallError) as err:
        compiled(*args)  # type: ignore[arg-type]
    return str(err.value)


def test_call_errors_name_the_argument_and_its_shape() -> None:
    torch.manual_seed(0)
    mlp = Mlp()
    x, r = randn(4, 16), randn(4, 16, seed=1)
    compiled = hir.compile(mlp, (x, r))
    assert call_error(compiled, x) == "<call>: error: <Mlp> takes 2 tensors (x, residual), got 1"
    assert call_error(compiled, x, [1.0]) == (
        "<call>: error: <Mlp>: argument 'residual' is of type list, not a tensor (nor None, a bool, int, float or "
        "str, which the program is specialized for)"
    )
    assert call_error(compiled, x, randn(16)) == (
        "<call>: error: <Mlp>: argument 'residual' has shape [16] (1-D), but <Mlp> was compiled for 2-D tensors "
        "like [4, 16]: its layouts and program are per axis (compile it again for another rank)"
    )
    assert call_error(compiled, x, r.to(torch.complex64)) == (
        "<call>: error: <Mlp>: argument 'residual' (complex64[4, 16]) has a dtype the compiler does not support "
        "(supported: float16, bfloat16, float32, float64, bool, int8, int16, int32, int64, uint8)"
    )
    assert call_error(compiled, x, r.to("meta")) == (
        "<call>: error: <Mlp>: the arguments are on different devices ('x' on cpu, 'residual' on meta)"
    )
    assert call_error(compiled, x.clone().requires_grad_(), r) == (
        "<call>: error: <Mlp>: argument 'x' (float32[4, 16]) requires grad, and this compiled function has no "
        "backward: compile with training=True, or call it under torch.no_grad()"
    )
    with torch.no_grad():
        torch.testing.assert_close(compiled(x.clone().requires_grad_(), r), mlp(x, r))
    # A dtype the module's float32 weights do not take: eager torch refuses it too.
    message = call_error(compiled, x.double(), r)
    assert message.startswith("<call>: error: <Mlp> cannot be specialized for (x: float64[4, 16], residual: ")
    assert message.endswith(
        "('x' is torch.float64; <Mlp> was compiled for x: float32[4, 16], residual: float32[4, 16])"
    )
    assert not re.search(r"input #\d|<Mlp>:\d+:\d+", message)


def test_a_shape_the_code_cannot_take_is_one_error_and_no_logged_traceback() -> None:
    """torch's fake tensors log the traceback of the failing op on stderr; the user gets hir's error alone."""
    torch.manual_seed(0)
    mlp = Mlp()
    x, r = randn(4, 16), randn(4, 16, seed=1)
    compiled = hir.compile(mlp, (x, r))
    logged: list[logging.LogRecord] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(record)

    log, kept = logging.getLogger("torch._subclasses.fake_tensor"), Kept()
    log.addHandler(kept)
    try:
        message = call_error(compiled, randn(4, 15), r)
    finally:
        log.removeHandler(kept)
    assert message.startswith("<call>: error: <Mlp> cannot be specialized for (x: float32[4, 15], residual: "), message
    assert not [record.getMessage() for record in logged if record.levelno >= logging.ERROR]


def test_a_call_with_too_few_arguments_counts_arguments_where_not_all_are_tensors() -> None:
    def scaled(x: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
        return x * scale

    x = randn(4, 16)
    compiled = hir.compile(scaled, (x,))
    assert call_error(compiled) == "<call>: error: <scaled> takes 2 arguments (x, scale), got 0"
    torch.testing.assert_close(compiled(x, 3.0), x * 3.0)


class Classifier(torch.nn.Module):
    """Hugging Face's optional arguments: `attention_mask=None`, `labels=None`, `return_dict=True`."""

    def __init__(self, hidden: int = 16, classes: int = 3) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(20, hidden)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, input_ids, attention_mask=None, labels=None, return_dict=True):
        h = self.embed(input_ids)
        if attention_mask is None:
            pooled = h.mean(1)
        else:
            mask = attention_mask[..., None].to(h.dtype)
            pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        logits = self.head(pooled)
        loss = None if labels is None else torch.nn.functional.cross_entropy(logits, labels)
        return {"loss": loss, "logits": logits} if return_dict else (loss, logits)


@torch.no_grad()
def test_none_and_numbers_are_arguments_the_program_is_specialized_for() -> None:
    """
    An optional argument left as None, or a Python value, is a value torch.export specializes the
    program for: a call with another value (a mask where the example had None, return_dict=False)
    is another specialization, and trailing arguments whose defaults are such values may be left out.
    """
    torch.manual_seed(0)
    model = Classifier()
    ids, mask, labels = (
        torch.randint(0, 20, (2, 5)),
        torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]),
        torch.tensor([0, 2]),
    )
    compiled = hir.compile(model, (ids, None, labels))
    calls = [
        ((ids, None, labels), {}),
        ((ids,), {"labels": labels}),
        ((ids, mask, labels), {}),
        ((ids,), {}),
        ((torch.randint(0, 20, (3, 7)), None, None, False), {}),
    ]
    for args, kwargs in calls:
        torch.testing.assert_close(compiled(*args, **kwargs), model(*args, **kwargs))
    assert [[str(spec) for spec in key] for key in compiled.specializations.keys] == [
        ["int64[2, 5]", "None", "int64[2]", "True"],
        ["int64[2, 5]", "int64[2, 5]", "int64[2]", "True"],
        ["int64[2, 5]", "None", "None", "True"],
        ["int64[3, 7]", "None", "None", "False"],
    ]
    with pytest.raises(hir.FrontendError, match=r"<layouts>: error: argument 'attention_mask' is None, not a tensor"):
        hir.compile(model, (ids, None), in_layouts=[None, "[stream, serial]"])


def test_a_call_like_the_last_one_is_still_checked() -> None:
    """A call with the last call's signature skips the key's rebuild, not what the checks read."""
    torch.manual_seed(0)
    mlp = Mlp()
    x, r = randn(4, 16), randn(4, 16, seed=1)
    compiled = hir.compile(mlp, (x, r))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, r), mlp(x, r))
        torch.testing.assert_close(compiled(x.clone().requires_grad_(), r), mlp(x, r))
    # Grad mode is on now: the same tensors are a call the function cannot take.
    assert "requires grad, and this compiled function has no backward" in call_error(
        compiled, x.clone().requires_grad_(), r
    )
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, r), mlp(x, r))
        assert call_error(compiled, x, r.to("meta")).endswith("('x' on cpu, 'residual' on meta)")
        y = randn(6, 16, seed=2)
        torch.testing.assert_close(compiled(y, y), mlp(y, y))  # a new signature after the cached one


def test_a_function_gets_its_parameter_names() -> None:
    def scaled(inputs: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return torch.tanh(inputs) * scale

    compiled = hir.compile(scaled, (randn(4, 8), randn(4, 8)))
    a, b = randn(7, 8, seed=2), randn(7, 8, seed=3)
    torch.testing.assert_close(compiled(a, b), scaled(a, b))
    assert call_error(compiled, a, randn(7, 8, 1)).startswith(
        "<call>: error: <scaled>: argument 'scale' has shape [7, 8, 1] (3-D)"
    )


def test_a_shape_the_mesh_cannot_shard_is_an_error_in_local_and_logical_terms() -> None:
    """On a mesh a call passes its local shard; the logical rows must split into chunks of the mesh."""
    torch.manual_seed(0)
    mlp = Mlp()
    rows = "[(stream(2), didx), serial]"
    compiled = hir.compile(
        mlp,
        (randn(8, 16), randn(8, 16)),
        [rows, rows],
        [rows],
        mesh=[0, 1],
        param_layouts={"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"},
    )
    assert call_error(compiled, randn(3, 16), randn(3, 16)) == (
        "<call>: error: <Mlp> cannot be specialized for (x: float32[3, 16], logical [6, 16], residual: "
        "float32[3, 16], logical [6, 16]): <layouts>: error: argument 'x': 6 rows do not split into 2 chunks of "
        "2 devices"
    )


@pytest.mark.distributed
def test_new_row_counts_on_two_gloo_ranks() -> None:
    """Each rank passes its shard; every new row count is a specialization of its own, against eager torch."""
    result = run_ranks([str(REPO / "tests" / "shapes_mesh_driver.py")], timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every row count matches eager torch, also after the parameters changed" in result.stdout


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@torch.no_grad()
def test_each_specialization_replays_its_own_graph_on_a_gpu() -> None:
    torch.manual_seed(0)
    mlp = Mlp().cuda()
    compiled = hir.compile(mlp, (randn(8, 16).cuda(), randn(8, 16).cuda()))
    for rows in (8, 4, 8, 4):
        x, r = randn(rows, 16, seed=rows).cuda(), randn(rows, 16, seed=-rows).cuda()
        torch.testing.assert_close(compiled(x, r), mlp(x, r))
    for rows in (8, 4):
        specialization = compiled.specialization(randn(rows, 16).cuda(), randn(rows, 16).cuda())
        (captured,) = specialization.program.graphs.values()
        assert captured.replays >= 2  # (and the first call's measurement, where the model left two lowerings close)


class _ScaledByMode(torch.nn.Module):
    """A forward that follows its train / eval flag without randomness: the trace takes one branch."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.inner = torch.nn.Dropout(0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return y * 2.0 if self.training else y * 3.0 + (1.0 if self.inner.training else 0.0)


@torch.no_grad()
def test_train_and_eval_flags_pick_programs_of_their_own() -> None:
    """model.train() / .eval() after hir.compile (also a submodule's own flag) runs what eager runs."""
    model = _ScaledByMode().eval()
    x = randn(8, 16)
    compiled = hir.compile(model, (x,))
    torch.testing.assert_close(compiled(x), model(x))
    model.train()
    torch.testing.assert_close(compiled(x), model(x))
    model.inner.eval()
    torch.testing.assert_close(compiled(x), model(x))
    model.eval()
    torch.testing.assert_close(compiled(randn(4, 16)), model(randn(4, 16)))
    assert compiled.modes is not None
    assert len(compiled.modes.by_flags) == 3  # eval, train, train with the inner module in eval


class _ShuffledInTraining(torch.nn.Module):
    """A training-only permutation of the batch (`randperm`, which compiled programs do not draw)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x[torch.randperm(x.shape[0])] if self.training else x)


def test_a_training_mode_the_function_cannot_take_is_an_error_not_the_eval_program() -> None:
    model = _ShuffledInTraining().eval()
    compiled = hir.compile(model, (randn(8, 16),))
    model.train()
    with torch.no_grad(), pytest.raises(hir.FrontendError, match=r"randperm\.default draws random numbers in a way"):
        compiled(randn(8, 16))
