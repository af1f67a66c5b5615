"""
Plain functions compiled with `hir.compile` as users write and call them, against eager torch (CPU):
an exception the user's code raises while it is traced (`raise ShapeError(...)`, an `assert` on a
shape) is also an instance of the user's class, at `hir.compile` and at a call that specializes
for a new shape, and an op's built-in error that eager raises too (shapes that do not broadcast)
is also a `RuntimeError`; a Python number, bool or str returned beside the tensors (`x.shape[0]`)
comes back per specialization; a parameter whose default is a tensor may be left out of a call
when the example gave it, and passing one the example left out is a call error naming it; a
dataclass of the user's own, no pytree node, comes back as eager returns it; a plain object's bound
method, or the object with `__call__`, reads its attributes at every call; a `functools.partial` with a
keyword compiles; example arguments that do not fit the function are an `<inputs>:` error.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest
import torch

import hir
from hir.frontend.errors import FrontendError
from hir.frontend.specialize import CallError


def _seeded(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class ShapeError(Exception):
    pass


class TwoFields(Exception):
    def __init__(self, rows: int, limit: int) -> None:
        super().__init__(f"{rows} rows, at most {limit}")


def _checked(x: torch.Tensor) -> torch.Tensor:
    if x.shape[0] == 2:
        raise ShapeError("two rows")
    if x.shape[0] == 4:
        raise TwoFields(x.shape[0], 3)
    if x.shape[0] == 5:
        raise KeyError("rows")
    assert x.shape[0] < 6, "too long"
    return x * 2 + 1


def test_the_users_exception_at_a_call_is_an_instance_of_its_class() -> None:
    # the compiled function raised a CallError (a ValueError) only: `except ShapeError:` missed it
    compiled = hir.compile(_checked, (_seeded(3, 2, seed=0),))
    x = _seeded(3, 2, seed=1)
    torch.testing.assert_close(compiled(x), _checked(x))
    for rows, kind, text in (
        (2, ShapeError, "two rows"),
        (4, TwoFields, "4 rows, at most 3"),
        (5, KeyError, "rows"),
        (6, AssertionError, "too long"),
    ):
        with pytest.raises(kind):
            _checked(_seeded(rows, 2, seed=2))
        with pytest.raises(kind, match=text) as caught:
            compiled(_seeded(rows, 2, seed=2))
        assert isinstance(caught.value, CallError)
        assert isinstance(caught.value.users_exception, kind)
        assert "test_model_code_round12.py:" in str(caught.value)  # the user's line
        assert str(caught.value).startswith("<call>: error:")  # not KeyError's quotes
    torch.testing.assert_close(compiled(x), _checked(x))  # the cached program still runs


def test_the_users_exception_at_compile_is_an_instance_of_its_class() -> None:
    with pytest.raises(ShapeError, match="two rows") as caught:
        hir.compile(_checked, (_seeded(2, 2, seed=3),))
    assert isinstance(caught.value, FrontendError)


def test_shapes_that_do_not_broadcast_are_a_runtime_error_as_in_eager() -> None:
    def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y + 1

    compiled = hir.compile(mul, (_seeded(3, seed=4), _seeded(3, seed=5)))
    with pytest.raises(RuntimeError):
        mul(_seeded(4, seed=6), _seeded(3, seed=7))
    with pytest.raises(RuntimeError, match="broadcast") as caught:
        compiled(_seeded(4, seed=6), _seeded(3, seed=7))
    assert isinstance(caught.value, CallError)


def _scaled_with_extent(x: torch.Tensor, scale: float, tag: str = "rows") -> tuple:
    return x * scale, {"n": x.shape[0], "tag": tag, "scaled": scale != 1.0, "scale": scale}, None


def test_python_numbers_returned_beside_tensors_come_back_per_specialization() -> None:
    # a Python int, float, bool or str returned (`x.shape[0]`, a flag) was an `<outputs>:` refusal
    compiled = hir.compile(_scaled_with_extent, (_seeded(3, 2, seed=8), 2.0))
    for rows, scale, tag in ((3, 2.0, "rows"), (5, 2.0, "rows"), (5, 1.0, "cols"), (3, 0.5, "rows")):
        x = _seeded(rows, 2, seed=rows)
        got, want = compiled(x, scale, tag), _scaled_with_extent(x, scale, tag)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1]
        assert got[2] is None
        assert type(got[1]["n"]) is int
        assert type(got[1]["scale"]) is float


_HALF = torch.full((3,), 0.5)


def _biased(x: torch.Tensor, bias: torch.Tensor = _HALF, *, scale: float = 2.0) -> torch.Tensor:
    return x * scale + bias


def test_a_parameter_with_a_default_tensor_given_in_the_example_may_be_left_out() -> None:
    # the call `compiled(x)` was "takes 2 tensors (x, bias), got 1", where eager adds the default
    compiled = hir.compile(_biased, (_seeded(3, seed=10), _seeded(3, seed=11)))
    x, bias = _seeded(3, seed=12), _seeded(3, seed=13)
    torch.testing.assert_close(compiled(x, bias), _biased(x, bias))
    torch.testing.assert_close(compiled(x), _biased(x))
    torch.testing.assert_close(compiled(x, scale=3.0), _biased(x, scale=3.0))
    torch.testing.assert_close(compiled(x, bias=bias, scale=0.5), _biased(x, bias, scale=0.5))


def test_a_parameter_compiled_at_its_default_tensor_passed_is_a_call_error() -> None:
    # `compiled(x, b)` said "takes 1 tensor (x), got 2" and `compiled(x, bias=b)` "has no argument 'bias'"
    compiled = hir.compile(_biased, (_seeded(3, seed=14),))
    x, bias = _seeded(3, seed=15), _seeded(3, seed=16)
    torch.testing.assert_close(compiled(x), _biased(x))
    for call in (lambda: compiled(x, bias), lambda: compiled(x, bias=bias)):
        with pytest.raises(CallError, match=r"<_biased>: argument 'bias' was compiled at its default tensor"):
            call()


def test_a_dataclass_of_its_own_returned_comes_back_as_eager_returns_it() -> None:
    # a dataclass no pytree node was an error asking the user to register it
    @dataclasses.dataclass
    class Heads:
        logits: torch.Tensor
        extent: int
        aux: torch.Tensor | None = None

    def heads(x: torch.Tensor) -> tuple[Heads, dict[str, Heads]]:
        return Heads(x.softmax(-1), x.shape[0]), {"pooled": Heads(x.mean(0), 1, x.amax(0))}

    compiled = hir.compile(heads, (_seeded(3, 4, seed=17),))
    for rows in (3, 5):
        x = _seeded(rows, 4, seed=rows)
        got, want = compiled(x), heads(x)
        assert type(got[0]) is Heads
        assert got[0].extent == want[0].extent
        assert got[0].aux is None
        torch.testing.assert_close(got[0].logits, want[0].logits)
        torch.testing.assert_close(got[1]["pooled"].logits, want[1]["pooled"].logits)
        torch.testing.assert_close(got[1]["pooled"].aux, want[1]["pooled"].aux)


class _Scaler:
    """A plain object of the user's (no module) whose settings change between calls."""

    def __init__(self) -> None:
        self.scale = 2.0
        self.act = torch.tanh

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x) * self.scale

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + 1


