"""
Ops that draw random numbers (`fusion.random`): dropout in training mode (also inside attention),
its gradient, and torch's sampling functions. The numbers are not eager's, so each test checks
what holds for any draw: a dropped element is 0 and a kept one is eager's value scaled by
1 / (1 - p), the kept fraction is near 1 - p, the gradient flows through the kept elements only,
the samples have their distribution's mean and spread, and one seed gives the same draws.
"""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hir
from hir.frontend import FrontendError


def _kept_fraction_near(kept: torch.Tensor, p: float) -> None:
    fraction = kept.float().mean().item()
    spread = 4 * (p * (1 - p) / kept.numel()) ** 0.5  # four standard deviations of the binomial
    assert abs(fraction - (1 - p)) < spread, (fraction, 1 - p)


class Mlp(nn.Module):
    def __init__(self, p: float) -> None:
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.drop = nn.Dropout(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(torch.tanh(self.fc(x)))


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_in_training_mode_drops_and_scales(p: float) -> None:
    torch.manual_seed(0)
    module = Mlp(p)  # training mode, as a module is made
    x = torch.randn(256, 64)
    compiled = hir.compile(module, (x,))
    assert "fusion.random uniform" in compiled.fusion_text
    with torch.no_grad():
        h = torch.tanh(module.fc(x))
    first, second = compiled(x), compiled(x)
    for out in (first, second):
        kept = out != 0
        _kept_fraction_near(kept, p)
        torch.testing.assert_close(out[kept], h[kept] / (1 - p))
    assert not torch.equal(first != 0, second != 0)  # a new mask at each call
    module.eval()  # the eval program has no draw: eager's values
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), h)


def test_dropout_of_probability_one_and_zero() -> None:
    x = torch.randn(16, 8)
    compiled = hir.compile(lambda x: F.dropout(x, 1.0) + F.dropout(x, 0.0), (x,))
    torch.testing.assert_close(compiled(x), x)  # everything dropped, then nothing


def test_two_dropouts_draw_two_masks() -> None:
    torch.manual_seed(0)
    x = torch.ones(64, 64)
    compiled = hir.compile(lambda x: torch.stack([F.dropout(x, 0.5), F.dropout(x, 0.5)]), (x,))
    assert compiled.fusion_text.count("fusion.random") == 2
    assert str(compiled.module).count("fusion.random") == 2  # both survive the lowering (cse keeps draws apart)
    first, second = compiled(x)
    assert not torch.equal(first, second)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x + torch.rand_like(x).exp(),  # the draw and its exp: one launch
        lambda x: torch.randn(4, 8).abs().sqrt() * x,
        lambda x: F.dropout(torch.tanh(x), 0.5, training=True),
    ],
)
def test_every_call_draws_anew(fn) -> None:
    # A draw inside a launch with other ops was once kept as a constant, made at the first call
    # (it inherits `Pure` from FusionOp beside its effects): every later call repeated it.
    x = torch.randn(4, 8)
    compiled = hir.compile(fn, (x,))
    first, second, third = compiled(x), compiled(x), compiled(x)
    assert not torch.equal(first, second)
    assert not torch.equal(second, third)


def test_a_draw_has_effects() -> None:
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.traits import is_side_effect_free

    from hir.dialects import fusion

    assert not is_side_effect_free(fusion.RandomOp("uniform", TensorType(f32, [4])))
    assert is_side_effect_free(fusion.FullOp(1.0, TensorType(f32, [4])))


def test_a_seed_gives_the_same_draws() -> None:
    x = torch.randn(32, 32)
    compiled = hir.compile(lambda x: F.dropout(x, 0.3) + torch.randn_like(x), (x,))
    torch.manual_seed(7)
    first = compiled(x)
    torch.manual_seed(7)
    torch.testing.assert_close(compiled(x), first)


def test_dropout_trains_through_the_kept_elements() -> None:
    """The backward's mask is the forward's: the gradient is eager's through the elements kept."""
    torch.manual_seed(0)
    module = Mlp(0.25)
    x = torch.randn(128, 64)
    compiled = hir.compile(module, (x,), training=True)
    out = compiled(x)
    out.pow(2).sum().backward()
    grads = [p.grad.clone() for p in module.parameters()]
    module.zero_grad()
    kept = (out != 0).detach()
    _kept_fraction_near(kept, 0.25)
    (torch.tanh(module.fc(x)) * kept / 0.75).pow(2).sum().backward()
    for got, want in zip(grads, (p.grad for p in module.parameters())):
        torch.testing.assert_close(got, want)


