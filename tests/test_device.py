"""
The runtime's interfaces to the outside: the one place that knows devices (runtime/device.py:
kinds, defaults, errors, who uses it), `Streams` given to a program, and the `Communicator`
protocol (its implementation's methods, and what each communication op asks of it).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

import hir
from hir.runtime.communicator import Communicator, Mesh, Work
from hir.runtime.device import DEVICE_KINDS, kind_of, requested_kind, run_device, streams_for
from hir.runtime.distributed import ProcessGroupCommunicator, Session
from hir.runtime.streams import CpuStreams
from hir.tools.hir_run import build_parser


def test_kinds_and_transports() -> None:
    assert {name: kind.transport for name, kind in DEVICE_KINDS.items()} == {"cpu": "gloo", "cuda": "nccl"}
    assert isinstance(streams_for(torch.device("cpu")), CpuStreams)
    assert kind_of(torch.device("cuda", 1)) is DEVICE_KINDS["cuda"]
    assert DEVICE_KINDS["cpu"].process_device(3) == torch.device("cpu")  # CPU processes share the host


def test_unknown_device_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"does not run on meta devices \(it knows cpu, cuda\)"):
        kind_of(torch.device("meta"))


def test_default_device() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert requested_kind(None).name == expected
    assert Session.from_environment(None).device.type == expected


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_a_gpu_is_an_error() -> None:
    with pytest.raises(ValueError, match="--device cuda, but torch sees no CUDA device"):
        requested_kind("cuda")


def test_program_device_follows_the_inputs() -> None:
    assert run_device(None, [3, torch.zeros(2)]) == torch.device("cpu")
    assert run_device(None, []) == torch.device("cpu")
    assert run_device("cpu", [torch.zeros(2)]) == torch.device("cpu")


def test_hir_run_offers_the_known_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["x.mlir", "--device", "meta"])
    err = capsys.readouterr().err
    assert "invalid choice: 'meta'" in err
    assert all(name in err for name in DEVICE_KINDS)


def test_program_runs_on_given_streams() -> None:
    """`Program(..., streams=...)` runs the stream ops on the given `Streams` (a wrapper of the device's)."""
    calls: list[str] = []

    class Counting(CpuStreams):
        def set_current(self, stream: object) -> None:
            calls.append("set_current")

    module = hir.parse_file(Path(__file__).resolve().parents[1] / "examples" / "set_stream.hir.mlir")
    x = torch.randn(4, 8)
    (y,) = hir.compile_program(module)([x], num_streams=2, streams=Counting())
    assert torch.equal(y, x)
    # 4 forks + 4 iterations x (worker, back to the caller) + the caller's stream restored at the end
    assert len(calls) == 4 + 8 + 1


def test_process_group_communicator_has_the_protocol_methods() -> None:
    """No type checker runs in CI: compare the implementation's signatures with the protocol's."""
    for name, method in vars(Communicator).items():
        if callable(method) and not name.startswith("_"):
            implemented = getattr(ProcessGroupCommunicator, name)
            assert inspect.signature(implemented).parameters.keys() == inspect.signature(method).parameters.keys()


COMMUNICATION = """
func.func @main(%a: memref<2x8xf32>, %g: memref<4x8xf32>) {
  %c1 = arith.constant 1 : index
  %w0 = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<2x8xf32>, memref<4x8xf32>
  hir.wait %w0
  %w1 = hir.allreduce max %a into %a mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  hir.wait %w1
  %w2 = hir.reduce_scatter sum %g into %a axis 0 mesh = [0, 1] : memref<4x8xf32>, memref<2x8xf32>
  hir.wait %w2
  %w3 = hir.broadcast %a into %a root %c1 mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  hir.wait %w3
  %w4 = hir.send %a to %c1 mesh = [1, 0] : memref<2x8xf32>
  %w5 = hir.recv %g from %c1 mesh = [0, 1] : memref<4x8xf32>
  hir.wait %w5
  hir.wait %w4
  %w6 = hir.collective_permute %a into %a offset 2 mesh = [0, 1, 2] : memref<2x8xf32>, memref<2x8xf32>
  hir.wait %w6
  %w7 = hir.reduce min %a into %a root %c1 mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  hir.wait %w7
  %rank = hir.device_index mesh = [1, 0]
  hir.barrier mesh = [0, 1]
  func.return
}
"""


class LoggingCommunicator:
    """Records what the runtime asks of a `Communicator`; one pending `Work` per collective."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def _post(self, *call: object) -> Work:
        self.calls.append(call)
        log = self.calls

        class Pending:
            def wait(self) -> None:
                log.append(("wait", call[0]))

        return Pending()

    def allgather(self, input: torch.Tensor, output: torch.Tensor, axis: int, mesh: Mesh) -> Work:
        return self._post("allgather", input, output, axis, mesh)

    def allreduce(self, input: torch.Tensor, output: torch.Tensor, kind: str, mesh: Mesh) -> Work:
        return self._post("allreduce", input, output, kind, mesh)

    def reduce_scatter(self, input: torch.Tensor, output: torch.Tensor, axis: int, kind: str, mesh: Mesh) -> Work:
        return self._post("reduce_scatter", input, output, axis, kind, mesh)

    def broadcast(self, input: torch.Tensor, output: torch.Tensor, root: int, mesh: Mesh) -> Work:
        return self._post("broadcast", input, output, root, mesh)

    def send(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work:
        return self._post("send", buffer, peer, mesh)

    def recv(self, buffer: torch.Tensor, peer: int, mesh: Mesh) -> Work:
        return self._post("recv", buffer, peer, mesh)

    def collective_permute(self, send: torch.Tensor, recv: torch.Tensor, offset: int, mesh: Mesh) -> Work:
        return self._post("collective_permute", send, recv, offset, mesh)

    def reduce(self, input: torch.Tensor, output: torch.Tensor, root: int, kind: str, mesh: Mesh) -> Work:
        return self._post("reduce", input, output, root, kind, mesh)

    def position_in(self, mesh: Mesh) -> int:
        self.calls.append(("position_in", mesh))
        return 1

    def empty_symmetric(
        self, key: object, shape: Sequence[int], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor:
        raise AssertionError("no symmetric buffer in this program")

    def peer_view(self, buffer: torch.Tensor, device_id: int) -> torch.Tensor:
        raise AssertionError("no peer view in this program")

    def barrier(self, mesh: Mesh) -> None:
        self.calls.append(("barrier", mesh))


def test_communication_steps_call_the_communicator() -> None:
    """Each communication op calls its `Communicator` method with its buffers, properties and mesh."""
    a, g = torch.randn(2, 8), torch.randn(4, 8)
    communicator: Communicator = LoggingCommunicator()
    hir.execute(hir.parse(COMMUNICATION), [a, g], communicator=communicator)
    calls = [
        tuple(x if not isinstance(x, torch.Tensor) else ("a" if x is a else "g") for x in c) for c in communicator.calls
    ]  # type: ignore[attr-defined]
    assert calls == [
        ("allgather", "a", "g", 0, (0, 1)),
        ("wait", "allgather"),
        ("allreduce", "a", "a", "max", (0, 1)),
        ("wait", "allreduce"),
        ("reduce_scatter", "g", "a", 0, "sum", (0, 1)),
        ("wait", "reduce_scatter"),
        ("broadcast", "a", "a", 1, (0, 1)),
        ("wait", "broadcast"),
        ("send", "a", 1, (1, 0)),
        ("recv", "g", 1, (0, 1)),
        ("wait", "recv"),
        ("wait", "send"),
        ("collective_permute", "a", "a", 2, (0, 1, 2)),
        ("wait", "collective_permute"),
        ("reduce", "a", "a", 1, "min", (0, 1)),
        ("wait", "reduce"),
        ("position_in", (1, 0)),
        ("barrier", (0, 1)),
    ]


class OutsideCommunicator(LoggingCommunicator):
    """A device that runs the program but belongs to none of its meshes."""

    def position_in(self, mesh: Mesh) -> int | None:
        self.calls.append(("position_in", mesh))
        return None


DEVICE_INDEX = """
func.func @main() -> (index, index) {
  %default = hir.device_index mesh = [1, 2]
  %stated = hir.device_index mesh = [1, 2] outside 1
  func.return %default, %stated : index, index
}
"""


def test_device_index_outside_the_mesh() -> None:
    """On a device outside the mesh, `hir.device_index` is 0, or the `outside` value when given."""
    assert hir.execute(hir.parse(DEVICE_INDEX), [], communicator=LoggingCommunicator()) == [1, 1]
    assert hir.execute(hir.parse(DEVICE_INDEX), [], communicator=OutsideCommunicator()) == [0, 1]
