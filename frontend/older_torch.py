"""
Decompositions that newer torch has and older torch lacks (torch 2.11 has none for these), into
ops the ATen table maps: `hir.compile` uses each where the installed torch has no decomposition of
the op, so that model code compiles alike on every supported torch (`torch>=2.4`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch._decomp.decompositions

aten = torch.ops.aten


def scatter_at_indices(grad: torch.Tensor, x: torch.Tensor, indices: torch.Tensor, spatial: int) -> torch.Tensor:
    """
    A max pooling's input gradient: each output's gradient added at its maximum's position (the
    flat index over the last `spatial` axes that the forward's indices hold), as torch's
    decomposition of `max_pool2d_with_indices_backward` spells it (a `scatter_add`).
    """
    rows = grad.reshape(-1, math.prod(grad.shape[x.dim() - spatial :]))
    zeros = grad.new_zeros(rows.shape[0], math.prod(x.shape[x.dim() - spatial :]))
    return zeros.scatter_add(1, indices.reshape(rows.shape), rows).reshape(x.shape)


def max_pool2d_backward(grad: torch.Tensor, x: torch.Tensor, *args: Any) -> torch.Tensor:
    """`max_pool2d_with_indices_backward(grad, x, kernel, stride, padding, dilation, ceil_mode, indices)`."""
    return scatter_at_indices(grad, x, args[-1], 2)


def adaptive_max_pool2d(x: torch.Tensor, output_size: tuple[int, int]) -> Any:
    """
    `F.adaptive_max_pool2d(x, size, return_indices=True)`, as newer torch decomposes it: a global
    max and its argmax, or a max pooling where the size divides x's; windows of uneven size are
    gathered (`_uneven_adaptive_max_pool2d`).
    """
    h_out, w_out = output_size
    if h_out == 1 and w_out == 1:
        values = torch.amax(x, dim=(-2, -1), keepdim=True)
        return values, torch.argmax(x.flatten(-2), dim=-1)[..., None, None]
    if x.shape[-2] % h_out == 0 and x.shape[-1] % w_out == 0:
        return aten.max_pool2d_with_indices(x, [x.shape[-2] // h_out, x.shape[-1] // w_out])
    return _uneven_adaptive_max_pool2d(x, h_out, w_out)


def _window_positions(extent: int, out: int, device: torch.device) -> torch.Tensor:
    """
    `[out, k]`: the positions of adaptive pooling's window i, `[floor(i * n / out), ceil((i + 1) *
    n / out))`, padded to the widest window k by repeating its last position (a repeat changes
    neither the maximum nor which position holds it first).
    """
    widest = max(((i + 1) * extent + out - 1) // out - (i * extent) // out for i in range(out))
    i = torch.arange(out, device=device)
    start, end = (i * extent) // out, ((i + 1) * extent + out - 1) // out
    return torch.minimum(start[:, None] + torch.arange(widest, device=device), end[:, None] - 1)


def _uneven_adaptive_max_pool2d(x: torch.Tensor, h_out: int, w_out: int) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Adaptive max pooling with windows of uneven size (`F.adaptive_max_pool1d(x, 3)` of 10
    positions): each window's positions gathered in row-major order (as torch's kernel walks it,
    so that the first maximum is its index), their maximum and its flat position.
    """
    height, width = x.shape[-2:]
    rows = _window_positions(height, h_out, x.device)
    columns = _window_positions(width, w_out, x.device)
    flat = rows[:, None, :, None] * width + columns[None, :, None, :]  # [h_out, w_out, kh, kw]
    flat = flat.reshape(h_out, w_out, -1)
    windows = x.flatten(-2).index_select(-1, flat.flatten()).unflatten(-1, tuple(flat.shape))
    values, which = windows.max(-1)
    indices = flat.expand(*x.shape[:-2], *flat.shape).gather(-1, which.unsqueeze(-1)).squeeze(-1)
    return values, indices


FALLBACKS = {
    aten.max_pool2d_with_indices_backward.default: max_pool2d_backward,
    aten.adaptive_max_pool2d.default: adaptive_max_pool2d,
}
"""Used where this torch has no decomposition of the op, or one that declines (`fallback_to`)."""


def fallback_to(own: Callable[..., Any], torch_decomposition: Callable[..., Any] | None) -> Callable[..., Any]:
    """
    torch's decomposition, and `own` where torch has none or its declines (returns NotImplemented,
    as torch 2.11's max pooling backward does on the CPU).
    """
    if torch_decomposition is None:
        return own

    def decomposition(*args: Any, **kwargs: Any) -> Any:
        result = torch_decomposition(*args, **kwargs)
        return own(*args, **kwargs) if result is NotImplemented else result

    return decomposition


@contextmanager
def lstm_hidden_states_kept() -> Iterator[None]:
    """
    torch's decomposition of `nn.LSTM` with the final hidden and cell states shaped as the initial
    ones. torch 2.11's `one_layer_lstm` squeezes axis 1 of a layer's `[1, batch, hidden]` states
    instead of axis 0, so `h_n` and `c_n` came back `[layers, 1, batch, hidden]` (eager:
    `[layers, batch, hidden]`); each layer's states are reshaped to its initial states' shape,
    which is a no-op on a torch without the bug.
    """
    module = torch._decomp.decompositions
    original = getattr(module, "one_layer_lstm", None)
    if original is None:
        yield
        return

    def one_layer_lstm(inp: torch.Tensor, hidden: Any, *args: Any, **kwargs: Any) -> Any:
        out, (h, c) = original(inp, hidden, *args, **kwargs)
        return out, (h.reshape(hidden[0].shape), c.reshape(hidden[1].shape))

    module.one_layer_lstm = one_layer_lstm
    try:
        yield
    finally:
        module.one_layer_lstm = original
