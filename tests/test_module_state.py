"""
A compiled module reads its parameters and buffers as they are at each call, as eager torch does:
after an in-place update, a reassignment of `.data` or of the parameter, a load of a state dict
and a move to another device, every call matches eager (frontend/module_state.py). A change the
program cannot take (another shape or dtype, a parameter removed) is an error that names it.
"""

from __future__ import annotations

import pytest
import torch

import hir
from hir.frontend.errors import FrontendError


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.register_buffer("scale", torch.rand(16) + 0.5, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(x)) * self.scale


def randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def test_every_call_reads_the_modules_parameters_as_they_are_now() -> None:
    torch.manual_seed(0)
    block = Block()
    x = randn(8, 16, seed=1)
    compiled = hir.compile(block, (x,))
    changes = [
        lambda: None,
        lambda: block.fc.weight.mul_(-2.0),  # in place (an optimizer step)
        lambda: setattr(block.fc.weight, "data", randn(16, 16, seed=2)),
        lambda: setattr(block.fc, "bias", torch.nn.Parameter(randn(16, seed=3))),
        lambda: block.load_state_dict({"fc.weight": randn(16, 16, seed=4), "fc.bias": randn(16, seed=5)}),
        lambda: block.scale.copy_(randn(16, seed=6)),  # a non-persistent buffer, in place
        lambda: setattr(block, "scale", randn(16, seed=7)),  # and replaced
    ]
    for change in changes:
        change()
        torch.testing.assert_close(compiled(x), block(x))


@torch.no_grad()
def test_a_replaced_parameter_is_not_kept_alive_by_the_function() -> None:
    """No tensor the compiled function holds shares the storage of a weight the module replaced."""
    import gc
    import warnings

    block = Block()
    x = randn(8, 16, seed=1)
    compiled = hir.compile(block, (x,))
    compiled(x)
    old = block.fc.weight.untyped_storage().data_ptr()
    block.fc.weight = torch.nn.Parameter(randn(16, 16, seed=2))
    torch.testing.assert_close(compiled(x), block(x))
    gc.collect()
    with warnings.catch_warnings():  # isinstance on every live object reads deprecated module attributes
        warnings.simplefilter("ignore")
        tensors = [t for t in gc.get_objects() if isinstance(t, torch.Tensor)]
    assert not any(_storage_address(t) == old for t in tensors)


def _storage_address(t: torch.Tensor) -> int | None:
    """The address of a real tensor's storage; None for the fake ones torch.export's capture leaves."""
    if type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter:
        return None
    return t.untyped_storage().data_ptr() if t.device.type == "cpu" else None


@torch.no_grad()
def test_a_parameter_of_another_shape_or_dtype_or_removed_is_an_error() -> None:
    block = Block()
    x = randn(8, 16, seed=1)
    compiled = hir.compile(block, (x,))
    compiled(x)
    block.fc.weight.data = randn(16, 8, seed=2)
    with pytest.raises(FrontendError) as err:
        compiled(x)
    assert str(err.value) == (
        "<call>: error: <Block>: the module's 'fc.weight' is now float32[16, 8], but <Block> was compiled "
        "when it was float32[16, 16]: compile the module again"
    )
    block.fc.weight.data = randn(16, 16, seed=2).double()
    with pytest.raises(FrontendError, match=r"'fc\.weight' is now float64"):
        compiled(x)
    block.fc.weight.data = randn(16, 16, seed=2)
    torch.testing.assert_close(compiled(x), block(x))
    block.fc.bias = None
    with pytest.raises(FrontendError) as err:
        compiled(x)
    assert str(err.value) == (
        "<call>: error: <Block>: the module no longer has 'fc.bias', which <Block> was compiled with: compile the "
        "module again"
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@torch.no_grad()
def test_a_cpu_module_called_on_a_gpu_follows_its_updates() -> None:
    """The GPU copy of a CPU parameter is refreshed in place, where the replayed graph reads it."""
    block = Block()
    x = randn(8, 16, seed=1)
    compiled = hir.compile(block, (x,))
    for step in range(3):
        block.fc.weight.mul_(0.5)
        torch.testing.assert_close(compiled(x.cuda()).cpu(), block(x), rtol=1e-4, atol=1e-5, msg=f"call {step}")
