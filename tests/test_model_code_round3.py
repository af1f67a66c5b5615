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
