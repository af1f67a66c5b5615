"""
Model code as users write it, compiled with `hir.compile` against eager torch (CPU, float32): the
regressions found by the second round of user-style probes (recurrent layers in training, ...).
"""

from __future__ import annotations

import copy

import pytest
import torch

import hir
from hir.frontend import FrontendError


def _seeded(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class _LstmClassifier(torch.nn.Module):
    """A bidirectional nn.LSTM and a linear head on its last step."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, batch_first=True, bidirectional=True)
        self.fc = torch.nn.Linear(32, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out, (h, c) = self.lstm(x)
        return self.fc(out[:, -1]), h, c


def test_an_lstm_trains_on_cpu_as_in_eager() -> None:
    # On CPU torch's decomposition of nn.LSTM traced oneDNN's `mkldnn_rnn_layer` (no entry in the
    # ATen table) where the sequence needs no gradient; the trace now unrolls the cells.
    # One bidirectional layer: torch picks the layer function once for the whole LSTM, and its
    # forward direction runs exactly as a unidirectional LSTM's does, so a unidirectional model or
    # a second layer would only repeat the same cells (test_older_torch.py also trains a stacked
    # LSTM). Two steps: the first cell starts from zero states, the second carries them.
    torch.manual_seed(0)
    model = _LstmClassifier()
    eager = copy.deepcopy(model)
    step = hir.compile(model, (_seeded(3, 2, 8, seed=0),), training=True)
    for seed in (1, 2):
        x = _seeded(3, 2, 8, seed=seed)
        model.zero_grad()
        eager.zero_grad()
        ours, want = step(x), eager(x)
        torch.testing.assert_close(ours, want)
        sum(t.square().sum() for t in ours).backward()
        sum(t.square().sum() for t in want).backward()
        for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, msg=lambda m, name=name: f"{name}: {m}")
    assert torch._C._get_mkldnn_enabled()  # the trace's setting does not leak


class _TwoHeads(torch.nn.Module):
    """A body and two heads; a batch norm keeps the step on AOT autograd's runtime (a buffer update)."""

    def __init__(self, norm: bool) -> None:
        super().__init__()
        self.body = torch.nn.Linear(8, 16, bias=not norm)
        self.norm = torch.nn.BatchNorm1d(16) if norm else torch.nn.Identity()
        self.a = torch.nn.Linear(16, 3)
        self.b = torch.nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.norm(self.body(x)))
        return self.a(h), self.b(h)


def test_a_head_the_loss_leaves_out_gets_no_gradient_as_in_eager() -> None:
    # The backward gave every parameter a gradient, zeros for a head the step's loss does not use,
    # where eager leaves it None: AdamW then decayed that head's weights (and momentum moved them).
    for norm in (False, True):
        torch.manual_seed(0)
        model = _TwoHeads(norm)
        eager = copy.deepcopy(model)
        step = hir.compile(model, (_seeded(4, 8, seed=0),), training=True)
        ours_opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        eager_opt = torch.optim.AdamW(eager.parameters(), lr=1e-2)
        for k in range(4):  # head a's loss, then b's, ...: the first calls on AOT's runtime, then the lean step
            x = _seeded(4, 8, seed=k + 1)
            for fn, opt in ((step, ours_opt), (eager, eager_opt)):
                opt.zero_grad()
                a, b = fn(x)
                (a.sum() if k % 2 == 0 else b.square().sum()).backward()
                opt.step()
            for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters(), strict=True):
                assert (p.grad is None) == (q.grad is None), (k, name)
                torch.testing.assert_close(p, q, msg=lambda m, name=name, k=k: f"step {k}, {name}: {m}")


class _DataUpdate(torch.nn.Module):
    """A VQ-VAE's EMA written as `self.buf.data.mul_(decay)` in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cluster_size", torch.ones(4))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        self.cluster_size.data.mul_(0.9)
        return z * self.cluster_size


def test_refusals_of_torch_export_say_what_to_write_instead() -> None:
    # torch.export's own texts were "a fake tensor in the exported program constant's list" and
    # "invalid syntax" (its generated code of `random_(low, high)`).
    with pytest.raises(FrontendError, match=r"through `\.data`.*under `with torch\.no_grad\(\):`"):
        hir.compile(_DataUpdate(), (_seeded(4, 4, seed=0),))
    with pytest.raises(FrontendError, match=r"use torch\.randint\(low, high, x\.shape\)"):
        hir.compile(lambda x: x + torch.empty(4, 4).random_(1, 4), (_seeded(4, 4, seed=0),))
