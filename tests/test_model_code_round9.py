"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU): a plain
function's globals and closure variables reassigned after compiling (numbers, lists, tensors,
modules), read at every call; a module's list and dict attributes changed between calls.
"""

from __future__ import annotations

import dataclasses
import enum

import pytest
import torch

import hir
from hir.frontend.errors import FrontendError


def _seeded(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


SCALE = 2.0
SHIFT = _seeded(4, seed=0)
ORDER = [1.0, 2.0]
ENCODER = torch.nn.Linear(4, 4)


def _with_globals(x: torch.Tensor) -> torch.Tensor:
    for k in ORDER:
        x = x * k + 1
    return ENCODER(x) * SCALE + SHIFT


def test_globals_reassigned_after_compiling_are_read() -> None:
    # The trace baked SCALE and ORDER into the program and the module held SHIFT and ENCODER as
    # they were: reassigning any of them computed with the old value (a silent wrong answer).
    global SCALE, SHIFT, ORDER, ENCODER
    saved = SCALE, SHIFT, ORDER, ENCODER
    try:
        compiled = hir.compile(_with_globals, (_seeded(3, 4, seed=1),))
        x = _seeded(3, 4, seed=2)
        changes = [
            lambda: globals().update(SCALE=-0.0),
            lambda: globals().update(SCALE=3),  # an int: another program than 3.0
            lambda: ORDER.append(3.0),
            lambda: globals().update(SHIFT=_seeded(4, seed=3)),
            lambda: globals().update(ENCODER=torch.nn.Linear(4, 4)),
        ]
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), _with_globals(x))
            for change in changes:
                change()
                got = compiled(x)
                torch.testing.assert_close(got, _with_globals(x))
                assert torch.equal(got.signbit(), _with_globals(x).signbit())
        SHIFT = torch.zeros(5)
        with pytest.raises(FrontendError, match="'SHIFT' is now float32"):
            compiled(x)
        SHIFT = "no tensor"
        with pytest.raises(FrontendError, match=r"global 'SHIFT', which is now 'no tensor'; it was a tensor"):
            compiled(x)
    finally:
        SCALE, SHIFT, ORDER, ENCODER = saved


def test_closure_variables_reassigned_after_compiling_are_read() -> None:
    scale, bias, head = 2.0, _seeded(4, seed=4), torch.nn.Linear(4, 2)

    def f(x: torch.Tensor) -> torch.Tensor:
        return head(x * scale + bias)

    compiled = hir.compile(f, (_seeded(3, 4, seed=5),))
    x = _seeded(3, 4, seed=6)
    with torch.no_grad():
        for k in range(3):
            torch.testing.assert_close(compiled(x), f(x))
            scale, bias, head = scale + 1, _seeded(4, seed=7 + k), torch.nn.Linear(4, 2)


def test_a_training_steps_global_model_and_factor_reassigned() -> None:
    global SCALE, ENCODER
    saved = SCALE, ENCODER
    try:

        def step(x: torch.Tensor) -> torch.Tensor:
            return (ENCODER(x) * SCALE).square().mean()

        compiled = hir.compile(step, (_seeded(3, 4, seed=8),), training=True)
        x = _seeded(3, 4, seed=9)
        torch.testing.assert_close(compiled(x), step(x))
        SCALE, ENCODER = 3.0, torch.nn.Linear(4, 4)
        loss = compiled(x)
        torch.testing.assert_close(loss, step(x))
        loss.backward()
        want = torch.autograd.grad(step(x), ENCODER.weight)[0]
        torch.testing.assert_close(ENCODER.weight.grad, want)
    finally:
        SCALE, ENCODER = saved


class _Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scales = [1.0, 2.0]
        self.cfg = {"mult": 0.5}
        self.log: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.log.append(x.shape[0])  # a list forward appends to: no input of the program
        for k in self.scales:
            x = x * k + 1
        return x * self.cfg["mult"]


def test_a_modules_list_and_dict_attributes_changed_between_calls() -> None:
    # Lists and dicts were no watched attributes: an item changed, appended or a list reassigned
    # after the compile ran the first trace's loop (a silent wrong answer).
    model = _Scaled()
    compiled = hir.compile(model, (_seeded(3, seed=10),))
    x = _seeded(3, seed=11)
    changes = [
        lambda: model.scales.append(3.0),
        lambda: model.scales.__setitem__(0, -2.0),
        lambda: setattr(model, "scales", [0.5]),
        lambda: model.cfg.update(mult=4.0),
    ]
    torch.testing.assert_close(compiled(x), model(x))
    for change in changes:
        change()
        torch.testing.assert_close(compiled(x), model(x))
    assert len(compiled.modes.by_flags) == 5


class _Factor(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.alpha: float | int = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.alpha


def test_an_attribute_of_another_type_with_an_equal_value() -> None:
    # 2.0 == 2: the key compared values, and the int ran the float's program (a float32 result
    # where eager's is int64).
    model = _Factor()
    x = torch.arange(4)
    compiled = hir.compile(model, (x,))
    for alpha in (2.0, 2, 2.0):
        model.alpha = alpha
        got, want = compiled(x), model(x)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


def test_outputs_that_are_views_of_an_argument_or_of_another_output() -> None:
    # Each output came back as a copy: eager's `x.view(-1)` shares x's memory, and `(y, y.t())`
    # share one another's, so a later in-place update of one (the caller's input, an output)
    # showed in eager's other outputs and not in the compiled ones (a silent difference).
    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = x * 2
        return x.view(-1), x[1:].t(), y, y[:, 1:].unsqueeze(0)

    compiled = hir.compile(f, (_seeded(3, 4, seed=12),))
    for seed in (13, 14):
        x = _seeded(3, 4, seed=seed)
        x_eager = x.clone()
        got, want = compiled(x), f(x_eager)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)
            assert a.stride() == b.stride()
        x.add_(1.0)
        x_eager.add_(1.0)
        got[2].mul_(-1.0)
        want[2].mul_(-1.0)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)
        assert got[0].data_ptr() == x.data_ptr()


CALLS = 0
SHAPES: list[int] = []


def _counting(x: torch.Tensor) -> torch.Tensor:
    global CALLS
    CALLS += 1
    SHAPES.append(x.shape[0])
    return x * 2


def test_globals_the_function_changes_itself_are_no_inputs() -> None:
    # A counter it assigns and a log it appends to changed at every trace: watched, each call
    # after a new shape's trace saw a new value and traced again.
    global CALLS
    CALLS = 0
    SHAPES.clear()
    compiled = hir.compile(_counting, (_seeded(3, seed=15),))
    for rows in (3, 4, 4, 4, 3, 4):
        x = _seeded(rows, seed=rows)
        torch.testing.assert_close(compiled(x), x * 2)
    assert (CALLS, SHAPES) == (2, [3, 4])


CONFIG = {"mult": 2.0}


def _of_a_batch(batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return batch["a"] * CONFIG["mult"]


def test_a_function_of_containers_reads_its_globals() -> None:
    # Its leaves' function (pytree_args.py) is hir's: the user's function's globals were not watched.
    compiled = hir.compile(_of_a_batch, ({"a": _seeded(4, seed=16)},))
    batch = {"a": _seeded(4, seed=17)}
    try:
        for mult in (2.0, 7.0):
            CONFIG["mult"] = mult
            torch.testing.assert_close(compiled(batch), _of_a_batch(batch))
    finally:
        CONFIG["mult"] = 2.0


def test_compiled_functions_deepcopy_and_refuse_pickling() -> None:
    # Pickling was a raw "Can't pickle local object"; a function of containers' deepcopy a KeyError.
    import copy
    import pickle

    model = torch.nn.Linear(4, 2)
    x = _seeded(3, 4, seed=18)
    for compiled in (hir.compile(model, (x,)), hir.compile(_of_a_batch, ({"a": x},))):
        with pytest.raises(FrontendError, match=r"<pickle>: error: .* cannot be pickled: save the module"):
            pickle.dumps(compiled)
    copied = copy.deepcopy(compiled)
    torch.testing.assert_close(copied({"a": x}), _of_a_batch({"a": x}))


class _Kind(enum.Enum):
    PLUS = 1
    MINUS = 2


@dataclasses.dataclass(frozen=True)
class _Config:
    mult: float = 2.0


class _Configured(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.act = torch.relu
        self.dtype = torch.float32
        self.kind = _Kind.PLUS
        self.config = _Config()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(x * self.config.mult).to(self.dtype)
        return y + 1 if self.kind is _Kind.PLUS else y - 1


def test_attributes_that_are_functions_dtypes_enums_or_configs() -> None:
    # None of these was watched: a new activation, dtype, enum member or config object after the
    # compile ran the first trace's (silent wrong answers).
    model = _Configured()
    compiled = hir.compile(model, (_seeded(4, seed=19),))
    x = _seeded(4, seed=20)
    changes = [
        lambda: setattr(model, "act", torch.tanh),
        lambda: setattr(model, "act", lambda t: t * 3),
        lambda: setattr(model, "dtype", torch.float64),
        lambda: setattr(model, "kind", _Kind.MINUS),
        lambda: setattr(model, "config", _Config(5.0)),
    ]
    torch.testing.assert_close(compiled(x), model(x))
    for change in changes:
        change()
        torch.testing.assert_close(compiled(x), model(x))


ACTIVATION = torch.relu
GLOBAL_CONFIG = _Config()


def _activated(x: torch.Tensor) -> torch.Tensor:
    return ACTIVATION(x) * GLOBAL_CONFIG.mult


def test_globals_that_are_functions_or_configs() -> None:
    global ACTIVATION, GLOBAL_CONFIG
    saved = ACTIVATION, GLOBAL_CONFIG
    try:
        compiled = hir.compile(_activated, (_seeded(4, seed=21),))
        x = _seeded(4, seed=22)
        torch.testing.assert_close(compiled(x), _activated(x))
        ACTIVATION = torch.tanh
        torch.testing.assert_close(compiled(x), _activated(x))
        GLOBAL_CONFIG = _Config(-3.0)
        torch.testing.assert_close(compiled(x), _activated(x))
    finally:
        ACTIVATION, GLOBAL_CONFIG = saved
