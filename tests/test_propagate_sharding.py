"""
`fusion-propagate-sharding` and `stream-lowering{propagate-sharding=true}`: programs whose
intermediates are unannotated, lowered with and without propagation. In process: the
collectives each lowering has (propagation never adds one here, and removes the gather and
re-slice of an elementwise chain), that the global semantics do not change (the propagated
fusion module gives the reference's results), and that `hir.compile` passes the option through.
On 2 gloo ranks (one job, tests/distributed_driver.py): both lowerings against the unsharded
reference, with 1 and 3 streams, race-checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from test_distributed import run_driver_job

import hir
from hir.runtime.inputs import random_inputs

ROWS = "#fusion.parallel<[didx, serial], mesh = [0, 1]>"
ROWS3 = "#fusion.parallel<[didx, serial, serial], mesh = [0, 1]>"
COLUMNS = "#fusion.parallel<[serial, didx], mesh = [0, 1]>"
REPLICATED = "#fusion.parallel<[serial], mesh = [0, 1]>"

MODULES = {
    # A sharded input, relu, add, a sharded output: without propagation %r is computed whole on
    # every device from a gathered %x, then sliced again for the add; with it, no collective.
    "relu_add": f"""
func.func @main(%x: tensor<2x8x16xf32, {ROWS3}>, %b: tensor<2x8x16xf32, {ROWS3}>) -> tensor<2x8x16xf32, {ROWS3}> {{
  %r = fusion.relu %x : tensor<2x8x16xf32, {ROWS3}> -> tensor<2x8x16xf32>
  %y = fusion.add %r, %b : tensor<2x8x16xf32>, tensor<2x8x16xf32, {ROWS3}> -> tensor<2x8x16xf32, {ROWS3}>
  func.return %y : tensor<2x8x16xf32, {ROWS3}>
}}
""",
    # Column-parallel: the weight is sharded by blocks of columns (batch axis 0 = device); the
    # matmul and the gelu after it stay sharded instead of gathering the weight.
    "column_parallel": f"""
func.func @main(%x: tensor<8x16xf32>, %w: tensor<2x16x4xf32, {ROWS3}>, %s: tensor<2x8x4xf32, {ROWS3}>) -> tensor<2x8x4xf32, {ROWS3}> {{
  %h = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<2x16x4xf32, {ROWS3}> -> tensor<2x8x4xf32>
  %g = fusion.gelu %h approximate = none : tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  %y = fusion.mul %g, %s : tensor<2x8x4xf32>, tensor<2x8x4xf32, {ROWS3}> -> tensor<2x8x4xf32, {ROWS3}>
  func.return %y : tensor<2x8x4xf32, {ROWS3}>
}}
""",
    # Backward: the replicated argument is sliced locally and the chain computes on the slices,
    # through a transpose, into the column-sharded output.
    "backward_transpose": f"""
