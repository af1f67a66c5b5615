"""
Ops that compile by composing fusion ops (frontend/aten_special.py, aten_scans.py, `_trilinear`
in aten_composite.py, ceil_mode pooling in aten_vision.py): each against eager torch on CPU on
random data (never zeros; negative non-integers for lgamma and digamma, |y| near 1 for erfinv),
f32 at assert_close's default tolerance, f64 within 1e-10; torch's values at the edges (poles,
signed zeros, infinities, NaN); the f32 accuracy against f64; the gradients of a training step;
and two user-style modules, an `nn.Bilinear` scorer and a CNN with ceil_mode pooling, trained two
steps against eager.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hir

Inputs = Callable[[torch.Generator], tuple[torch.Tensor, ...]]


def _normal(*shape: int, scale: float = 1.0) -> Inputs:
    return lambda g: (torch.randn(shape, generator=g) * scale,)


def _pair(*shape: int, scale: float = 1.0) -> Inputs:
    return lambda g: (torch.randn(shape, generator=g) * scale, torch.randn(shape, generator=g) * scale)


def _open_unit(g: torch.Generator) -> tuple[torch.Tensor, ...]:
    """(-1, 1), a quarter of it within 1e-4 of +-1 (where erfinv's slope is steep)."""
    u = torch.rand(64, 32, generator=g) * 2 - 1
    near = (1 - torch.rand(16, 32, generator=g) * 1e-4) * torch.sign(torch.randn(16, 32, generator=g))
    return (torch.cat([u[:48], near]),)


def _with_exponents(g: torch.Generator) -> tuple[torch.Tensor, ...]:
    return torch.randn(64, 32, generator=g), torch.randint(-20, 20, (64, 32), generator=g)


ELEMENTWISE: dict[str, tuple[Callable[..., torch.Tensor], Inputs]] = {
    "atan": (torch.atan, _normal(64, 32, scale=5.0)),
    "atan2": (torch.atan2, _pair(64, 32, scale=3.0)),
    "erfc": (torch.erfc, _normal(64, 32, scale=3.0)),
    "special.erfc": (torch.special.erfc, _normal(64, 32, scale=3.0)),
    "erfinv": (torch.erfinv, _open_unit),
    "lgamma": (torch.lgamma, _normal(64, 32, scale=6.0)),
    "special.gammaln": (torch.special.gammaln, _normal(64, 32, scale=6.0)),
    "digamma": (torch.digamma, _normal(64, 32, scale=6.0)),
    "polygamma(1)": (lambda x: torch.polygamma(1, x), _normal(64, 32, scale=6.0)),
    "polygamma(2)": (lambda x: torch.polygamma(2, x), _normal(64, 32, scale=6.0)),
    "special.polygamma(3)": (lambda x: torch.special.polygamma(3, x), _normal(64, 32, scale=6.0)),
    "polygamma(6)": (lambda x: torch.polygamma(6, x), _normal(64, 32, scale=6.0)),
    "copysign": (torch.copysign, _pair(64, 32)),
    "copysign(scalar)": (lambda x: torch.copysign(x, -2.0) + torch.copysign(x, -0.0) * 3, _normal(64, 32)),
    "ldexp": (torch.ldexp, _with_exponents),
}


# torch.special's names of ops above, which the trace maps onto theirs (aten.special_erfc onto
# aten.erfc, aten.special_gammaln onto aten.lgamma): the f32 comparison checks that mapping; in f64 and
# at the edge values they would lower the very program that erfc's and lgamma's cases lower.
ALIASES = ("special.erfc", "special.gammaln")


def _compiled_matches(fn: Callable[..., torch.Tensor], inputs: Inputs, **tolerance: float | bool) -> None:
    args = inputs(torch.Generator().manual_seed(0))
    compiled = hir.compile(fn, args)
    for seed in (0, 1):
        args = inputs(torch.Generator().manual_seed(seed))
        torch.testing.assert_close(compiled(*args), fn(*args), **tolerance)


@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_float32_matches_eager(name: str) -> None:
    fn, inputs = ELEMENTWISE[name]
    _compiled_matches(fn, inputs)


@pytest.mark.parametrize("name", [n for n in ELEMENTWISE if n not in ALIASES])
def test_float64_matches_eager(name: str) -> None:
    fn, inputs = ELEMENTWISE[name]

    def in_f64(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        return tuple(t.double() if t.is_floating_point() else t for t in inputs(g))

    _compiled_matches(fn, in_f64, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_half_types_are_computed_in_float32(dtype: torch.dtype) -> None:
    """As torch's kernels: in f32, rounded once (the same numbers as eager)."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.lgamma(x) + torch.digamma(x) * torch.erfc(x) + torch.atan2(x, x.flip(0))

    _compiled_matches(
        fn, lambda g: (torch.randn(16, 8, generator=g).to(dtype) * 3,), rtol=0.0, atol=0.0, equal_nan=True
    )


EDGES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, -3.0, 0.5, -0.5, 1e-30, -1e-30, 3.5, 10.0, 1e20, -1e20, 30.0, -30.5]
EDGES += [float("inf"), float("-inf"), float("nan"), 0.99999994, -0.99999994, 1.0000001]


@pytest.mark.parametrize("name", [n for n in ELEMENTWISE if n not in ("ldexp", *ALIASES)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_edge_values_are_torchs(name: str, dtype: torch.dtype) -> None:
    """Poles (lgamma's inf, digamma's NaN and signed inf at 0), erfinv(+-1) = +-inf, signed zeros, NaN."""
    fn, _ = ELEMENTWISE[name]
    x = torch.tensor(EDGES, dtype=dtype)
    args = (x, x.flip(0)) if name in ("atan2", "copysign") else (x,)
    got, expected = hir.compile(fn, args)(*args), fn(*args)
    torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-5, atol=1e-6)
    finite_or_nan = torch.isfinite(expected) | torch.isnan(expected)
    assert torch.equal(torch.signbit(got[~torch.isnan(got)]), torch.signbit(expected[~torch.isnan(expected)]))
    assert torch.equal(finite_or_nan, torch.isfinite(got) | torch.isnan(got))


ACCURACY: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor, float]] = {
    # name: (function, where it is well conditioned in f32, the largest error relative to f64's value);
    # digamma and polygamma(1) are torch's own recurrences, which cancel near digamma's zero (1.46)
    # and trigamma's poles as torch's kernels do
    "atan2": (lambda x: torch.atan2(x, 1 - x), torch.linspace(-50, 50, 20001), 3e-7),
    "erfc": (torch.erfc, torch.linspace(-3, 9, 20001), 1e-6),  # erfc(9.2) is a denormal
    "erfinv": (torch.erfinv, torch.cat([torch.linspace(-0.999, 0.999, 10001), 1 - torch.logspace(-7, -3, 1000)]), 3e-7),
    "lgamma": (torch.lgamma, torch.cat([torch.linspace(0.01, 0.9, 5001), torch.linspace(2.1, 1e3, 10001)]), 1e-6),
    "lgamma(x < 0)": (torch.lgamma, torch.linspace(-9.99, -0.01, 20001)[::7], 1e-5),
    "digamma": (torch.digamma, torch.cat([torch.linspace(0.01, 1.0, 5001), torch.linspace(3, 1e3, 10001)]), 2e-6),
    "polygamma(1)": (lambda x: torch.polygamma(1, x), torch.linspace(0.05, 50, 20001), 1e-6),
    "polygamma(3)": (lambda x: torch.polygamma(3, x), torch.linspace(-9.9, 50, 20001), 1e-5),
}


@pytest.mark.parametrize("name", list(ACCURACY))
def test_float32_accuracy_against_float64(name: str) -> None:
    fn, x, bound = ACCURACY[name]
    if name == "lgamma(x < 0)":  # away from its zeros, where a relative error has no bound
        x = x[fn(x.double()).abs() > 0.05]
    got = hir.compile(fn, (x,))(x).double()
    exact = fn(x.double())
    relative = ((got - exact).abs() / exact.abs()).max().item()
    assert relative < bound, f"{name}: {relative:.2e}"


@pytest.mark.parametrize(
    "name", ["atan2", "erfc", "erfinv", "lgamma", "digamma", "polygamma(1)", "polygamma(2)", "copysign", "ldexp"]
)
def test_training_gradients_match_eager(name: str) -> None:
    """The backward formulas torch records (digamma for lgamma, polygamma(n + 1) for polygamma(n), ...) compile too."""
    fn, inputs = ELEMENTWISE[name]
    args = inputs(torch.Generator().manual_seed(2))
    if name == "erfinv":
        args = (args[0].clamp(-0.999, 0.999),)  # the slope's growth near +-1 magnifies rounding beyond tolerance
    compiled = hir.compile(fn, args, training=True)
    ours = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    theirs = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    grad = torch.randn(args[0].shape, generator=torch.Generator().manual_seed(3))
    compiled(*ours).backward(grad)
    fn(*theirs).backward(grad)
    for a, b in zip(ours, theirs):
        if a.requires_grad:
            torch.testing.assert_close(a.grad, b.grad)


# -- scans, masked_scatter, triangle indices ---------------------------------------------------------


def _ties(g: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Floats with repeated values (ties: torch's index is the last maximum's), NaNs and infinities."""
    x = torch.randint(-3, 4, (6, 37), generator=g).float() * 0.5
    x[1, 5] = x[2, 0] = x[2, 9] = float("nan")
    x[3, 7], x[4, 2] = float("inf"), float("-inf")
    return (x,)


def _far_apart(g: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Values hundreds apart (exp of them under- and overflows f32), -inf and +inf entries."""
    x = torch.randn(5, 40, generator=g) * 300
    x[0, :4] = float("-inf")
    x[1, 3] = x[1, 8] = float("inf")
    return (x,)


def _masked(g: torch.Generator) -> tuple[torch.Tensor, ...]:
    return torch.randn(6, 9, generator=g), torch.randn(9, generator=g) > 0, torch.randn(70, generator=g)


SCANS: dict[str, tuple[Callable[..., torch.Tensor], Inputs]] = {
    "cummax": (lambda x: torch.cummax(x, 1), _normal(6, 37)),
    "cummin(dim=0)": (lambda x: torch.cummin(x, 0), _normal(37, 6)),
    "cummax(ties, NaN)": (lambda x: torch.cummax(x, 1), _ties),
    "cummin(ties, NaN)": (lambda x: torch.cummin(x, -1), _ties),
    "cummax(integers)": (lambda i: torch.cummax(i, 1), lambda g: (torch.randint(-4, 4, (5, 33), generator=g),)),
    "cummin(booleans)": (lambda x: torch.cummin(x > 0, 1)[1] + torch.cummin(x > 0, 1)[0], _normal(5, 9)),
    "logcumsumexp": (lambda x: torch.logcumsumexp(x, 1), _normal(6, 37, scale=3.0)),
    "logcumsumexp(far apart, inf)": (lambda x: torch.logcumsumexp(x, -1), _far_apart),
    "logcumsumexp(dim=0)": (lambda x: torch.logcumsumexp(x, 0), _normal(33, 4)),
    "masked_scatter": (lambda x, m, s: x.masked_scatter(m, s), _masked),
    "masked_scatter(as a mask of x)": (lambda x, m, s: x.masked_scatter(x > 0.3, s), _masked),
    "tril_indices": (
        lambda x: x[tuple(torch.tril_indices(6, 9, -1))] * torch.tril_indices(6, 9, 2).sum(),
        _normal(6, 9),
    ),
    "triu_indices": (
        lambda x: x[tuple(torch.triu_indices(6, 9, 1))] + torch.triu_indices(9, 6, -2).sum(),
        _normal(6, 9),
    ),
}


@pytest.mark.parametrize("name", list(SCANS))
def test_scans_match_eager(name: str) -> None:
    fn, inputs = SCANS[name]
    args = inputs(torch.Generator().manual_seed(0))
    torch.testing.assert_close(hir.compile(fn, args)(*args), fn(*args), equal_nan=True)


TRIANGLES = [(r, c, o) for r, c in [(1, 1), (4, 4), (3, 8), (8, 3), (7, 7)] for o in [-9, -2, 0, 1, 5]]


def test_triangle_indices_match_eager() -> None:
    """Every (rows, columns, offset) of `TRIANGLES` in one function: one compile, each result compared on its own."""

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        triangles = [f(r, c, o) for r, c, o in TRIANGLES for f in (torch.tril_indices, torch.triu_indices)]
        return *triangles, x + 1

    x = torch.tensor(0)
    got, expected = hir.compile(fn, (x,))(x), fn(x)
    assert len(got) == len(expected) == 2 * len(TRIANGLES) + 1
    cases = [(*case, f) for case in TRIANGLES for f in ("tril", "triu")] + ["x + 1"]
    for case, a, b in zip(cases, got, expected, strict=True):
        assert torch.equal(a, b), case


@pytest.mark.parametrize("name", ["cummax", "cummin(dim=0)", "logcumsumexp", "logcumsumexp(dim=0)", "masked_scatter"])
def test_scan_gradients_match_eager(name: str) -> None:
    fn, inputs = SCANS[name]
    args = inputs(torch.Generator().manual_seed(4))

    def first(*xs: torch.Tensor) -> torch.Tensor:
        out = fn(*xs)
        return out[0] if isinstance(out, tuple) else out

    compiled = hir.compile(first, args, training=True)
    ours = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    theirs = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    expected = first(*theirs)
    grad = torch.randn(expected.shape, generator=torch.Generator().manual_seed(5))
    compiled(*ours).backward(grad)
    expected.backward(grad)
    for a, b in zip(ours, theirs):
        if a.requires_grad:
            torch.testing.assert_close(a.grad, b.grad)


# -- modules ---------------------------------------------------------------------------------------


class PairScorer(nn.Module):
    """Scores (query, item) pairs with a bilinear form, as a recommender or a relation classifier does."""

    def __init__(self) -> None:
        super().__init__()
        self.query = nn.Linear(12, 10)
        self.pair = nn.Bilinear(10, 7, 5)
        self.head = nn.Linear(5, 1)

    def forward(self, q: torch.Tensor, item: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.pair(F.gelu(self.query(q)), item))).squeeze(-1)


class SmallCnn(nn.Module):
    """A CNN whose pools keep the border (ceil_mode): the last windows run past the input."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.pool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = nn.Conv2d(8, 8, 3)
        self.pool2 = nn.AvgPool2d(2, padding=1, ceil_mode=True, count_include_pad=False)
        self.pool3 = nn.AvgPool1d(3, stride=2, ceil_mode=True)
        self.fc = nn.Linear(8 * 3 * 2, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pool1(F.relu(self.conv1(x)))  # [B, 8, 7, 5] from 13 x 10
        h = self.pool2(F.relu(self.conv2(h)))  # [B, 8, 3, 2] (avg: windows counted inside the input)
        h = h + self.pool3(h.flatten(2)).mean(-1, keepdim=True).unsqueeze(-1)
        return self.fc(h.flatten(1))


def _trains_like_eager(model: nn.Module, args: tuple[torch.Tensor, ...], target: torch.Tensor) -> None:
    """Two SGD steps of the compiled model and of eager: the same losses, gradients and parameters."""
    eager = copy.deepcopy(model)
    compiled = hir.compile(model, args, training=True)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    for _ in range(2):
        losses = []
        for run, optimizer in zip((compiled, eager), optimizers):
            optimizer.zero_grad()
            loss = F.mse_loss(run(*args), target)
            loss.backward()
            losses.append(loss.detach())
        torch.testing.assert_close(losses[0], losses[1])
        for (name, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, msg=lambda m, name=name: f"{name}: {m}")
        for optimizer in optimizers:
            optimizer.step()
    with torch.no_grad():
        torch.testing.assert_close(hir.compile(model, args)(*args), eager(*args))


def test_a_bilinear_scorer_trains_like_eager() -> None:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(6)
    args = (torch.randn(16, 12, generator=g), torch.randn(16, 7, generator=g))
    _trains_like_eager(PairScorer(), args, torch.randn(16, generator=g))


def test_f_bilinear_on_batched_and_single_pairs() -> None:
    g = torch.Generator().manual_seed(7)
    w, b = torch.randn(4, 6, 5, generator=g), torch.randn(4, generator=g)
    for shape in ((2, 3), (9,), ()):
        x1, x2 = torch.randn(*shape, 6, generator=g), torch.randn(*shape, 5, generator=g)
        fn = lambda x1, x2: F.bilinear(x1, x2, w, b) + F.bilinear(x1, x2, w)  # noqa: E731
        torch.testing.assert_close(hir.compile(fn, (x1, x2))(x1, x2), fn(x1, x2))


def test_a_cnn_with_ceil_mode_pools_trains_like_eager() -> None:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(8)
    x = torch.randn(2, 3, 13, 10, generator=g)
    _trains_like_eager(SmallCnn(), (x,), torch.randn(2, 4, generator=g))


POOLS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "max_pool2d": lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
    "max_pool2d(indices)": lambda x: F.max_pool2d(x, 2, ceil_mode=True, return_indices=True)[1].float(),
    "max_pool1d": lambda x: F.max_pool1d(x.flatten(2), 4, 3, ceil_mode=True),
    "MaxPool1d(unbatched)": lambda x: nn.MaxPool1d(2, ceil_mode=True)(x[0].flatten(1)),
    "max_pool3d": lambda x: F.max_pool3d(x.unsqueeze(2).expand(-1, -1, 3, -1, -1), 2, ceil_mode=True),
    "avg_pool2d": lambda x: F.avg_pool2d(x, 2, ceil_mode=True),
    "avg_pool2d(padding)": lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
    "avg_pool2d(padding, count_include_pad=False)": lambda x: F.avg_pool2d(x, 3, 2, 1, True, False),
    "avg_pool2d(divisor_override)": lambda x: F.avg_pool2d(x, 3, 2, 1, True, divisor_override=5),
    "avg_pool1d(count_include_pad=False)": lambda x: F.avg_pool1d(x.flatten(2), 4, 3, 2, True, False),
    "AvgPool3d": lambda x: nn.AvgPool3d(2, ceil_mode=True)(x.unsqueeze(2).expand(-1, -1, 3, -1, -1)),
}


@pytest.mark.parametrize("name", list(POOLS))
def test_ceil_mode_pools_match_eager_and_train(name: str) -> None:
    fn = POOLS[name]
    x = torch.randn(2, 3, 7, 9, generator=torch.Generator().manual_seed(9))
    torch.testing.assert_close(hir.compile(fn, (x,))(x), fn(x))
    if "indices" not in name:
        _input_grad_as_eager(fn, x, seed=10)


def _input_grad_as_eager(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, seed: int) -> None:
    """`fn` compiled for training: the gradient of its input for a random output gradient, as eager's."""
    compiled = hir.compile(fn, (x,), training=True)
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    expected = fn(theirs)
    grad = torch.randn(expected.shape, generator=torch.Generator().manual_seed(seed))
    compiled(ours).backward(grad)
    expected.backward(grad)
    torch.testing.assert_close(ours.grad, theirs.grad)


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool_indices_of_windows_of_minus_infinity_skip_the_padding(ceil_mode: bool) -> None:
    """
    A window whose input values are all -inf ties them with its -inf padding: torch's index is
    the first input position (a masked feature map's pooling), and the gradient goes there.
    """
    x = torch.randn(2, 3, 7, 9, generator=torch.Generator().manual_seed(11))
    x[0, 0, :3, :4] = float("-inf")
    x[1, 2] = float("-inf")
    pool = lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=ceil_mode, return_indices=True)  # noqa: E731
    for got, expected in zip(hir.compile(pool, (x,))(x), pool(x), strict=True):
        torch.testing.assert_close(got, expected)
    _input_grad_as_eager(lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=ceil_mode), x, seed=12)
