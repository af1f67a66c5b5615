"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU, float32): the
regressions found by the third round of user-style probes (graph networks, audio, recommendation).
"""

from __future__ import annotations

import copy

import pytest
import torch

import hir


def _seeded(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class _ScatterReduce(torch.nn.Module):
    """A GNN aggregation: a linear's rows reduced into their graph's row by `scatter_reduce`."""

    def __init__(self, reduce: str, include_self: bool) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.reduce, self.include_self = reduce, include_self

    def forward(self, x: torch.Tensor, batch: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        base = torch.arange(12.0).view(3, 4) / 7 + 0.5
        return base.scatter_reduce(0, batch[:, None].expand_as(y), y, self.reduce, include_self=self.include_self)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "amax"])
def test_scatter_reduce_prod_compiles_and_trains(reduce: str, include_self: bool) -> None:
    # reduce="prod" passed fusion.prod a list of axes (a raw AttributeError in xdsl).
    torch.manual_seed(0)
    model = _ScatterReduce(reduce, include_self)
    eager = copy.deepcopy(model)
    x, batch = _seeded(7, 4, seed=1), torch.tensor([0, 0, 2, 2, 2, 0, 0])
    with torch.no_grad():
        torch.testing.assert_close(hir.compile(model, (x, batch))(x, batch), eager(x, batch))
    trained = hir.compile(model, (x, batch), training=True)
    got, want = trained(x, batch), eager(x, batch)
    torch.testing.assert_close(got, want)
    weight = torch.linspace(0.5, 1.5, 12).view(3, 4)
    (got * weight).sum().backward()
    (want * weight).sum().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)


class _MaskedEmbedding(torch.nn.Module):
    """wav2vec 2.0's time masking: masked frames replaced by a learned embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.masked_spec_embed = torch.nn.Parameter(torch.rand(8))
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        x[mask] = self.masked_spec_embed.to(x.dtype)
        return x * 2


def test_a_masked_assignment_of_a_row_compiles_and_trains() -> None:
    # `x[mask] = row` (one value per masked frame) was refused as a scatter; in training autograd's
    # backward of it read `grad[mask]` (a data-dependent shape).
    torch.manual_seed(0)
    model = _MaskedEmbedding()
    eager = copy.deepcopy(model)
    x, mask = _seeded(2, 6, 8, seed=2), torch.tensor([[1, 0, 1, 1, 0, 0], [0, 0, 1, 0, 1, 1]], dtype=torch.bool)
    with torch.no_grad():
        torch.testing.assert_close(hir.compile(model, (x, mask))(x, mask), eager(x, mask))
    trained = hir.compile(model, (x, mask), training=True)
    got, want = trained(x, mask), eager(x, mask)
    torch.testing.assert_close(got, want)
    weight = torch.linspace(0.5, 1.5, got.numel()).view(got.shape)
    (got * weight).sum().backward()
    (want * weight).sum().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)


def test_a_masked_assignment_of_one_value_per_element_is_a_located_error() -> None:
    def fn(x: torch.Tensor, mask: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[mask] = y[mask]
        return x

    x, y = _seeded(2, 6, seed=3), _seeded(2, 6, seed=4)
    with pytest.raises(hir.frontend.FrontendError, match=r"test_model_code_round3\.py"):
        hir.compile(fn, (x, x > 0, y))
