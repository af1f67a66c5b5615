"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU): tensor
constants a trace makes from the input's shape, called at a second shape; signbit; antialiased
resizing (a ViT's position embedding resampled as timm does, torchvision's tensor Resize).
"""

from __future__ import annotations

import torch

import hir


def _seeded(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


class _Falcon(torch.nn.Module):
    """Falcon's multi-query split (`fused[..., [-2], :]`: index lists torch lifts as constants) and a
    constant made from the sequence length, next to a non-persistent buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.query_key_value = torch.nn.Linear(16, 24, bias=False)
        self.register_buffer("inv_freq", torch.rand(4), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        fused = self.query_key_value(x).view(B, T, 6, 4)
        q, k, v = fused[..., :-2, :], fused[..., [-2], :], fused[..., [-1], :]
        q, k, v = (q * self.inv_freq).transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / torch.tensor([float(T)])
        return scores.softmax(-1) @ v


def test_constants_of_each_shapes_trace_are_its_own() -> None:
    # Every specialization held its inputs by position in one table: the second shape's constants
    # were the first trace's tensors at those positions (the length 5 for a call of length 3, a
    # silent wrong answer; or the buffer where an index list was, a call error).
    torch.manual_seed(0)
    model = _Falcon().eval()
    compiled = hir.compile(model, (_seeded(2, 5, 16, seed=1),))
    with torch.no_grad():
        for k, shape in enumerate([(2, 5, 16), (1, 3, 16), (2, 5, 16), (3, 7, 16)]):
            x = _seeded(*shape, seed=k)
            torch.testing.assert_close(compiled(x), model(x))


def test_a_functions_shape_constant_at_a_second_shape() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return x + torch.tensor([float(x.shape[0]), 1.0])

    compiled = hir.compile(f, (torch.zeros(2, 2),))
    for rows in (2, 3, 4, 2):
        x = _seeded(rows, 2, seed=rows)
        torch.testing.assert_close(compiled(x), f(x))
