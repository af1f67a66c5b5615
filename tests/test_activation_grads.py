"""
`fusion.gelu_backward` and `fusion.silu_backward`: what autograd records for gelu and silu is
imported as one op (not the decomposed formula), runs as torch's one kernel, and gives eager's
gradients on random data (f32, and bf16 within bf16's error); the mesh training backward of the
tensor-parallel MLP launches it once.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.dialects import fusion
from hir.runtime.kernels import eager_kernel, out_kernel

ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),
    "gelu-tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
}


class Mlp(torch.nn.Module):
    def __init__(self, activation: str, hidden: int = 8, ffn: int = 32, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, ffn, dtype=dtype)
        self.fc2 = torch.nn.Linear(ffn, hidden, dtype=dtype)
        self.activation = ACTIVATIONS[activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.activation(self.fc1(x)))


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_training_gradients_match_eager(activation: str, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    mlp = Mlp(activation, dtype=dtype)
    eager = copy.deepcopy(mlp)
    compiled = hir.compile(mlp, (randn(6, 8, seed=1, dtype=dtype),), training=True)
    x = randn(6, 8, seed=2, dtype=dtype).requires_grad_()
    y = x.detach().clone().requires_grad_()
    grad = randn(6, 8, seed=3, dtype=dtype)
    compiled(x).backward(grad)
    eager(y).backward(grad)
    tolerance = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {}
    torch.testing.assert_close(x.grad, y.grad, **tolerance)
    for (name, p), (_, q) in zip(mlp.named_parameters(), eager.named_parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, **tolerance, msg=lambda m, name=name: f"{name}: {m}")
    (programs,) = compiled.graphs.values()
    backward = str(programs["backward"].module)
    name = "fusion.silu_backward" if activation == "silu" else "fusion.gelu_backward"
    assert backward.count(f"= {name} ") == 1  # one op, not the formula in ten
    assert "fusion.erf" not in backward
    assert "fusion.sigmoid" not in backward


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_kernels(approximate: str) -> None:
    """The eager kernel and the out= kernel (into a contiguous and a strided destination) give torch's gradient."""
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.ir import Block

    block = Block(arg_types=[TensorType(f32, [4, 6]), TensorType(f32, [4, 6])])
    op = fusion.GeluBackwardOp(block.args[0], block.args[1], approximate)
    grad, x = randn(4, 6, seed=4), randn(4, 6, seed=5) * 3
    leaf = x.clone().requires_grad_()
    F.gelu(leaf, approximate=approximate).backward(grad)
    torch.testing.assert_close(eager_kernel(op)(grad, x), leaf.grad)
    out = torch.empty(4, 6)
    out_kernel(op)(out, grad, x)
    torch.testing.assert_close(out, leaf.grad)
    strided = torch.zeros(6, 4).t()
    out_kernel(op)(strided, grad, x)
    torch.testing.assert_close(strided, leaf.grad)


def test_silu_backward_kernels() -> None:
    from xdsl.dialects.builtin import TensorType, bf16
    from xdsl.ir import Block

    block = Block(arg_types=[TensorType(bf16, [4, 6]), TensorType(bf16, [4, 6])])
    op = fusion.SiluBackwardOp(block.args[0], block.args[1])
    grad, x = randn(4, 6, seed=6, dtype=torch.bfloat16), randn(4, 6, seed=7, dtype=torch.bfloat16)
    leaf = x.clone().requires_grad_()
    F.silu(leaf).backward(grad)
    out = torch.empty(4, 6, dtype=torch.bfloat16)
    out_kernel(op)(out, grad, x)
    torch.testing.assert_close(out, leaf.grad)
