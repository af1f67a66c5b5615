"""
A training step's trace asks AOT autograd for its graphs as text only when torch's logs show them:
`TORCH_LOGS=aot_graphs` (here `torch._logging.set_logs`) still prints hir's forward and backward graphs.
"""

from __future__ import annotations

import logging

import pytest
import torch

import hir
from hir.frontend.training import aot_log_options


@pytest.fixture
def aot_graph_logs():
    torch._logging.set_logs(aot_graphs=True)
    try:
        yield
    finally:
        torch._logging.set_logs()


def test_without_torch_logs_aot_autograd_does_not_print_graphs() -> None:
    assert aot_log_options() == {"enable_log": False}


def test_torch_logs_of_aot_graphs_still_show_the_training_steps_graphs(aot_graph_logs, caplog) -> None:
    assert aot_log_options() == {}
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh())
    x = torch.randn(2, 3)
    with caplog.at_level(logging.INFO):
        step = hir.compile(model, (x,), training=True)
        step(x).sum().backward()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Forward graph" in logged
    assert "Backward graph" in logged
    expected = model[0].weight.grad.clone()
    model.zero_grad()
    model(x).sum().backward()
    torch.testing.assert_close(expected, model[0].weight.grad)
