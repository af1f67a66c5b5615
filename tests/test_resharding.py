"""
Every resharding lowering of passes/resharding on 1, 2 and 4 CPU processes (gloo): the modules of
tests/resharding/ (2 ranks), tests/resharding/four_devices/ (4 ranks) and
tests/resharding/one_device/ (the mesh [0], one process), each lowered with both communication
backends (the one-device modules with every lowering) and run race-checked with 1 and 3 streams
against the unsharded reference, one job per rank count (tests/distributed_driver.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from test_distributed import run_driver_job

import hir

CASES = Path(__file__).resolve().parent / "resharding"
TWO_DEVICES = sorted(CASES.glob("*.mlir"))
FOUR_DEVICES = sorted((CASES / "four_devices").glob("*.mlir"))
# Uneven didx axes (an extent other than the mesh size): lowered by the nccl backend only.
UNEVEN_TWO = sorted((CASES / "uneven").glob("*.mlir"))
UNEVEN_FOUR = sorted((CASES / "uneven" / "four_devices").glob("*.mlir"))
ONE_DEVICE = sorted((CASES / "one_device").glob("*.mlir"))
ONE_DEVICE_PIPELINES = ("nccl", "copy-engine", "copy-engine-start", "ring", "by-shard", "auto", "never")
"""Every backend, chunks, a release barrier and the overlap modes."""
NO_SERIAL_FORM = {"ag_matmul_1", "linear_sharded_k_1", "matmul_reduce_scatter_1"}
"""The one-device modules whose serial form `overlap=never` refuses, as it does on two devices."""

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo"
)


@pytest.mark.distributed
def test_two_devices() -> None:
    assert len(TWO_DEVICES) >= 16
    run_driver_job(TWO_DEVICES, timeout=240)


@pytest.mark.distributed
def test_four_devices() -> None:
    assert len(FOUR_DEVICES) >= 6
    run_driver_job(FOUR_DEVICES, processes=4, timeout=240)


@pytest.mark.distributed
def test_one_device() -> None:
    """
    A mesh of one device on one process: each module with every lowering, run both without a
    communicator (as hir-run on one process) and over a gloo process group of one (as under
    `torchrun --nproc-per-node 1`); the serial form where it lowers.
    """
    assert len(ONE_DEVICE) >= 12
    refused = [f"{name}/never" for name in NO_SERIAL_FORM]
    run_driver_job(ONE_DEVICE, processes=1, pipelines=ONE_DEVICE_PIPELINES, timeout=240, refused=refused)


@pytest.mark.parametrize("name", sorted(NO_SERIAL_FORM))
def test_one_device_serial_form_is_refused_as_on_two(name: str) -> None:
    """`overlap=never` refuses the same serial forms on one device as on two, with the same diagnostic."""
    path = CASES / "one_device" / f"{name}.mlir"
    with pytest.raises(
        Exception, match=rf"{name}.mlir:\d+:\d+: error: .* op overlap=never: cannot make the stream axes serial"
    ):
        hir.run_pipeline(hir.parse_file(path), "stream-lowering{overlap=never}")


@pytest.mark.distributed
def test_broadcast_operand_with_ring() -> None:
    """
    The GEMM + reduce-scatter by send/recv, whose extent-1 broadcast operand every device gets
    whole, with the ring backend as well (test_two_devices runs the nccl and copy-engine ones).
    """
    run_driver_job([CASES / "reduce_scatter_send_recv.mlir"], pipelines=("ring",), timeout=120)


@pytest.mark.distributed
def test_uneven_two_devices() -> None:
    assert len(UNEVEN_TWO) >= 8
    run_driver_job(UNEVEN_TWO, pipelines=("nccl", "propagate"), timeout=240)


@pytest.mark.distributed
def test_uneven_four_devices() -> None:
    assert len(UNEVEN_FOUR) >= 4
    run_driver_job(UNEVEN_FOUR, processes=4, pipelines=("nccl",), timeout=240)


@pytest.mark.parametrize("path", [*UNEVEN_TWO, *UNEVEN_FOUR], ids=lambda p: p.stem)
def test_uneven_lowers_with_nccl_only(path: Path) -> None:
    """The nccl lowering leaves no resharding launch; the other backends report the op instead of lowering it."""
    module = hir.parse_file(path)
    lowered = hir.run_pipeline(module.clone(), "stream-lowering")  # verified after the pass (hir.verify)
    assert "as tensor<" not in str(lowered)
    for backend in ("copy-engine", "ring"):
        with pytest.raises(Exception, match=rf"{path.name}:\d+:\d+: error: .*backend={backend} does not lower"):
            hir.run_pipeline(module.clone(), f"stream-lowering{{backend={backend}}}")


@pytest.mark.parametrize("path", [*TWO_DEVICES, *FOUR_DEVICES, *ONE_DEVICE], ids=lambda p: p.stem)
def test_lowers_and_verifies(path: Path) -> None:
    """Cheap in-process check that every case lowers with each backend (the jobs above run two of them)."""
    module = hir.parse_file(path)
    for pipeline in (
        "stream-lowering",
        "stream-lowering{backend=copy-engine chunks=2}",
        "stream-lowering{backend=ring}",
    ):
        # run_pipeline verifies the module after the pass (hir.verify: xDSL's verifier and more).
        lowered = hir.run_pipeline(module.clone(), pipeline)
        assert "as tensor<" not in str(lowered)  # no resharding launch left


def test_partial_sum_stays_a_communication_with_resharding_only() -> None:
    """Bug 6's regression: resharding-only keeps the sum over the didx axis out of the segments."""
    lowered = hir.run_pipeline(
        hir.parse_file(CASES / "matmul_allreduce_resharding_only.mlir"), "stream-lowering{policy=resharding-only}"
    )
    text = str(lowered)
    assert text.count("hir.allreduce") == 1, text
    assert "fusion.relu" in text
    assert "fusion.matmul" in text


