"""
Batch norms in training mode whose running statistics are a cumulative average
(`nn.BatchNorm*d(momentum=None)`): torch's forward divides by the batch count read as a Python
number (`1.0 / float(self.num_batches_tracked)`), which a program traced once for every call
cannot hold. While a module is traced, such a norm runs the forward below instead, whose factor
is a tensor computed from `num_batches_tracked`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import torch


@contextmanager
def cumulative_batch_norms(module: Any) -> Iterator[None]:
    """
    While a module is traced (a training step, an inference capture): each batch norm in training
    mode with `momentum=None`, which averages its running statistics over all the batches it has
    seen, runs a forward whose factor is a tensor, `1 / num_batches_tracked`, where torch's reads
    it as a Python number (`1.0 / float(self.num_batches_tracked)`), which a program traced once
    cannot.
    """
    norms = [
        m
        for m in (module.modules() if isinstance(module, torch.nn.Module) else ())
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
        and not isinstance(m, torch.nn.SyncBatchNorm)  # its own forward, which syncs the statistics
        and m.momentum is None
        and m.training
        and m.track_running_stats
        and m.num_batches_tracked is not None
        and "forward" not in vars(m)
    ]
    for norm in norms:
        norm.forward = partial(_cumulative_batch_norm, norm)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for norm in norms:
            del norm.forward


def _cumulative_batch_norm(norm: Any, input: torch.Tensor) -> torch.Tensor:
    """`_BatchNorm.forward` in training mode with `momentum=None`: a cumulative average of the batches' statistics."""
    if norm.momentum is not None:  # read where the trace records it: `momentum = 0.1` since traces again
        return type(norm).forward(norm, input)
    norm._check_input_dim(input)
    norm.num_batches_tracked.add_(1)
    factor = 1.0 / norm.num_batches_tracked.to(norm.running_mean.dtype)
    # torch's own statistics (the mean, the unbiased variance) of this batch, from a momentum of 1
    mean, var = torch.zeros_like(norm.running_mean), torch.ones_like(norm.running_var)
    out = torch.nn.functional.batch_norm(input, mean, var, norm.weight, norm.bias, True, 1.0, norm.eps)
    with torch.no_grad():
        norm.running_mean.copy_(factor * mean + (1 - factor) * norm.running_mean)
        norm.running_var.copy_(factor * var + (1 - factor) * norm.running_var)
    return out
