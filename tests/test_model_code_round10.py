"""
Model code as users write it, compiled with `hir.compile` for inference against eager torch (CPU):
advanced indexing with index tensors on axes that are not adjacent (`x[i, :, j]`, read and
assigned); bitwise and, or and xor of integer tensors (hashed embeddings, int4 packing); dilated max
pooling (a TCN's); an argument updated in place and returned (`out=`-style code) is the argument; the inverse
hyperbolic functions (a tanh-squashed policy's log-probability); `scatter` of an index out of range,
and `x[i, j]` of an index out of its own axis but inside the merged one, raise as eager does.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.diagnostics import LocatedError


def _seeded(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _pick(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    return x[rows, :, cols] + x[0, :, cols].sum()


def _assign(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[rows, :, cols] = v
    return y


def test_index_tensors_on_axes_that_are_not_adjacent() -> None:
    # torch puts the broadcast index axes first; these were refused
    rows, cols = torch.tensor([[0], [2]]), torch.tensor([1, -1, 0])
    compiled = hir.compile(_pick, (_seeded(3, 5, 4, seed=0), rows, cols))
    for seed, shape in ((1, (3, 5, 4)), (2, (4, 2, 3))):
        x = _seeded(*shape, seed=seed)
        torch.testing.assert_close(compiled(x, rows, cols), _pick(x, rows, cols))
    cols = torch.tensor([1, -1])
    compiled = hir.compile(_assign, (_seeded(3, 5, 4, seed=3), rows[:, 0], cols, _seeded(2, 5, seed=4)))
    for v in (_seeded(2, 5, seed=5), _seeded(1, 5, seed=6)):
        x = _seeded(3, 5, 4, seed=7)
        torch.testing.assert_close(compiled(x, rows[:, 0], cols, v), _assign(x, rows[:, 0], cols, v))


class _HashedEmbedding(torch.nn.Module):
    """Two hashes of each id (multiplicative, mixed with xor) into a small table, as hashing-trick recommenders do."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Embedding(61, 4)

    def forward(self, ids: torch.Tensor, salt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h1 = ((ids * 2654435761) ^ (ids >> 7)) % 61
        h2 = ((ids ^ salt) | 1) & 0xFFFF
        packed = ((h1 & 0xF) << 4) | (h2.to(torch.uint8) & 0xF)
        return self.table(h1) + self.table(h2 % 61), packed


def test_bitwise_and_or_xor_of_integers() -> None:
    # `a ^ b`, `a | b` and `a & b` of integer tensors (other than `& (2^k - 1)`) were refused
    model = _HashedEmbedding().eval()
    ids = torch.randint(0, 2**40, (3, 5), generator=torch.Generator().manual_seed(0))
    salt = torch.randint(-(2**20), 2**20, (5,), generator=torch.Generator().manual_seed(1))
    compiled = hir.compile(model, (ids, salt))
    with torch.no_grad():
        for seed, shape in ((2, (3, 5)), (3, (2, 5))):
            ids = torch.randint(0, 2**40, shape, generator=torch.Generator().manual_seed(seed))
            got, want = compiled(ids, salt), model(ids, salt)
            torch.testing.assert_close(got[0], want[0])
            assert got[1].dtype == want[1].dtype
            assert torch.equal(got[1], want[1])


def _dilated_pools(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    values, indices = F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True)
    return values, indices, F.max_pool1d(x.flatten(2), 2, 1, 0, dilation=3)


def test_dilated_max_pooling() -> None:
    # was refused ("a dilated max pooling is not supported")
    x = _seeded(2, 3, 9, 8, seed=0)
    compiled = hir.compile(_dilated_pools, (x,))
    for seed, shape in ((1, (2, 3, 9, 8)), (2, (1, 3, 8, 10))):
        x = _seeded(*shape, seed=seed)
        for got, want in zip(compiled(x), _dilated_pools(x)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def _into(x: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out[:, 1:3] = x[:, :2] + 1
    return out, out.t()


def test_an_argument_updated_in_place_and_returned_is_that_argument() -> None:
    # it came back as a copy: eager's `y = f(x, out); y += 1` updates `out`, the compiled one did not
    compiled = hir.compile(_into, (_seeded(3, 4, seed=0), _seeded(3, 4, seed=1)))
    x, out = _seeded(3, 4, seed=2), _seeded(3, 4, seed=3)
    want = _into(x, out.clone())
    got = compiled(x, out)
    assert got[0] is out
    assert got[1]._base is out
    torch.testing.assert_close(got, want)


def _squashed_log_prob(mean: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, ...]:
    # SAC's tanh-squashed Gaussian: the pre-squash value of an action, its log-probability
    pre = torch.atanh(action.clamp(-0.999, 0.999))
    log_prob = -0.5 * (pre - mean) ** 2 - torch.log1p(-action.pow(2) + 1e-6)
    return log_prob.sum(-1), torch.asinh(mean * 1e3), torch.acosh(mean.abs() + 1)


def test_inverse_hyperbolic_functions() -> None:
    # aten.asinh, aten.acosh and aten.atanh had no entry in the ATen table
    special = torch.tensor([0.0, -0.0, 1e-30, 1.0, -1.0, 0.5, 3e8, float("inf"), float("nan")])
    for dtype in (torch.float32, torch.bfloat16):
        x = special.to(dtype)
        f = lambda t: (torch.asinh(t), torch.acosh(t), torch.atanh(t))  # noqa: E731
        got, want = hir.compile(f, (x,))(x), f(x)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=2e-7, atol=0, equal_nan=True)
            assert torch.equal(g.signbit()[~w.isnan()], w.signbit()[~w.isnan()])  # -0.0 kept
    mean, action = _seeded(3, 4, seed=0), torch.tanh(_seeded(3, 4, seed=1))
    compiled = hir.compile(_squashed_log_prob, (mean, action))
    for seed, shape in ((2, (3, 4)), (3, (1, 4))):
        mean, action = _seeded(*shape, seed=seed), torch.tanh(_seeded(*shape, seed=seed + 9))
        torch.testing.assert_close(compiled(mean, action), _squashed_log_prob(mean, action))


def _keep_top(scores: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(scores).scatter(1, index, scores.gather(1, index.clamp(max=3)))


def test_scatter_of_an_index_out_of_range_raises_as_eager() -> None:
    # the entry named no position and was dropped: a result where eager raises
    index = torch.tensor([[0, 2], [1, 3]])
    compiled = hir.compile(_keep_top, (_seeded(2, 4, seed=0), index))
    scores = _seeded(2, 4, seed=1)
    torch.testing.assert_close(compiled(scores, index), _keep_top(scores, index))
    for bad in (torch.tensor([[0, 2], [1, 4]]), torch.tensor([[0, -1], [1, 3]])):
        with pytest.raises(RuntimeError, match="out of bounds"):
            _keep_top(scores, bad)
        # at the user's line (the ops inside a launch keep their source lines)
        with pytest.raises(
            LocatedError, match=r"test_model_code_round10\.py:\d+: error: .*index -?\d is out of bounds"
        ):
            compiled(scores, bad)


def _pair(x: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = x.clone()
    y[i, j] = 1.0
    return x[i, j], y


def test_an_index_out_of_its_axis_but_inside_the_merged_axes_raises_as_eager() -> None:
    # x[1, 3] of a [5, 3] x read x[2, 0] (row-major position 6), and the assignment wrote there
    i, j = torch.tensor([0, 1]), torch.tensor([2, -3])
    x = _seeded(5, 3, seed=0)
    compiled = hir.compile(_pair, (x, i, j))
    torch.testing.assert_close(compiled(x, i, j), _pair(x, i, j))
    for bad in (torch.tensor([2, 3]), torch.tensor([0, -4])):
        with pytest.raises(IndexError):
            _pair(x, i, bad)
        with pytest.raises(LocatedError, match=r"test_model_code_round10\.py:\d+: error: .*index out of range"):
            compiled(x, i, bad)