func.func @main(%x: tensor<2x8xf32>, %w: tensor<2x8xf32>) -> tensor<8x2xf32, {COLUMNS}> {{
  %y = fusion.tanh %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %z = fusion.mul %y, %w : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %t = fusion.permute %z perm = [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32, {COLUMNS}>
  func.return %t : tensor<8x2xf32, {COLUMNS}>
}}
""",
    # A partial sum stops the propagation: relu runs on the shards, the sum over the didx axis is
    # an all-reduce of 8 elements instead of an all-gather of the whole input.
    "partial_sum": f"""
func.func @main(%x: tensor<2x8xf32, {ROWS}>) -> tensor<8xf32, {REPLICATED}> {{
  %r = fusion.relu %x : tensor<2x8xf32, {ROWS}> -> tensor<2x8xf32>
  %s = fusion.sum %r dims = [0] : tensor<2x8xf32> -> tensor<8xf32, {REPLICATED}>
  func.return %s : tensor<8xf32, {REPLICATED}>
}}
""",
    # An embedding's backward sharded by columns: index_add carries x's and source's columns to
    # its result (its indexed rows are read whole), so nothing is gathered; without propagation x
    # and the source are gathered, added whole, and sliced again.
    "index_add_columns": f"""
func.func @main(%x: tensor<10x2xf32, {COLUMNS}>, %raw: tensor<6xi64>, %s: tensor<6x2xf32, {COLUMNS}>) -> tensor<10x2xf32, {COLUMNS}> {{
  %n = fusion.full 10 : tensor<6xi64>
  %i = fusion.remainder %raw, %n : tensor<6xi64>, tensor<6xi64> -> tensor<6xi64>
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<10x2xf32, {COLUMNS}>, tensor<6xi64>, tensor<6x2xf32, {COLUMNS}> -> tensor<10x2xf32>
  %r = fusion.relu %y : tensor<10x2xf32> -> tensor<10x2xf32, {COLUMNS}>
  func.return %r : tensor<10x2xf32, {COLUMNS}>
}}
""",
}

COLLECTIVES = ("allgather", "allreduce", "reduce_scatter", "all_to_all", "broadcast", "send", "recv")

# (collectives without propagation, with it), by kind.
EXPECTED = {
    "relu_add": ({"allgather": 1}, {}),
    "column_parallel": ({"allgather": 1}, {}),
    "backward_transpose": ({}, {}),
    "partial_sum": ({"allgather": 1}, {"allreduce": 1}),
    "index_add_columns": ({"allgather": 2}, {}),
}


def collectives(text: str) -> dict[str, int]:
    found = re.findall(rf"hir\.({'|'.join(COLLECTIVES)}) ", text)
    return {kind: found.count(kind) for kind in sorted(set(found))}


def lowered(name: str, pipeline: str) -> str:
    return str(hir.run_pipeline(hir.parse(MODULES[name], f"{name}.mlir"), pipeline))


@pytest.mark.parametrize("name", MODULES)
def test_propagation_communicates_less(name: str) -> None:
    plain = collectives(lowered(name, "stream-lowering"))
    propagated = collectives(lowered(name, "stream-lowering{propagate-sharding=true}"))
    assert (plain, propagated) == EXPECTED[name]


def test_backward_transpose_computes_on_slices() -> None:
    """Without propagation the chain runs whole on every device; with it, on 1x8 slices."""
    plain = lowered("backward_transpose", "stream-lowering")
    propagated = lowered("backward_transpose", "stream-lowering{propagate-sharding=true}")
    assert "fusion.tanh %x_1 : tensor<2x8xf32> -> tensor<2x8xf32>" in plain
    assert re.search(r"fusion\.tanh %\w+ : tensor<1x8xf32> -> tensor<1x8xf32>", propagated), propagated


@pytest.mark.parametrize("name", MODULES)
def test_global_semantics_unchanged(name: str) -> None:
    """The propagated fusion module is still the reference: same results on the global inputs."""
    reference = hir.compile_program(hir.parse(MODULES[name], f"{name}.mlir"))
    propagated = hir.run_pipeline(hir.parse(MODULES[name], f"{name}.mlir"), "fusion-propagate-sharding")
    assert str(propagated) != str(hir.parse(MODULES[name]))  # something was propagated
    inputs = random_inputs(reference.input_types, seed=3)
    for expected, actual in zip(reference(inputs), hir.compile_program(propagated)(inputs), strict=True):
        torch.testing.assert_close(actual, expected)


def test_compile_passes_the_option() -> None:
    """`hir.compile(..., propagate_sharding=True)` lowers with `stream-lowering{propagate-sharding=true}`."""

    def block(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + b

    args = (torch.randn(8, 4), torch.randn(8, 4))
    layouts = ["[didx, serial]", "[didx, serial]"]
    fast = hir.compile(block, args, layouts, ["[didx, serial]"], mesh=[0, 1], propagate_sharding=True)
    assert fast.pipeline == "stream-lowering{propagate-sharding=true}"
    # The frontend already types every value from its operands (frontend/emitter.py), so on its
    # modules propagation has nothing left to decide: the same program, without a collective.
    plain = hir.compile(block, args, layouts, ["[didx, serial]"], mesh=[0, 1])
    assert str(fast.module) == str(plain.module)
    assert not collectives(str(fast.module))


@pytest.mark.distributed
@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_propagated_programs_match_reference(tmp_path: Path) -> None:
    """Both lowerings of every module on 2 gloo ranks, against the unsharded reference."""
    paths = []
    for name, text in MODULES.items():
        path = tmp_path / f"{name}.mlir"
        path.write_text(text)
        paths.append(path)
    run_driver_job(paths, pipelines=("nccl", "propagate"))