def test_a_plain_objects_method_and_call_read_its_attributes_at_every_call() -> None:
    # `obj.apply` and `obj` itself computed with the attributes of the trace after `obj.scale = 5.0`
    scaler = _Scaler()
    method = hir.compile(scaler.apply, (_seeded(3, seed=18),))
    called = hir.compile(scaler, (_seeded(3, seed=19),))
    x = _seeded(3, seed=20)
    for scale, act in ((2.0, torch.tanh), (5.0, torch.tanh), (-0.5, torch.sigmoid)):
        scaler.scale, scaler.act = scale, act
        torch.testing.assert_close(method(x), scaler.apply(x))
        torch.testing.assert_close(called(x), scaler(x))


def _affine(x: torch.Tensor, y: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    return x * scale + y


def test_a_partial_with_a_keyword_is_compiled() -> None:
    # the partial's keyword reached torch.export's wrapper, which took none: a capture error in inspect.py
    scaled = functools.partial(_affine, scale=3.0)
    compiled = hir.compile(scaled, (_seeded(3, seed=21), _seeded(3, seed=22)))
    x, y = _seeded(3, seed=23), _seeded(3, seed=24)
    torch.testing.assert_close(compiled(x, y), scaled(x, y))
    torch.testing.assert_close(compiled(x, y, scale=0.5), scaled(x, y, scale=0.5))


def test_example_args_that_do_not_fit_the_function_are_an_inputs_error() -> None:
    # torch.export's TypeError was told at a line of Python's inspect.py
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y

    with pytest.raises(FrontendError, match=r"^<inputs>: error: example_args has 1 value, but <add> takes x, y: .*'y'"):
        hir.compile(add, (_seeded(3, seed=25),))
    with pytest.raises(FrontendError, match=r"^<inputs>: error: example_args has 3 values, but <add> takes 2 \(x, y\)"):
        hir.compile(add, (_seeded(3, seed=25),) * 3)
    with pytest.raises(FrontendError, match=r"example for 'mask', which has no default"):
        hir.compile(lambda x, *, mask: x * mask, (_seeded(3, seed=26),))
