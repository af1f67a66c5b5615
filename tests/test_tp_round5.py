"""
Tensor-parallel calls with the argument and module-state cases that gave silent wrong answers on
one device (tests/tp_round5_driver.py on 2 gloo ranks: attributes read by a training step, the same tensor
twice, -0.0, a parameter as an argument, module changes, accumulation and clipping), and tied
weights' layouts on a mesh of one device.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from ranks import run_ranks
from test_distributed import _output

import hir

DRIVER = Path(__file__).resolve().parent / "tp_round5_driver.py"


@pytest.mark.distributed
def test_round5_cases_on_two_gloo_ranks() -> None:
    result = run_ranks([str(DRIVER)], timeout=240)
    assert result.returncode == 0, _output(result)
    assert "tp round 5: 3 cases match eager or raise the same clear error" in result.stdout, _output(result)


class Tied(torch.nn.Module):
    """fc3 reads fc2's weight: a row-parallel linear under two names."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False)
        self.fc3 = torch.nn.Linear(16, 8, bias=False)
        self.fc3.weight = self.fc2.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(F.gelu(self.fc1(x))) + self.fc2(F.relu(self.fc1(x)))


def test_a_tied_weights_layout_applies_under_each_name() -> None:
    """Export read the tie as 'fc2.weight' and 'fc3.weight'; the one without the entry was replicated (refused)."""
    block, x = Tied().eval(), torch.randn(8, 8)
    layouts = {"fc1.weight": "[didx, serial]", "fc2.weight": "[serial, didx]"}
    compiled = hir.compile(block, (x,), ["[didx, serial]"], ["[didx, serial]"], mesh=[0], param_layouts=layouts)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), block(x))


def test_two_layouts_of_one_tied_tensor_are_an_error() -> None:
    layouts = {"fc1.weight": "[didx, serial]", "fc2.weight": "[serial, didx]", "fc3.weight": None}
    with pytest.raises(hir.FrontendError) as err:
        hir.compile(Tied().eval(), (torch.randn(8, 8),), ["[didx, serial]"], mesh=[0], param_layouts=layouts)
    assert str(err.value).startswith("<layouts>: error: param_layouts gives one tensor different layouts"), str(
        err.value
    )
    assert "the module holds it under ['fc2.weight', 'fc3.weight'] (tied weights)" in str(err.value)


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)
        self.scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x))) * self.scale


MEGATRON = {"fc1.weight": "[didx, serial]", "fc1.bias": "[didx]", "fc2.weight": "[serial, didx]"}


def mesh_step(block: torch.nn.Module, x: torch.Tensor) -> Any:
    """The block's training step on the mesh [0], Megatron's cut, rows sharded."""
    return hir.compile(block, (x,), ["[didx, serial]"], mesh=[0], param_layouts=MEGATRON, training=True)


def assert_step_matches_eager(block: torch.nn.Module, step: Any, x: torch.Tensor) -> None:
    """The step's output and every parameter's gradient of a squared-sum loss, against the block's own."""
    block.zero_grad()
    y = step(x)
    y.square().sum().backward()
    got = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()
    want = block(x)
    want.square().sum().backward()
    torch.testing.assert_close(y, want.detach())
    for g, p in zip(got, block.parameters()):
        torch.testing.assert_close(g, p.grad)


def test_a_training_step_on_a_mesh_reads_attributes_at_each_call() -> None:
    """It ran the step traced with scale 2.0 after `model.scale = -0.5`: the output and every gradient wrong."""
    block, x = Scaled(), torch.randn(8, 8)
    step = mesh_step(block, x)
    for scale in (2.0, -0.5, 2.0):
        block.scale = scale
        assert_step_matches_eager(block, step, x)


class Constant(Scaled):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x))) * torch.tensor(self.scale)


def test_a_training_step_on_a_mesh_takes_a_tensor_constant() -> None:
    """`torch.tensor(self.scale)` in a training step on a mesh was 'a tensor of unknown sharding (an internal error)'."""
    block, x = Constant(), torch.randn(8, 8)
    assert_step_matches_eager(block, mesh_step(block, x), x)
