"""
`hir.compile(..., training=True)` on a mesh: the tensor-parallel MLP's forward and backward are
lowered hir programs whose collectives are pipelined (the backward's all-gather + GEMM of the
output gradient with the row-parallel weight, and GEMM + reduce-scatter of the input gradient);
2- and 4-rank gloo jobs (tests/training_mesh_driver.py) check the outputs, every gradient, and
SGD and AdamW loops against eager torch; misuse is a located error.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from ranks import run_ranks
from test_distributed import _output

import hir
from hir.frontend import FrontendError

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from training_mesh_driver import MLP, PARAMS  # noqa: E402

ROWS = "[(stream(2), didx), serial]"
WEIGHTS = {"fc1.weight": "[didx, serial]", "fc2.weight": "[serial, didx]"}


def _step(module: torch.nn.Module, params: dict[str, str | None] = WEIGHTS) -> object:
    """The step's programs, compiled without running them (no process group needed)."""
    x = torch.randn(32, 16, requires_grad=True)
    pipeline = "stream-lowering{policy=contractions-standalone}"
    compiled = hir.compile(module, (x,), [ROWS], mesh=[0, 1], param_layouts=params, training=True, pipeline=pipeline)
    return compiled._specialize([x])  # type: ignore[union-attr]


@functools.cache
def _mlp_step(activation: str) -> object:
    """The step of the MLP without biases (read-only: the tests of its programs' text share it)."""
    return _step(MLP(bias=False, residual=False, activation=activation))


def _top_loops(lowered: str) -> list[str]:
    """The function body's own loops (4 spaces in), each up to the next one."""
    starts = [m.start() for m in re.finditer(r"^    hir\.for ", lowered, re.MULTILINE)]
    return [lowered[a:b] for a, b in zip(starts, [*starts[1:], len(lowered)])]


def test_backward_pipelines_ag_gemm_and_gemm_rs() -> None:
    step = _mlp_step("gelu")
    forward, backward = str(step.forward.module), str(step.backward.module)  # type: ignore[attr-defined]
    # The forward: chunk by chunk, all-gather, GEMM, gelu, GEMM, reduce-scatter, in one loop.
    assert any("hir.allgather" in loop and "hir.reduce_scatter" in loop for loop in _top_loops(forward))
    # The backward: grad_h = g @ W2 gathers g's chunks (all-gather + GEMM), grad_x = gh @ W1 is
    # reduce-scattered chunk by chunk (GEMM + reduce-scatter).
    loops = _top_loops(backward)
    gathering = [loop for loop in loops if re.search(r"hir\.allgather[\s\S]*fusion\.matmul", loop)]
    scattering = [loop for loop in loops if re.search(r"fusion\.matmul[\s\S]*hir\.reduce_scatter", loop)]
    assert gathering
    assert scattering
    # The weight gradients' rows (g, x) are gathered chunk by chunk in the loops too: no
    # collective of the function body's own.
    assert not re.search(r"^    %\S+ = hir\.allgather", backward, re.MULTILINE)


def test_backward_fusion_program() -> None:
    step = _step(MLP(bias=True, residual=True, activation="silu"), PARAMS)
    text = step.backward.fusion_text  # type: ignore[attr-defined]
    mesh = "mesh = [0, 1]"
    columns = f"tensor<2x2x2x8x16xf32, #fusion.parallel<[didx, stream, serial, serial, serial], {mesh}>>"
    # g @ W2: the rows of g against this device's W2 block (W2^T's shard, permuted): columns
    assert re.search(rf"fusion.matmul %grad_output0, %\w+ : .* -> {re.escape(columns)}", text)
    # The weight gradients: this device's blocks [F/D, H] and [H, F/D] (F = 32, H = 16), over all rows
    assert f"tensor<2x16x16xf32, #fusion.parallel<[didx, serial, serial], {mesh}>>" in text
    # fc2.bias (replicated): the local rows' sum, then the sum over the devices
    assert re.search(r"fusion.sum %\w+ dims = \[0\] : tensor<2x16xf32, .*\[didx, serial\].* -> tensor<16xf32", text)


@pytest.mark.distributed
def test_mlp_trains_on_two_ranks() -> None:
    """
    The step checks and loops, then benchmarks/tp_mlp_train.py for the MLP and the TP layer (eager
    TP and a hir variant, checked against eager), in one launch of the 2 gloo ranks.
    """
    result = run_ranks([str(REPO / "tests" / "training_mesh_driver.py")], timeout=400)
    assert result.returncode == 0, _output(result)
    assert "20 step checks and the SGD/AdamW/TP layer loops match eager torch" in result.stdout
    runs = result.stdout.split("== tp_mlp_train.py --block ")[1:]
    assert [run.split("\n", 1)[0] for run in runs] == ["mlp", "layer"], _output(result)
    for block, run in zip(("mlp", "layer"), runs):
        assert re.search(r"hir stream-lowering:2:chunks=2 .* \d\.\de-\d\d\n", run), run
        for variant in ("eager", "hir stream-lowering:2:chunks=2"):  # --back-to-back: host and wall time per step
            assert re.search(rf"back to back: .* {re.escape(variant)}: host \d+\.\d+ ms/step, wall \d+\.\d+", run), run
        assert ("TP transformer layer" in run) == (block == "layer"), run


