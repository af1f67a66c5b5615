"""
Arguments that are containers of tensors (docs/frontend.md, "API"): Hugging Face's
`past_key_values` (a tuple of (k, v) tuples, or None), a `batch` dict, a list of feature maps.
Their tensors are the program's inputs (a later call's new values and sequence lengths are
read, compared with eager torch), the structure is part of the call's signature, training
gives the gradients of the tensors inside, and errors name the leaf by its path.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import hir
from hir.frontend.errors import FrontendError
from hir.frontend.specialize import CallError

Cache = tuple[tuple[torch.Tensor, torch.Tensor], ...] | None


class Decoder(torch.nn.Module):
    """A step that reads a cache of (k, v) pairs, when there is one, and returns the updated cache."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, past_key_values: Cache = None) -> tuple[torch.Tensor, Cache]:
        h = self.fc(x)
        if past_key_values is None:
            return h, None
        new = tuple((k * h, v + h) for k, v in past_key_values)
        return h + sum(k.sum(0) * v.sum(0) for k, v in past_key_values), new


def step(t: int, pairs: int, grad: bool = False) -> tuple[torch.Tensor, Cache]:
    def r() -> torch.Tensor:
        return torch.randn(t, 8, requires_grad=grad)

    return r(), tuple((r(), r()) for _ in range(pairs))


def leaves(tree: Any) -> list[Any]:
    return torch.utils._pytree.tree_leaves(tree)


def test_past_key_values_are_inputs() -> None:
    """New values, another sequence length, another number of pairs, None, by keyword: as eager."""
    torch.manual_seed(0)
    model = Decoder().eval()
    compiled = hir.compile(model, step(4, 2))
    for t, pairs in ((4, 2), (6, 2), (5, 3)):  # the second call's values would differ if taken as constants
        x, cache = step(t, pairs)
        got, want = compiled(x, past_key_values=cache), model(x, cache)
        for a, b in zip(leaves(got), leaves(want), strict=True):
            torch.testing.assert_close(a, b)
    x = torch.randn(3, 8)
    got, none = compiled(x)
    torch.testing.assert_close(got, model(x)[0])
    assert none is None
    assert len(compiled.structures) == 3  # two pairs, three pairs, None


def test_dict_and_list_arguments_of_a_function() -> None:
    def f(batch: dict[str, torch.Tensor], feats: list[torch.Tensor]) -> dict[str, Any]:
        return {"y": batch["input_ids"] * batch["attention_mask"] + feats[0].sum(), "z": [t.relu() for t in feats]}

    def example(rows: int) -> tuple[dict[str, torch.Tensor], list[torch.Tensor]]:
        return {"input_ids": torch.randn(rows, 4), "attention_mask": torch.randn(rows, 4)}, [
            torch.randn(2),
            torch.randn(5),
        ]

    compiled = hir.compile(f, example(3))
    for rows in (3, 3, 7):
        args = example(rows)
        got, want = compiled(*args), f(*args)
        assert list(got) == ["y", "z"]
        for a, b in zip(leaves(got), leaves(want), strict=True):
            torch.testing.assert_close(a, b)
    text = str(hir.import_torch(f, example(3)))
    assert "%batch_input_ids" in text
    assert "%feats_1" in text