UNEVEN_CHUNKS = {
    # 7 rows in stream(3) chunks of 3, 3 and 1 rows; a matmul then an elementwise op in one loop.
    "rows": """
func.func @main(%x: tensor<7x4xf32>, %w: tensor<4x5xf32>) -> tensor<7x5xf32, #fusion.parallel<[stream(3), serial]>> {
  %y = fusion.matmul %x, %w : tensor<7x4xf32>, tensor<4x5xf32> -> tensor<7x5xf32, #fusion.parallel<[stream(3), serial]>>
  %z = fusion.tanh %y : tensor<7x5xf32, #fusion.parallel<[stream(3), serial]>> -> tensor<7x5xf32, #fusion.parallel<[stream(3), serial]>>
  func.return %z : tensor<7x5xf32, #fusion.parallel<[stream(3), serial]>>
}
""",
    # 6 columns in stream(4) chunks of 2, 2, 2 and 0 columns (an empty last chunk), a strided view.
    "columns_with_an_empty_chunk": """
func.func @main(%x: tensor<3x6xf32>, %b: tensor<3x6xf32>) -> tensor<3x6xf32, #fusion.parallel<[serial, stream(4)]>> {
  %y = fusion.add %x, %b : tensor<3x6xf32>, tensor<3x6xf32> -> tensor<3x6xf32, #fusion.parallel<[serial, stream(4)]>>
  func.return %y : tensor<3x6xf32, #fusion.parallel<[serial, stream(4)]>>
}
""",
}


@pytest.mark.parametrize("name", UNEVEN_CHUNKS)
@pytest.mark.parametrize("num_streams", [1, 2, 3])
def test_uneven_chunks_match_reference(name: str, num_streams: int) -> None:
    """stream(N) chunks that do not divide the extent, run race-checked against eager torch."""
    from device_under_test import execute_lowered

    from hir.runtime.inputs import random_inputs

    module = hir.parse(UNEVEN_CHUNKS[name], f"{name}.mlir")
    reference = hir.compile_program(module)
    inputs = random_inputs(reference.input_types, seed=1)
    expected = reference(inputs, device="cpu")
    lowered = hir.run_pipeline(hir.parse(UNEVEN_CHUNKS[name], f"{name}.mlir"), "stream-lowering")
    assert "chunks" in str(lowered)
    (actual,) = execute_lowered(lowered, inputs, num_streams=num_streams)
    torch.testing.assert_close(actual, expected[0])


def test_shard_takes_torch_chunks() -> None:
    """`shard` cuts a global input as torch.chunk / DTensor Shard(dim): ceil(L/D) indices, trailing ones clamped."""
    from xdsl.dialects.builtin import DYNAMIC_INDEX

    from hir.dialects.parallel_encoding import local_shape
    from hir.runtime.distributed import shard

    t = hir.parse(UNEVEN_INPUT, "uneven_input.mlir").body.block.first_op.function_type.inputs.data[0]
    x = torch.arange(4 * 7).reshape(4, 7).float()
    pieces = [shard(x, t, rank) for rank in range(4)]
    assert [p.shape[1] for p in pieces] == [2, 2, 2, 1]
    torch.testing.assert_close(torch.cat(pieces, dim=1), x)
    for rank, piece in enumerate(pieces):
        torch.testing.assert_close(piece, torch.tensor_split(x, [2, 4, 6], dim=1)[rank])
    assert local_shape(t) == [4, DYNAMIC_INDEX]


class _AtPosition:
    """A stand-in communicator that places this process at one mesh position."""

    def __init__(self, position: int):
        self.position = position

    def position_in(self, mesh: tuple[int, ...]) -> int | None:
        return self.position


UNEVEN_INPUT = """
func.func @main(%x: tensor<4x7xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>) -> tensor<4x7xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> {
  %y = fusion.neg %x : tensor<4x7xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<4x7xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<4x7xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
}
"""


def test_uneven_shard_of_the_wrong_extent_is_refused() -> None:
    """A per-rank input's type says `?` on the uneven axis: the runtime checks the rank's own extent."""
    from hir.diagnostics import LocatedError

    program = hir.compile_program(hir.run_pipeline(hir.parse(UNEVEN_INPUT, "uneven_input.mlir"), "stream-lowering"))
    program._check_shards([torch.randn(4, 1)], _AtPosition(3))  # device 3 holds index 6 only
    with pytest.raises(
        LocatedError,
        match=r"uneven_input.mlir:2:1: .*input #0 has extent 2 along its didx axis 1, "
        r"but the device at position 3 of mesh \[0, 1, 2, 3\] holds 1 of its 7 indices \(\[6, 7\)",
    ):
        program._check_shards([torch.randn(4, 2)], _AtPosition(3))
    with pytest.raises(LocatedError, match=r"holds 2 of its 7 indices \(\[0, 2\)"):
        program._check_shards([torch.randn(4, 1)], None)  # a single process is position 0
