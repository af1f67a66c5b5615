"""
Meshes of one device (`mesh = [0]`, every didx axis of extent 1), as on a machine with one GPU or
under `torchrun --nproc-per-node 1`: the collectives of the hir ops run without a communicator
(each a local copy), `hir-run` checks a lowered program on one process, with and without a
one-process job around it, against eager torch on random inputs. tests/test_resharding.py runs
every module of tests/resharding/one_device/ with each lowering, and tests/test_fuzz_multidevice.py
draws random programs on one rank.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from ranks import run_ranks
from test_runtime_hir import hir_run_here

import hir
from hir.diagnostics import LocatedError
from hir.runtime.inputs import random_inputs

REPO = Path(__file__).resolve().parent.parent
ONE_DEVICE = REPO / "tests" / "resharding" / "one_device"

COLLECTIVES = """func.func @main(%x: memref<2x4xf32>, %y: memref<2x4xf32>, %z: memref<1x6xf32>)
    -> (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<1x6xf32>) {
  %c0 = arith.constant 0 : index
  %gathered = hir.allocate() : memref<2x4xf32>
  %0 = hir.allgather %x into %gathered axis 0 mesh = [0] : memref<2x4xf32>, memref<2x4xf32>
  hir.wait %0
  %summed = hir.allocate() : memref<2x4xf32>
  hir.launch ins(%y_1 = %y : memref<2x4xf32>) outs(%summed : memref<2x4xf32>) {
    %e = fusion.exp %y_1 : tensor<2x4xf32> -> tensor<2x4xf32>
    hir.yield %e : tensor<2x4xf32>
  }
  %1 = hir.allreduce sum %summed into %summed mesh = [0] : memref<2x4xf32>, memref<2x4xf32>
  hir.wait %1
  %scattered = hir.allocate() : memref<2x4xf32>
  %2 = hir.reduce_scatter sum %y into %scattered axis 0 mesh = [0] : memref<2x4xf32>, memref<2x4xf32>
  hir.wait %2
  %received = hir.allocate() : memref<2x4xf32>
  %3 = hir.broadcast %x into %received root %c0 mesh = [0] : memref<2x4xf32>, memref<2x4xf32>
  hir.wait %3
  %reduced = hir.allocate() : memref<2x4xf32>
  %4 = hir.reduce max %y into %reduced root %c0 mesh = [0] : memref<2x4xf32>, memref<2x4xf32>
  hir.wait %4
  %exchanged = hir.allocate() : memref<1x6xf32>
  %5 = hir.all_to_all %z into %exchanged split_axis 1 concat_axis 0 mesh = [0] : memref<1x6xf32>, memref<1x6xf32>
  hir.wait %5
  func.return %gathered, %summed, %scattered, %received, %reduced, %exchanged : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<1x6xf32>
}
"""


def test_collectives_over_one_device_run_without_a_communicator() -> None:
    """
    Each collective over the mesh [0] is its input (one device's data is the whole mesh's):
    copied into a fresh buffer (poisoned, so a copy that does not happen shows), or left in place.
    (A collective-permute has no offset on one device: the verifier refuses it.)
    """
    program = hir.compile_program(hir.parse(COLLECTIVES, "collectives.mlir"), race_check=True)
    x, y, z = torch.randn(2, 4), torch.randn(2, 4), torch.randn(1, 6)
    outputs = program([x, y, z], num_streams=2)
    expected = [x, y.exp(), y, x, y, z]
    assert len(outputs) == len(expected)
    for k, (out, want) in enumerate(zip(outputs, expected)):
        assert torch.equal(out, want), f"output #{k}"


def test_point_to_point_over_one_device_has_no_peer() -> None:
    text = """func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %w = hir.send %x to %c0 mesh = [0] : memref<4xf32>
  hir.wait %w
  func.return %x : memref<4xf32>
}
"""
    with pytest.raises(LocatedError) as info:
        hir.execute(hir.parse(text, "send.mlir"), [torch.randn(4)])
    message = str(info.value)
    assert message.startswith("send.mlir:3:3: error: 'hir.send' op failed at run time: "), message
    assert "hir.send over mesh [0]: a mesh of one device has no peer to send to" in message


def test_a_larger_mesh_still_needs_its_devices() -> None:
    """One collective over [0] runs alone; one over [0, 1] in the same program is refused before anything runs."""
    text = """func.func @main(%x: memref<4xf32>) -> (memref<4xf32>, memref<8xf32>) {
  %own = hir.allocate() : memref<4xf32>
  %0 = hir.allgather %x into %own axis 0 mesh = [0] : memref<4xf32>, memref<4xf32>
  hir.wait %0
  %both = hir.allocate() : memref<8xf32>
  %1 = hir.allgather %x into %both axis 0 mesh = [0, 1] : memref<4xf32>, memref<8xf32>
  hir.wait %1
  func.return %own, %both : memref<4xf32>, memref<8xf32>
}
"""
    with pytest.raises(LocatedError) as info:
        hir.execute(hir.parse(text, "two.mlir"), [torch.randn(4)])
    assert str(info.value).startswith("two.mlir:6:3: error: 'hir.allgather' op needs the devices of mesh [0, 1]: ")


@pytest.mark.parametrize(
    "pipeline",
    [
        "stream-lowering",
        "stream-lowering{backend=copy-engine chunks=2}",
        "stream-lowering{backend=ring}",
        "stream-lowering{overlap=by-shard backend=copy-engine}",
    ],
)
def test_hir_run_checks_the_tp_block_on_one_process(capsys: pytest.CaptureFixture[str], pipeline: str) -> None:
    """`hir-run --check` on one process, no torchrun: the TP MLP block on the mesh [0], race-checked."""
    result = hir_run_here(
        capsys, ONE_DEVICE / "tp_mlp_1.mlir", "-p", pipeline, "--check", "--race-check", "--num-streams", "3"
    )
    assert result.returncode == 0, result
    assert f"check: OK (the fusion-level reference against the program lowered by -p '{pipeline}'" in result.stdout
    assert "race check: OK" in result.stdout


def test_hir_run_saves_the_outputs_of_a_lowered_program(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A lowered program with collectives over [0], checked against its fusion-level module; outputs saved global."""
    source = ONE_DEVICE / "matmul_reduce_scatter_1.mlir"
    lowered = tmp_path / "lowered.mlir"
    lowered.write_text(str(hir.run_pipeline(hir.parse_file(source), "stream-lowering")))
    assert "hir.reduce_scatter" in lowered.read_text()
    outputs = tmp_path / "out.pt"
    result = hir_run_here(capsys, lowered, "--reference", source, "--outputs", outputs)
    assert result.returncode == 0, result
    assert "check: OK" in result.stdout
    reference = hir.compile_program(hir.parse_file(source))
    (expected,) = reference(random_inputs(reference.input_types, seed=0), device="cpu")
    (saved,) = torch.load(outputs)
    assert saved.shape == (4, 1, 8, 12)
    torch.testing.assert_close(saved, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.distributed
@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_hir_run_in_a_job_of_one_process() -> None:
    """`torchrun --nproc-per-node 1 -m hir.tools.hir_run ... --check` (the job started as torchrun would)."""
    module = ONE_DEVICE / "ag_matmul_by_device_1.mlir"
    result = run_ranks(
        ["-m", "hir.tools.hir_run", str(module), "-p", "stream-lowering{backend=copy-engine}", "--check"],
        timeout=90,
        processes=1,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "check: OK" in result.stdout, result.stdout
    assert "Warning" not in result.stderr, result.stderr


def test_a_one_device_collective_copies_and_refuses_buffers_of_other_shapes() -> None:
    """The copy a collective over [0] is: into a buffer of another shape it names the op and both shapes."""
    from hir.runtime.communicator import ONE_DEVICE

    x, out = torch.randn(4, 3), torch.empty(4, 3)
    assert ONE_DEVICE.allgather(x, out, 0, (0,)) is None
    assert torch.equal(out, x)
    with pytest.raises(
        ValueError, match=r"hir.allgather over a mesh of one device copies its input, .*\(4, 3\) and \(8, 3\)"
    ):
        ONE_DEVICE.allgather(x, torch.empty(8, 3), 0, (0,))