@pytest.mark.distributed
def test_mlp_trains_on_four_ranks() -> None:
    result = run_ranks([str(REPO / "tests" / "training_mesh_driver.py"), "--quick"], timeout=300, processes=4)
    assert result.returncode == 0, _output(result)
    assert "2 step checks and the SGD loops match eager torch" in result.stdout


class Softmaxed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32, bias=False)
        self.fc2 = torch.nn.Linear(32, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.softmax(self.fc1(x), -1))  # not on a mesh


def test_unsupported_op_is_located() -> None:
    with pytest.raises(FrontendError) as err:
        _step(Softmaxed())
    assert re.search(
        r"test_training_mesh.py:\d+: error: aten._softmax.default: on a mesh, a softmax takes rows \(sharded or "
        r"replicated\) along their columns \(the last axis\), not axis -1 of a columns tensor",
        str(err.value),
    )
    assert str(err.value).endswith("# not on a mesh")


def test_column_parallel_bias_is_sharded() -> None:
    with pytest.raises(FrontendError, match=r"training_mesh_driver.py:\d+: error: the bias of a columns product"):
        _step(MLP(bias=True, residual=False, activation="gelu"))  # fc1.bias not "[didx]"


def test_param_layouts_need_a_mesh() -> None:
    with pytest.raises(FrontendError, match="param_layouts shard parameters over a mesh"):
        hir.compile(MLP(False, False, "gelu"), (torch.randn(32, 16),), param_layouts=WEIGHTS, training=True)


def test_output_rows_are_laid_out_as_the_input() -> None:
    with pytest.raises(FrontendError, match="returns rows laid out as the first input's"):
        hir.compile(
            MLP(False, False, "gelu"), (torch.randn(32, 16),), [ROWS], [None], mesh=[0, 1], param_layouts=WEIGHTS,
            training=True,
        )  # fmt: skip


def test_a_function_is_refused_on_a_mesh() -> None:
    with pytest.raises(FrontendError, match=r"training=True on a mesh compiles an nn\.Module"):
        hir.compile(F.relu, (torch.randn(32, 16),), [ROWS], mesh=[0, 1], training=True)


@pytest.mark.parametrize("activation", ["gelu", "silu"])
def test_backward_launches_the_activation_backward_once(activation: str) -> None:
    """gelu's (silu's) backward is one launch over the activation, as eager's one kernel, not the formula's ten."""
    step = _mlp_step(activation)
    backward = str(step.backward.module)  # type: ignore[attr-defined]
    ops = re.findall(r"= (fusion\.\w+)", backward)  # the launches' ops (a launch may fuse several)
    assert ops.count(f"fusion.{activation}_backward") == 1
    assert not {"fusion.erf", "fusion.exp", "fusion.sigmoid"} & set(ops)


def test_one_chunk_backward_gathers_g_once_and_reads_the_forwards_x() -> None:
    """
    Rows in one chunk: g is all-gathered once for g @ W2 and W2's gradient; W1's gradient reads
    the x that the forward gathered (a saved output), as eager autograd saves it.
    """
    x = torch.randn(32, 16, requires_grad=True)
    module = MLP(bias=False, residual=False, activation="gelu")
    compiled = hir.compile(module, (x,), ["[didx, serial]"], mesh=[0, 1], param_layouts=WEIGHTS, training=True)
    step = compiled._specialize([x])  # type: ignore[union-attr]
    forward, backward = str(step.forward.module), str(step.backward.module)
    assert re.findall(r"hir\.allgather %(\w+)", forward) == ["x"]
    assert re.findall(r"hir\.allgather %(\w+)", backward) == ["grad_output0"]
    assert "%x_gathered" in backward


def test_training_a_softmax_along_the_sharded_heads_is_located() -> None:
    """The training step traces the same attention as its math: the same located error."""
    sys.path.insert(0, str(REPO / "tests"))
    from test_frontend_mesh import HEADS_PARAMS, HeadsMixed

    with pytest.raises(FrontendError) as err:
        _step(HeadsMixed(), HEADS_PARAMS)
    assert re.search(r"test_frontend_mesh.py:\d+: error: aten._softmax.default along axis 1 of heads", str(err.value))


def test_layer_backward_reduces_the_q_k_v_input_gradient_once() -> None:
    """The three column-parallel projections' input gradients are one partial sum: one reduce-scatter."""
    from tp_layer import PARAM_LAYOUTS, TPLayer

    step = _step(TPLayer(16, 4, 32, 8, torch.float32, "cpu"), PARAM_LAYOUTS)
    text = step.backward.fusion_text  # type: ignore[attr-defined]
    # The attention's and the MLP's partial sums, each summed over the devices once
    reductions = re.findall(r"fusion.sum %\w+ dims = \[0\] : tensor<2x2x2x8x16xf32", text)
    assert len(reductions) == 2, text


def test_a_step_with_nothing_to_differentiate_is_refused() -> None:
    """Every parameter frozen and an input without grad: no backward to compile, a clear error."""
    module = MLP(bias=False, residual=False, activation="gelu")
    for p in module.parameters():
        p.requires_grad_(False)
    x = torch.randn(32, 16)
    compiled = hir.compile(module, (x,), [ROWS], mesh=[0, 1], param_layouts=WEIGHTS, training=True)
    with pytest.raises(FrontendError, match="no parameter or input of the training step requires grad"):
        compiled._specialize([x])  # type: ignore[union-attr]
