"""
frontend/hot_replay.py: the call path of a compiled function that replays one graph call after
call. On CPU with torch's graph replaced by a recorder whose replay computes the block into the
graph's output buffer (tests/test_cuda_graph.py's `recorded_capture`): which calls take the hot
path, and that every change it must see (the flags, a parameter updated or replaced, the shapes,
the settings, a result the caller holds) sends the call the general way with the right answer.
On a GPU: tests/hot_replay_driver.py, on one and two GPUs (a mesh: results held as views are
marked stale rather than run eagerly).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from ranks import free_port
from test_cuda_graph import recorded_capture  # noqa: F401  (a fixture)

import hir
from hir.frontend import compiled as compiled_module

REPO = Path(__file__).resolve().parent.parent


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(32, 16)
        self.drop = torch.nn.Dropout(0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(torch.relu(self.fc(x)))


def rows(seed: int, n: int = 8) -> torch.Tensor:
    return torch.randn(n, 32, generator=torch.Generator().manual_seed(seed))


@pytest.fixture
def replaying(recorded_capture: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # noqa: F811
    """
    Every capture's graph replays the block on its input buffer, as the captured kernels would;
    yields the log of the calls the general path ran (`_call`), to tell them from the hot ones.
    """
    monkeypatch.setattr(compiled_module, "graph_by_default", lambda device: True)
    general: list[str] = []
    original = compiled_module.CompiledFunction._call

    def counted(self: compiled_module.CompiledFunction, *args: Any) -> Any:
        general.append(self.name)
        return original(self, *args)

    monkeypatch.setattr(compiled_module.CompiledFunction, "_call", counted)
    return general


def wire(compiled: hir.CompiledFunction, block: Block) -> None:
    """The recorder's replays compute the block from each graph's input buffer into its output buffer."""
    for function in [compiled, *_specializations(compiled)]:
        for captured in function.program.graphs.values():
            user = next(k for k, s in enumerate(function.signature.inputs) if s.kind == "user")

            def replay(captured: Any = captured, user: int = user) -> None:
                with torch.no_grad():
                    captured.static_outputs[0].copy_(block(captured.static_inputs[user]))

            captured.graph.on_replay = replay


def _specializations(compiled: hir.CompiledFunction) -> list[hir.CompiledFunction]:
    found = []
    if compiled.modes is not None:
        found += [f for f in compiled.modes.by_flags.values() if f is not compiled]
    return found


def calls(compiled: hir.CompiledFunction, block: Block, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    results = []
    for x in xs:
        with torch.no_grad():
            y = compiled(x)
        wire(compiled, block)
        results.append(y)
    return results


def test_the_third_call_takes_the_hot_path(replaying: list[str]) -> None:
    torch.manual_seed(0)
    block = Block()
    compiled = hir.compile(block, (rows(0),), measure_candidates=False)
    calls(compiled, block, [rows(1), rows(2)])  # the capture, then the general path's replay
    assert compiled._hot is not None
    before = len(replaying)
    (captured,) = compiled.program.graphs.values()
    replays = captured.graph.replays
    for seed in (3, 4, 5):
        x = rows(seed)
        with torch.no_grad():
            y = compiled(x)
            torch.testing.assert_close(y, block(x))
    assert len(replaying) == before  # none went the general way
    assert captured.graph.replays == replays + 3


def test_a_held_result_is_moved_and_a_held_view_runs_eagerly(replaying: list[str]) -> None:
    torch.manual_seed(1)
    block = Block()
    compiled = hir.compile(block, (rows(0),), measure_candidates=False)
    calls(compiled, block, [rows(1), rows(2)])
    with torch.no_grad():
        first = compiled(rows(3))
        kept = first.clone()
        second = compiled(rows(4))  # `first` still held: moved to memory of its own, values kept
        torch.testing.assert_close(first, kept)
        torch.testing.assert_close(second, block(rows(4)))
        view = second[1:]
        values = view.clone()
        before = len(replaying)
        third = compiled(rows(5))  # a view of `second` held: not the hot path, and no replay over it
        assert len(replaying) == before + 1
        torch.testing.assert_close(view, values)
        torch.testing.assert_close(third, block(rows(5)))


@pytest.mark.parametrize("change", ["in-place update", "replaced", "eval", "shape", "cuda_graph off", "streams"])
def test_what_sends_a_call_the_general_way(replaying: list[str], change: str) -> None:
    torch.manual_seed(2)
    block = Block()
    compiled = hir.compile(block, (rows(0),), measure_candidates=False)
    calls(compiled, block, [rows(1), rows(2)])
    assert compiled._hot is not None
    x = rows(6, n=12 if change == "shape" else 8)
    with torch.no_grad():
        if change == "in-place update":
            block.fc.weight.mul_(-2.0)
        elif change == "replaced":
            block.fc.weight = torch.nn.Parameter(torch.randn(16, 32))
        elif change == "eval":
            block.eval()
        elif change == "cuda_graph off":
            compiled.cuda_graph = False
        elif change == "streams":
            compiled.num_streams = 2
    before = len(replaying)
    (y,) = calls(compiled, block, [x])
    assert len(replaying) == before + 1
    with torch.no_grad():
        torch.testing.assert_close(y, block(x))


def test_gpus_hot_path() -> None:
    """tests/hot_replay_driver.py on each GPU count there is (1 and 2): single device, and a mesh."""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 1:
        pytest.skip("needs a CUDA GPU")
    env = {**os.environ, "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    for ranks in sorted({1, min(count, 2)}):
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks)]
        command += ["--master-port", str(free_port())]
        command.append(str(REPO / "tests" / "hot_replay_driver.py"))
        result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        output = f"{ranks} ranks: exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        assert result.returncode == 0, output
        assert "ALL OK" in result.stdout, output