def test_training_gradients_of_tensors_in_containers() -> None:
    torch.manual_seed(1)
    model = Decoder()
    compiled = hir.compile(model, step(4, 2, grad=True), training=True)

    def loss_and_grads(fn: Any, x: torch.Tensor, cache: Cache) -> list[torch.Tensor]:
        h, new = fn(x, cache)
        loss = (h * h).sum() + sum((k * v).sum() for k, v in new)
        inputs = [x, *leaves(cache), *model.parameters()]
        return [loss.detach(), h.detach(), *torch.autograd.grad(loss, inputs)]

    for t in (4, 6):  # another structure: test_decode_loop_compiled_without_a_cache
        x, cache = step(t, 2, grad=True)
        for a, b in zip(loss_and_grads(compiled, x, cache), loss_and_grads(model, x, cache), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_errors_name_the_leaf() -> None:
    model = Decoder().eval()
    compiled = hir.compile(model, step(4, 2), max_specializations=2)
    x, ((k, _), pair) = step(4, 2)
    with pytest.raises(CallError, match=r"argument 'past_key_values\[0\]\[1\]' has shape \[4, 8, 2\] \(3-D\)"):
        compiled(x, ((k, torch.randn(4, 8, 2)), pair))
    with pytest.raises(CallError, match=r"<Decoder>: argument past_key_values\[0\]\[1\] is a object, not a tensor"):
        compiled(x, ((k, object()), pair))
    with pytest.raises(CallError, match=r"<Decoder> takes 2 arguments \(x, past_key_values\), got 3"):
        compiled(x, ((k, k), pair), x)
    compiled(x)  # None: the second structure
    with pytest.raises(
        CallError,
        match=r"2 structures .*max_specializations=2\); this call's 'past_key_values' is tuple\(tuple\(\*, \*\), "
        r"tuple\(\*, \*\), tuple\(\*, \*\)\) \(compiled for tuple\(tuple\(\*, \*\), tuple\(\*, \*\)\)\)",
    ):
        compiled(*step(4, 3))
    with pytest.raises(FrontendError, match=r"<layouts>: error: argument 'past_key_values' is a tuple of tensors"):
        hir.compile(model, step(4, 1), in_layouts=[None, "[stream, serial]"])
    with pytest.raises(FrontendError, match=r"#1 is a tuple: containers of tensors are not supported on a mesh"):
        hir.compile(model, step(4, 1), mesh=[0, 1])


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.scale = 2.0

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return self.fc(xs[0]) * xs[1] * self.scale


def test_the_module_is_read_at_every_call() -> None:
    """Its attributes (read by the trace), parameters and hooks, as they are at each call."""
    torch.manual_seed(2)
    model = Scaled().eval()

    def example() -> tuple[list[torch.Tensor]]:
        return ([torch.randn(3, 4), torch.randn(3, 4)],)

    # A pre-hook of the module's: it sees the list, as in eager
    model.register_forward_pre_hook(lambda module, args: ([args[0][0] * 2, *args[0][1:]],))
    compiled = hir.compile(model, example())
    for change in (lambda: setattr(model, "scale", 3.0), lambda: model.fc.weight.data.mul_(2)):
        change()
        args = example()
        torch.testing.assert_close(compiled(*args), model(*args))


class Attention(torch.nn.Module):
    """A decode step that appends its keys and values to the cache it is given (Hugging Face's pattern)."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(8, 8) for _ in range(3))

    def forward(self, x: torch.Tensor, *, past_key_values: Any = None) -> dict[str, Any]:
        k, v = self.k(x), self.v(x)
        if past_key_values is not None:
            k = torch.cat([past_key_values[0], k], dim=1)
            v = torch.cat([past_key_values[1], v], dim=1)
        return {"out": torch.softmax(self.q(x) @ k.transpose(1, 2), -1) @ v, "past_key_values": (k, v)}


@pytest.mark.parametrize("training", [False, True])
def test_decode_loop_compiled_without_a_cache(training: bool) -> None:
    """Compiled for the first step (no cache): the later steps pass the cache it returned."""
    torch.manual_seed(3)
    model = Attention().train(training)
    compiled = hir.compile(model, (torch.randn(2, 1, 8),), training=training)
    past = None
    for _ in range(3):
        x = torch.randn(2, 1, 8, requires_grad=training)
        got, want = compiled(x, past_key_values=past), model(x, past_key_values=past)
        for a, b in zip(leaves(got), leaves(want), strict=True):
            torch.testing.assert_close(a, b)
        if training:
            inputs = [x, *(past or ())]
            grads = [torch.autograd.grad(out["out"].square().sum(), inputs) for out in (got, want)]
            for a, b in zip(*grads, strict=True):
                torch.testing.assert_close(a, b)
        past = tuple(t.detach().requires_grad_(training) for t in want["past_key_values"])


LINEAR = torch.nn.Linear(4, 4)


def loss_of_batch(batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return (LINEAR(batch["x"]) * batch["y"]).sum()


def test_training_step_of_a_global_model() -> None:
    """A function that reads a global model (compiled as a module holding it) and takes a batch dict."""
    compiled = hir.compile(loss_of_batch, ({"x": torch.randn(3, 4), "y": torch.randn(3, 4)},), training=True)
    batch = {"x": torch.randn(5, 4), "y": torch.randn(5, 4)}
    grads = []
    for fn in (compiled, loss_of_batch):
        LINEAR.zero_grad()
        loss = fn(batch)
        loss.backward()
        grads.append((loss.detach(), LINEAR.weight.grad.clone()))
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)
