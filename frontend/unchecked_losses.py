"""
Losses whose torch code checks its arguments' values with a Python branch (`if torch.any(var <
0): raise`), which a program traced once for every call cannot take: while a function is traced
(`unchecked_distributions()` in frontend/importer.py, as the distributions' own checks), they
run as torch computes them, with the check made part of the result instead: a loss given values
eager refuses is NaN.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


class UncheckedLosses(TorchFunctionMode):
    """Routes `F.gaussian_nll_loss` to `gaussian_nll_loss` below."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is F.gaussian_nll_loss:
            return gaussian_nll_loss(*args, **kwargs)
        return func(*args, **kwargs)


def gaussian_nll_loss(
    input: torch.Tensor,
    target: torch.Tensor,
    var: torch.Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> torch.Tensor:
    """
    torch's `F.gaussian_nll_loss`, where a negative variance, which eager refuses
    (`ValueError: var has negative entry/entries`), makes the loss NaN.
    """
    if isinstance(var, float) or not isinstance(var, torch.Tensor):
        return F.gaussian_nll_loss(input, target, var, full=full, eps=eps, reduction=reduction)  # no branch on data
    if var.size() != input.size() and input.size()[:-1] == var.size():
        var = torch.unsqueeze(var, -1)  # homoscedastic: one variance per row
    elif var.size() != input.size() and not (
        input.ndim == var.ndim and sum(y for x, y in zip(input.size(), var.size(), strict=True) if x != y) == 1
    ):
        raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    invalid = torch.where(torch.any(var < 0), math.nan, 0.0).to(input.dtype)
    var = var.clone()
    with torch.no_grad():
        var.clamp_(min=eps)  # for stability, with the gradient of the variance as given (torch's)
    loss = 0.5 * (torch.log(var) + (input - target) ** 2 / var)
    if full:
        loss += 0.5 * math.log(2 * math.pi)
    loss = loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
    return loss + invalid