def test_attention_with_dropout_is_its_math() -> None:
    """`dropout_p` in training: softmax, dropout, times v (v the identity shows the probabilities)."""
    torch.manual_seed(0)

    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, is_causal=True)

    q, k = torch.randn(2, 3, 16, 16), torch.randn(2, 3, 16, 16)
    v = torch.eye(16).expand(2, 3, 16, 16).contiguous()
    compiled = hir.compile(attention, (q, k, v))
    assert "fusion.sdpa" not in compiled.fusion_text
    assert "fusion.random" in compiled.fusion_text
    out = compiled(q, k, v)
    causal = torch.ones(16, 16, dtype=torch.bool).tril()
    probabilities = torch.softmax((q @ k.transpose(-2, -1) / 4).masked_fill(~causal, float("-inf")), -1)
    kept = out != 0
    _kept_fraction_near(kept[probabilities > 0], 0.5)
    torch.testing.assert_close(out[kept], probabilities[kept] * 2)
    # Without dropout the same call is one fusion.sdpa.
    plain = hir.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))
    assert plain.fusion_text.count("fusion.sdpa") == 1


_LOG_NORMAL_STD = ((math.exp(0.25) - 1) * math.exp(0.25)) ** 0.5


@pytest.mark.parametrize(
    ("name", "fn", "mean", "std"),
    [
        ("rand_like", lambda x: torch.rand_like(x), 0.5, (1 / 12) ** 0.5),
        ("randn", lambda x: torch.randn(x.shape) * 2 + 1, 1.0, 2.0),
        ("bernoulli", lambda x: torch.bernoulli(torch.full_like(x, 0.3)), 0.3, (0.3 * 0.7) ** 0.5),
        ("bernoulli_p", lambda x: x.bernoulli(0.8), 0.8, (0.8 * 0.2) ** 0.5),
        ("randint", lambda x: torch.randint(3, 9, x.shape).float(), 5.5, ((6**2 - 1) / 12) ** 0.5),
        ("normal", lambda x: torch.normal(torch.full_like(x, -1.0), 0.5), -1.0, 0.5),
        ("uniform_", lambda x: torch.empty_like(x).uniform_(-2, 4), 1.0, 6 / 12**0.5),
        ("exponential_", lambda x: torch.empty_like(x).exponential_(2.0), 0.5, 0.5),
        ("log_normal_", lambda x: torch.empty_like(x).log_normal_(0.0, 0.5), math.exp(0.125), _LOG_NORMAL_STD),
        ("geometric_", lambda x: torch.empty_like(x).geometric_(0.25), 4.0, 0.75**0.5 / 0.25),
        ("random_", lambda x: torch.empty_like(x).random_(3), 1.0, (8 / 12) ** 0.5),
    ],
)
def test_samples_have_their_distribution(name: str, fn, mean: float, std: float) -> None:
    torch.manual_seed(0)
    x = torch.zeros(256, 256)
    samples = hir.compile(fn, (x,))(x)
    assert samples.shape == x.shape
    assert abs(samples.mean().item() - mean) < 5 * std / x.numel() ** 0.5, name
    assert abs(samples.std().item() - std) < 0.02 * std, name


def test_cauchy_has_its_median_and_scale() -> None:
    # No mean: the median and the median of the distance to it (the scale).
    x = torch.zeros(256, 256)
    samples = hir.compile(lambda x: torch.empty_like(x).cauchy_(1.0, 2.0), (x,))(x)
    assert abs(samples.median().item() - 1.0) < 0.05
    assert abs((samples - 1.0).abs().median().item() - 2.0) < 0.1


def test_rrelu_draws_its_slopes_and_trains_through_them() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.RReLU(0.1, 0.3)).train()
    step = hir.compile(model, (torch.randn(4, 8),), training=True)
    x = torch.randn(512, 8, requires_grad=True)
    out = step(x)
    h = model[0](x.detach())
    slopes = out.detach()[h < 0] / h[h < 0]
    assert slopes.min() >= 0.1 - 1e-6
    assert slopes.max() <= 0.3 + 1e-6
    assert abs(slopes.mean() - 0.2) < 0.01
    torch.testing.assert_close(out[h >= 0], h[h >= 0])
    out.sum().backward()  # the backward multiplies by the forward's slopes
    slope = torch.where(h < 0, out.detach() / h, torch.ones_like(h))
    torch.testing.assert_close(x.grad, slope @ model[0].weight.detach())
    eval_mode = hir.compile(lambda x: F.rrelu(x, 0.1, 0.3, training=False), (x.detach(),))
    torch.testing.assert_close(eval_mode(x.detach()), F.rrelu(x.detach(), 0.1, 0.3, training=False))


def test_randint_covers_its_range() -> None:
    x = torch.zeros(4096)
    values = hir.compile(lambda x: torch.randint(-2, 3, x.shape), (x,))(x)
    assert values.dtype == torch.int64
    assert set(values.tolist()) == {-2, -1, 0, 1, 2}


