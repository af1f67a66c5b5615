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


def norm_backward_kernel(op: fusion.NormBackwardFusionOp) -> Callable[..., torch.Tensor]:
    """`f(grad, x[, weight]) -> dx`."""
    count, eps = len(array_values(op.dims)), op.eps.value.data

    def layer_norm(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
        shape = list(x.shape[-count:])
        _, mean, rstd = torch.ops.aten.native_layer_norm(x, shape, weight, None, eps)
        dx, _, _ = torch.ops.aten.native_layer_norm_backward(
            grad, x, shape, mean, rstd, weight, None, [True, False, False]
        )
        return dx

    def rms_norm(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
        with torch.enable_grad():
            leaf = x.detach().requires_grad_()
            (dx,) = torch.autograd.grad(F.rms_norm(leaf, leaf.shape[-count:], weight, eps), leaf, grad)
        return dx

    return rms_norm if isinstance(op, fusion.RmsNormBackwardOp) else layer_norm


def norm_backward_into(op: fusion.NormBackwardFusionOp) -> Callable[..., object]:
    """`f(out, grad, x[, weight])`: the gradient copied into `out`."""
    gradient = norm_backward_kernel(op)
    return lambda out, *operands: out.copy_(gradient(*operands))
