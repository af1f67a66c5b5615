"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU): `F.one_hot` of
a class out of `[0, num_classes)` and `max_unpool` of an index out of its plane raise at run time
as eager does (also in a training step), and so does `index_copy` of a negative index; the median of a row with a NaN is NaN, and `nanmedian`;
`hypot` at infinities and extremes; `x ** p` as torch's kernel spells 0.5, -0.5, -1, 2, 3, -2;
a keyword-only argument passed by position is a call error; `x[t]` of a 0-d integer tensor;
`exp2`, `log2`, `log10`, `leaky_relu`, `tan`, `sinh`, `cosh` and `logit` of bf16 and f16 bit-equal
to torch's kernels; `asin` and `acos`.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.diagnostics import LocatedError
from hir.frontend.specialize import CallError


def _seeded(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _smoothed_targets(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    target = F.one_hot(labels, logits.shape[-1]).float() * 0.9 + 0.1 / logits.shape[-1]
    return -(target * logits.log_softmax(-1)).sum(-1)


def test_one_hot_of_a_class_out_of_range_raises_as_eager() -> None:
    # a class >= num_classes or < 0 gave a row of zeros where eager raises
    labels = torch.tensor([[0, 4], [2, 1]])
    compiled = hir.compile(_smoothed_targets, (_seeded(2, 2, 5, seed=0), labels))
    x = _seeded(2, 2, 5, seed=1)
    torch.testing.assert_close(compiled(x, labels), _smoothed_targets(x, labels))
    for bad in (torch.tensor([[0, 5], [2, 1]]), torch.tensor([[0, 4], [-1, 1]])):
        with pytest.raises(RuntimeError):
            _smoothed_targets(x, bad)
        with pytest.raises(LocatedError, match="out of bounds"):
            compiled(x, bad)


def test_one_hot_of_a_class_out_of_range_raises_in_a_training_step() -> None:
    # AOT autograd decomposes F.one_hot by torch's Python kernel, whose range check computes nothing
    logits = _seeded(3, 4, seed=3).requires_grad_()
    compiled = hir.compile(
        lambda x, y: _smoothed_targets(x, y).mean(), (logits, torch.tensor([0, 3, 1])), training=True
    )
    compiled(logits, torch.tensor([2, 3, 1])).backward()
    want = logits.grad.clone()
    logits.grad = None
    _smoothed_targets(logits, torch.tensor([2, 3, 1])).mean().backward()
    torch.testing.assert_close(want, logits.grad)
    with pytest.raises(LocatedError, match="out of bounds"):
        compiled(logits, torch.tensor([2, 4, 1]))


def _unpool(values: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    return F.max_unpool2d(values, indices, 2) * 2


def test_max_unpool_of_an_index_out_of_its_plane_raises_as_eager() -> None:
    # an index past its channel's 4x4 plane was written into the next channel's plane (a result where
    # eager raises), and a negative one wrapped to the plane's end
    values, indices = F.max_pool2d(_seeded(2, 3, 4, 4, seed=2), 2, return_indices=True)
    compiled = hir.compile(_unpool, (values, indices))
    torch.testing.assert_close(compiled(values, indices), _unpool(values, indices))
    for entry in (16, -1):
        bad = indices.clone()
        bad[0, 1, 1, 1] = entry
        with pytest.raises(RuntimeError):
            _unpool(values, bad)
        with pytest.raises(LocatedError, match="out of bounds"):
            compiled(values, bad)


def _robust_stats(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    median = x.median(-1)
    return median.values, median.indices, x.median(), x.nanmedian(-1).values, x.nanmedian()


def test_median_of_a_row_with_nan_is_nan_and_nanmedian_skips_them() -> None:
    # median() returned the row's median of its numbers (NaN sorted last) where torch gives the
    # row's first NaN and its index; nanmedian was refused
    x = _seeded(3, 5, seed=4)
    x[0, 1] = x[0, 3] = x[1, :] = float("nan")
    compiled = hir.compile(_robust_stats, (x,))
    for seed in (4, 5):
        y = _seeded(3, 5, seed=seed)
        if seed == 4:
            y[0, 1] = y[0, 3] = y[1, :] = float("nan")
        for got, want in zip(compiled(y), _robust_stats(y)):
            torch.testing.assert_close(got, want, equal_nan=True)


_SPECIAL = (0.0, -0.0, 1.0, -1.0, 3.5, -3.5, 1e-30, 1e30, -1e-30, float("inf"), float("-inf"), float("nan"))


def test_hypot_of_infinities_and_of_large_and_small_values() -> None:
    # sqrt(a * a + b * b) in the operands' dtype gave NaN for hypot(inf, nan), inf for 1e30 and 0 for 1e-30
    a = torch.tensor(_SPECIAL).repeat_interleave(len(_SPECIAL))
    b = torch.tensor(_SPECIAL).repeat(len(_SPECIAL))
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        x, y = a.to(dtype), b.to(dtype)
        compiled = hir.compile(torch.hypot, (x, y))
        torch.testing.assert_close(compiled(x, y), torch.hypot(x, y), equal_nan=True, rtol=1e-15, atol=0)


def _powers(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return x**0.5, x**-0.5, x**-1, x**2, x**3, x**-2.0, x**1.5


def test_powers_torch_spells_as_sqrt_rsqrt_and_products() -> None:
    # fusion.pow gave inf for (-inf) ** 0.5 (torch: sqrt, NaN), 0.0 for (-0.0) ** 0.5 (-0.0), 0 for
    # (-inf) ** -0.5, and x ** 2, x ** 3, x ** -2 an ulp off torch's products in f32 and bf16
    x = torch.cat([torch.tensor(_SPECIAL), _seeded(64, seed=6) * 4])
    for dtype in (torch.float32, torch.bfloat16):
        compiled = hir.compile(_powers, (x.to(dtype),))
        for got, want in zip(compiled(x.to(dtype)), _powers(x.to(dtype))):
            torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
            assert torch.equal(torch.signbit(got[~got.isnan()]), torch.signbit(want[~want.isnan()]))


def _scaled(x: torch.Tensor, y: torch.Tensor | None = None, *, scale: float = 2.0, mask: torch.Tensor | None = None):
    out = x * scale if y is None else x * scale + y
    return out if mask is None else out.masked_fill(mask, 0.0)


def _scaled_pairs(pair: tuple[torch.Tensor, torch.Tensor], *, scale: float = 2.0) -> torch.Tensor:
    return pair[0] * scale + pair[1]


def test_keyword_only_arguments_passed_by_position_are_a_call_error() -> None:
    # compiled(x, y, s) took s for the keyword-only `scale` where eager raises a TypeError
    x, y, s = _seeded(3, seed=7), _seeded(3, seed=8), _seeded(3, seed=9)
    for training in (False, True):
        compiled = hir.compile(_scaled, (x,), training=training)
        for _ in range(2):  # the second call may replay the first's program
            torch.testing.assert_close(compiled(x, y), _scaled(x, y))
        torch.testing.assert_close(compiled(x, y, scale=3.0, mask=s > 0), _scaled(x, y, scale=3.0, mask=s > 0))
        with pytest.raises(TypeError):
            _scaled(x, y, s)
        with pytest.raises(CallError, match=r"takes 2 positional arguments \(x, y\), got 3: 'scale', 'mask' are"):
            compiled(x, y, s)
    compiled = hir.compile(_scaled_pairs, ((x, y),))
    torch.testing.assert_close(compiled((x, y), scale=3.0), _scaled_pairs((x, y), scale=3.0))
    with pytest.raises(CallError, match="'scale' is keyword-only"):
        compiled((x, y), 3.0)


class _Schedule(torch.nn.Module):
    """A diffusion schedule indexed by a 0-d step tensor, as a sampling loop calls it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("alphas", torch.linspace(0.9, 0.1, 10))

    def forward(self, x: torch.Tensor, t: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        a = self.alphas[t]
        return a.sqrt() * x[:, t] + (1 - a).sqrt() * x[logits.argmax(), -t]


def test_indexing_by_a_zero_dim_integer_tensor() -> None:
    # x[t] of a 0-d t reads t's value (torch.export's _local_scalar_dense): it was refused as `.item()`
    model = _Schedule()
    x, logits = _seeded(3, 10, seed=10), _seeded(3, seed=11)
    compiled = hir.compile(model, (x, torch.tensor(4), logits))
    for t in (torch.tensor(9), torch.tensor(0), torch.tensor(-2, dtype=torch.int32)):
        torch.testing.assert_close(compiled(x, t, logits), model(x, t, logits))
    with pytest.raises(IndexError):
        model(x, torch.tensor(10), logits)
    with pytest.raises(LocatedError, match="index out of range"):
        compiled(x, torch.tensor(10), logits)
    # a bool or uint8 0-d tensor is a mask in eager: not read as an index
    with pytest.raises(hir.FrontendError, match=r"reads a tensor's value into Python"):
        hir.compile(lambda x, t: x[t], (x, torch.tensor(1, dtype=torch.uint8)))


def _logs_and_powers_of_two(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.exp2(x), torch.log2(x.abs()), torch.log10(x.abs())


def test_exp2_log2_log10_of_half_precision_round_once_as_torch() -> None:
    # exp2 was exp(x * ln 2) with x * ln 2 rounded to bf16 (2^88.5 10% off, 2^20 5% off), and
    # log2 / log10 of bf16 scaled in bf16 (an ulp off)
    x = torch.cat(
        [torch.tensor([20.0, 88.5, -100.0, 0.5, 1e-30, float("inf"), float("nan")]), _seeded(64, seed=12) * 30]
    )
    for dtype in (torch.bfloat16, torch.float16):
        compiled = hir.compile(_logs_and_powers_of_two, (x.to(dtype),))
        for got, want in zip(compiled(x.to(dtype)), _logs_and_powers_of_two(x.to(dtype))):
            torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
    compiled = hir.compile(torch.exp2, (x,))
    torch.testing.assert_close(compiled(x), torch.exp2(x), equal_nan=True, rtol=1.2e-7, atol=0)


def _half_activations(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    p = torch.sigmoid(x)
    return F.leaky_relu(x, 0.2), torch.tan(x), torch.sinh(x), torch.cosh(x), torch.logit(p), torch.logit(p, eps=1e-6)


def test_half_precision_activations_round_as_torchs_kernels() -> None:
    # leaky_relu multiplied by a slope rounded to bf16, tan / sinh / cosh rounded each of their
    # ops (ulps off); logit computed in f32 where torch's kernel rounds `x / (1 - x)` to the dtype
    # (2x off near 0.5), and its eps bound 1 - 1e-6 unrounded (finite where eager gives inf)
    x = torch.cat([torch.tensor([-0.0078125, 0.0, 20.0, -88.5]), _seeded(96, seed=13) * 3])
    for dtype in (torch.bfloat16, torch.float16):
        compiled = hir.compile(_half_activations, (x.to(dtype),))
        for got, want in zip(compiled(x.to(dtype)), _half_activations(x.to(dtype))):
            torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


def _angles(u: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    cosine = F.cosine_similarity(u, v, dim=-1)
    return torch.acos(cosine.clamp(-1, 1)), torch.asin(cosine * 0.5)


def test_asin_and_acos_of_a_cosine_similarity() -> None:
    # torch.asin and torch.acos were refused (an angle between embeddings, a spherical interpolation)
    u, v = _seeded(16, 8, seed=14).requires_grad_(), _seeded(16, 8, seed=15)
    compiled = hir.compile(_angles, (u, v), training=True)
    got, want = compiled(u, v), _angles(u, v)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, equal_nan=True)
    (got[0] + got[1]).sum().backward()
    grad, u.grad = u.grad, None
    (want[0] + want[1]).sum().backward()
    torch.testing.assert_close(grad, u.grad)
    x = torch.tensor([1.0, -1.0, 0.0, -0.0, 0.5, -0.9999999, 1.0000001, float("nan"), float("inf")])
    compiled = hir.compile(lambda x: (torch.asin(x), torch.acos(x)), (x,))
    for g, w in zip(compiled(x), (torch.asin(x), torch.acos(x))):
        torch.testing.assert_close(g, w, equal_nan=True)
        assert torch.equal(torch.signbit(g[:4]), torch.signbit(w[:4]))


def _cache_update(cache: torch.Tensor, position: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return cache.index_copy(1, position, k), cache.index_fill(1, position, 0.0)


def test_index_copy_of_a_negative_index_raises_as_eager() -> None:
    # torch's decomposition (an index_put) counted -1 from the end where eager's index_copy raises;
    # index_fill, which eager lets count from the end, still does
    cache, k = _seeded(2, 6, 3, seed=16), _seeded(2, 1, 3, seed=17)
    compiled = hir.compile(_cache_update, (cache, torch.tensor([2]), k))
    for position in (torch.tensor([5]), torch.tensor([0])):
        for got, want in zip(compiled(cache, position, k), _cache_update(cache, position, k)):
            torch.testing.assert_close(got, want)
    fill = hir.compile(lambda c, p: c.index_fill(1, p, 0.0), (cache, torch.tensor([-6])))
    torch.testing.assert_close(fill(cache, torch.tensor([-6])), cache.index_fill(1, torch.tensor([-6]), 0.0))
    with pytest.raises(IndexError):
        _cache_update(cache, torch.tensor([-1]), k)
    with pytest.raises(LocatedError, match="out of bounds"):
        compiled(cache, torch.tensor([-1]), k)