def test_dropout_on_a_streamed_batch() -> None:
    """Each stream chunk draws its own slice of the mask."""
    torch.manual_seed(0)
    module = Mlp(0.5)
    x = torch.randn(8, 32, 64)
    compiled = hir.compile(module, (x,), ["[stream, serial, serial]"])
    assert "hir.for" in str(compiled.module)
    out = compiled(x)
    with torch.no_grad():
        h = torch.tanh(module.fc(x))
    kept = out != 0
    _kept_fraction_near(kept, 0.5)
    torch.testing.assert_close(out[kept], h[kept] * 2)
    assert not torch.equal(kept[0], kept[1])  # the rows' masks differ


def test_on_a_mesh_a_draw_is_a_located_error() -> None:
    def drop(x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, 0.1)

    with pytest.raises(FrontendError) as err:
        hir.compile(drop, (torch.randn(8, 4),), mesh=[0])
    assert re.search(r"test_random_ops.py:\d+: error: .*draws random numbers, which on a mesh", str(err.value))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_replay_draws_new_numbers() -> None:
    """A CUDA graph's replay advances the generator: each call a new mask, as eager."""
    torch.manual_seed(0)
    module = Mlp(0.5).cuda()
    x = torch.randn(256, 64, device="cuda")
    compiled = hir.compile(module, (x,), cuda_graph=True)
    masks = [(compiled(x) != 0).clone() for _ in range(3)]
    assert not torch.equal(masks[1], masks[2])
    for kept in masks:
        _kept_fraction_near(kept, 0.5)


DRAWS = """
func.func @main(%x: tensor<{shape}>) -> tensor<{shape}, #fusion.parallel<[{layout}, serial]>> {{
  %n = fusion.random normal : tensor<{shape}, #fusion.parallel<[{layout}, serial]>>
  %xs = fusion.set %x : tensor<{shape}> -> tensor<{shape}, #fusion.parallel<[{layout}, serial]>>
  %y = fusion.add %xs, %n : tensor<{shape}, #fusion.parallel<[{layout}, serial]>>, tensor<{shape}, #fusion.parallel<[{layout}, serial]>> -> tensor<{shape}, #fusion.parallel<[{layout}, serial]>>
  func.return %y : tensor<{shape}, #fusion.parallel<[{layout}, serial]>>
}}
"""


def test_hir_run_check_seeds_both_runs(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Whole draws agree from one seed; a stream loop's row by row draws do not, and the failure says why."""
    from test_compare import hir_run

    whole, rows = tmp_path / "whole.mlir", tmp_path / "rows.mlir"
    whole.write_text(DRAWS.format(layout="serial", shape="8x16xf32"))
    rows.write_text(DRAWS.format(layout="stream", shape="8x4xf32"))  # rows too short for one batch of draws
    code, out, _ = hir_run(capsys, whole, "--check", "--device", "cpu")
    assert code == 0, out
    assert "check: OK" in out
    code, _, err = hir_run(capsys, rows, "--check", "--device", "cpu")
    assert code == 1
    assert "check failed" in err
    assert "the program draws random numbers, fusion.random: both runs were seeded alike" in err


def test_a_generator_argument_is_a_located_error() -> None:
    class Noisy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.generator = torch.Generator().manual_seed(0)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.randn(x.shape, generator=self.generator)

    with pytest.raises(FrontendError, match=r"test_random_ops.py:\d+: error: a torch.Generator \(generator=\)"):
        hir.compile(Noisy(), (torch.randn(4),))


def test_an_export_that_refuses_the_generator_argument_says_the_same() -> None:
    # torch 2.11's export refuses the argument while capturing, before any op names it.
    from hir.frontend.errors import capture_error

    try:
        raise RuntimeError("argument of type: <class 'torch._C.Generator'>")
    except RuntimeError as err:
        error = capture_error(err)
    assert re.search(r"test_random_ops.py:\d+: error: a torch.Generator \(generator=\) is not supported", str(error))


def test_channel_dropout_drops_whole_channels() -> None:
    """`F.dropout2d` draws one keep per (sample, channel): a channel is all dropped or all scaled."""
    torch.manual_seed(0)
    x = torch.rand(16, 32, 5, 5) + 0.1
    out = hir.compile(lambda x: F.dropout2d(x, 0.5), (x,))(x)
    dropped = (out == 0).flatten(2)
    assert bool((dropped.all(-1) | ~dropped.any(-1)).all())
    _kept_fraction_near(~dropped.all(-1), 0.5)
    kept = ~dropped
    torch.testing.assert_close(out.flatten(2)[kept], x.flatten(2)[kept] * 2)
