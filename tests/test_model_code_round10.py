"""
Model code as users write it, compiled with `hir.compile` for inference against eager torch (CPU):
advanced indexing with index tensors on axes that are not adjacent (`x[i, :, j]`, read and
assigned).
"""

from __future__ import annotations

import torch

import hir


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
