"""
The torch kernels of `fusion.layer_norm_backward` and `fusion.rms_norm_backward`: the norm's
fused backward kernel, after the forward's statistics are computed again (the forward program
returns only the norm's result). LayerNorm calls aten's `native_layer_norm` and
`native_layer_norm_backward` (the input gradient alone); RMSNorm differentiates `F.rms_norm`
through autograd, whichever kernel torch runs it with.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from hir.dialects import fusion
from hir.dialects.syntax import array_values


def layer_norm_input_gradient(
    grad: torch.Tensor, x: torch.Tensor, shape: list[int], weight: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """dx of `F.layer_norm(x, shape, weight, bias, eps)` (the bias does not enter it)."""
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, shape, weight, None, eps)
    dx, _, _ = torch.ops.aten.native_layer_norm_backward(grad, x, shape, mean, rstd, weight, None, [True, False, False])
    return dx


def rms_norm_input_gradient(
    grad: torch.Tensor, x: torch.Tensor, shape: list[int], weight: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """dx of `F.rms_norm(x, shape, weight, eps)`."""
    with torch.enable_grad():
        leaf = x.detach().requires_grad_()
        (dx,) = torch.autograd.grad(F.rms_norm(leaf, shape, weight, eps), leaf, grad)
    return dx


def norm_backward_kernel(op: fusion.NormBackwardFusionOp) -> Callable[..., torch.Tensor]:
    """`f(grad, x[, weight]) -> dx`."""
    count, eps = len(array_values(op.dims)), op.eps.value.data
    gradient = rms_norm_input_gradient if isinstance(op, fusion.RmsNormBackwardOp) else layer_norm_input_gradient
    return lambda grad, x, weight=None: gradient(grad, x, list(x.shape[-count:]), weight, eps)
