"""
The race checker (runtime/race_check.py): hand-written programs with and without the
synchronization their streams need, on CPU (where streams are no-ops, so only the checker can
see a missing edge) and, marked `cuda`, on a GPU. Every race is a located error naming both ops,
both streams and the buffer; the accesses come from the ops' declared effects, so a new op with
effects is checked with no change to the checker.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Dialect, Operation
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, traits_def
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind

import hir
from hir.api import make_context
from hir.diagnostics import LocatedError
from hir.dialects import hir as hir_dialect
from hir.runtime.compiler import CompileContext, Frame, Step, StepCompilers
from hir.runtime.executor import STEP_COMPILERS
from hir.runtime.race_check import op_accesses
from hir.tools.hir_run import main as hir_run_main

REPO = Path(__file__).resolve().parent.parent
SET_STREAM_HIR = REPO / "examples" / "set_stream.hir.mlir"
SET_STREAM = REPO / "examples" / "set_stream.mlir"

cuda = pytest.mark.cuda
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def without_lines(path: Path, *numbers: int) -> str:
    """The file with these lines blanked (the other lines keep their numbers)."""
    lines = path.read_text().splitlines()
    return "\n".join("" if k + 1 in numbers else line for k, line in enumerate(lines)) + "\n"


def race_of(text: str, inputs: Sequence[Any], name: str = "prog.mlir", **options: Any) -> str:
    """The race error a checked run raises."""
    with pytest.raises(LocatedError) as caught:
        hir.execute(hir.parse(text, name), inputs, race_check=True, **options)
    message = str(caught.value)
    assert " race on " in message, message
    return message


# -- the lowered example ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["nccl", "copy-engine"])
@pytest.mark.parametrize("num_streams", [1, 2, 3, 4, 5])
def test_lowered_example_has_no_race(backend: str, num_streams: int) -> None:
    lowered = hir.run_pipeline(hir.parse_file(SET_STREAM), f"stream-lowering{{backend={backend}}}")
    x = torch.randn(4, 8)
    (out,) = hir.execute(lowered, [x], num_streams=num_streams, race_check=True)
    assert torch.equal(out, x)
    out = torch.empty(4, 8)  # a preallocated output: the caller's writes before the call are ordered too
    (result,) = hir.compile_program(lowered, race_check=True)([x], num_streams=num_streams, outputs=[out])
    assert result is out
    assert torch.equal(out, x)


def test_missing_fork_is_a_race_on_the_input() -> None:
    """Without `hir.synchronize %main` (line 13) the workers read the input before the caller wrote it."""
    message = race_of(without_lines(SET_STREAM_HIR, 13), [torch.randn(4, 8)], "set_stream.hir.mlir")
    assert message.startswith("set_stream.hir.mlir:21:5: error: 'hir.launch' op race on %arg0: ")
    assert "this read on pool stream 0 (%i = 0)" in message
    assert "the caller's write of input #0 (%arg0) before the call on the caller's stream" in message


def test_missing_join_is_a_race_at_exit() -> None:
    """Without `hir.synchronize %s` (line 26) the caller gets its output back before the workers wrote it."""
    message = race_of(without_lines(SET_STREAM_HIR, 26), [torch.randn(4, 8)], "set_stream.hir.mlir")
    assert message.startswith("set_stream.hir.mlir:28:3: error: 'func.return' op race on %arg0: @main returns")
    assert "the read by 'hir.launch' at set_stream.hir.mlir:21:5 (%i = 0) on pool stream 0" in message


def test_loop_index_and_stream_in_messages() -> None:
    """The fork loop forks only stream 0: iteration 1 of the main loop, on pool stream 1, races."""
    text = SET_STREAM_HIR.read_text().replace("hir.for %i = %c0 to %c4", "hir.for %i = %c0 to %c1", 1)
    message = race_of(text, [torch.randn(4, 8)], num_streams=4)
    assert message.startswith(
        "prog.mlir:21:5: error: 'hir.launch' op race on %arg0: this read on pool stream 1 (%i = 1)"
    )
    (out,) = hir.execute(hir.parse(text), [x := torch.randn(4, 8)], num_streams=1, race_check=True)  # one stream
    assert torch.equal(out, x)


# -- views of one buffer: exact overlap -------------------------------------------------------------

COLUMNS = """
func.func @main(%x: memref<4x2xf32>) -> memref<4x2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %main = hir.get_current_stream
  %buf = hir.allocate() : memref<4x2xf32>
  %s0 = hir.stream %c0
  %s1 = hir.stream %c1
  %x0 = hir.alias_select %x[%c0] axis 1 : memref<4x2xf32> -> memref<4xf32, strided<[2], offset: ?>>
  %x1 = hir.alias_select %x[%c1] axis 1 : memref<4x2xf32> -> memref<4xf32, strided<[2], offset: ?>>
  %b0 = hir.alias_select %buf[%c0] axis 1 : memref<4x2xf32> -> memref<4xf32, strided<[2], offset: ?>>
  %b1 = hir.alias_select %buf[%COLUMN] axis 1 : memref<4x2xf32> -> memref<4xf32, strided<[2], offset: ?>>
  hir.set_current_stream %s0
  hir.synchronize %main
  hir.launch ins(%a = %x0 : memref<4xf32, strided<[2], offset: ?>>) outs(%b0 : memref<4xf32, strided<[2], offset: ?>>) {
    %n = fusion.neg %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.set_current_stream %s1
  hir.synchronize %main
  hir.launch ins(%a = %x1 : memref<4xf32, strided<[2], offset: ?>>) outs(%b1 : memref<4xf32, strided<[2], offset: ?>>) {
    %n = fusion.neg %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.set_current_stream %main
  hir.synchronize %s0
  hir.synchronize %s1
  func.return %buf : memref<4x2xf32>
}
"""


def test_columns_written_by_two_streams_do_not_race() -> None:
    """The two column views interleave in one byte span, but share no byte."""
    x = torch.randn(4, 2)
    (out,) = hir.execute(hir.parse(COLUMNS.replace("%COLUMN", "%c1")), [x], num_streams=2, race_check=True)
    assert torch.equal(out, -x)


def test_one_column_written_by_two_streams_races() -> None:
    message = race_of(COLUMNS.replace("%COLUMN", "%c0"), [torch.randn(4, 2)], num_streams=2)
    assert message.startswith("prog.mlir:21:3: error: 'hir.launch' op race on %buf: this write on pool stream 1 ")
    assert "after the write by 'hir.launch' at prog.mlir:15:3 on pool stream 0" in message
    one_stream = COLUMNS.replace("%COLUMN", "%c0").replace("%s1 = hir.stream %c1", "%s1 = hir.stream %c0")
    hir.execute(hir.parse(one_stream), [torch.randn(4, 2)], race_check=True)  # on one stream: in order


# -- communication: one pseudo-stream per posted transfer ------------------------------------------

ALLGATHER = """
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %main = hir.get_current_stream
  %s = hir.stream %c0
  %g = hir.allocate() : memref<4xf32>
  %out = hir.allocate() : memref<4xf32>
  hir.set_current_stream %s
  hir.synchronize %main
  %w = hir.allgather %x into %g axis 0 mesh = [0] : memref<4xf32>, memref<4xf32>
  // WAIT_ON_S
  hir.launch ins(%a = %g : memref<4xf32>) outs(%out : memref<4xf32>) {
    %r = fusion.relu %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %r : tensor<4xf32>
  }
  hir.set_current_stream %main
  // WAIT_ON_MAIN
  hir.synchronize %s
  func.return %out : memref<4xf32>
}
"""


class OneDevice:
    """A communicator for a mesh of this device alone: a collective copies its input, once waited for."""

    rank = 0
    world_size = 1

    class Work:
        def __init__(self, source: torch.Tensor, target: torch.Tensor):
            self.source, self.target = source, target

        def wait(self) -> None:
            self.target.copy_(self.source)

    def allgather(self, input: torch.Tensor, output: torch.Tensor, axis: int, mesh: tuple[int, ...]) -> Work:
        return self.Work(input, output)


def run_allgather(wait_on_s: bool, wait_on_main: bool) -> list[Any]:
    text = ALLGATHER.replace("// WAIT_ON_S", "hir.wait %w" if wait_on_s else "")
    text = text.replace("// WAIT_ON_MAIN", "hir.wait %w" if wait_on_main else "")
    return hir.execute(hir.parse(text, "ag.mlir"), [torch.randn(4)], communicator=OneDevice(), race_check=True)


def test_waited_collective_has_no_race() -> None:
    x = torch.randn(4)
    text = ALLGATHER.replace("// WAIT_ON_S", "hir.wait %w")
    (out,) = hir.execute(hir.parse(text), [x], communicator=OneDevice(), race_check=True)
    assert torch.equal(out, x.relu())


@pytest.mark.parametrize(("wait_on_s", "wait_on_main"), [(False, False), (False, True)])
def test_reading_before_the_wait_races_with_the_collective(wait_on_s: bool, wait_on_main: bool) -> None:
    """The collective runs on a stream of its own: its stream's read of %g is only ordered after `hir.wait`."""
    with pytest.raises(LocatedError) as caught:
        run_allgather(wait_on_s, wait_on_main)
    message = str(caught.value)
    assert message.startswith("ag.mlir:12:3: error: 'hir.launch' op race on %g: this read on pool stream 0 ")
    assert "after the write by 'hir.allgather' at ag.mlir:10:3 on the stream of the 'hir.allgather' posted" in message


def test_unwaited_collective_races_at_exit() -> None:
    """Never waited for, the collective may still read the caller's input when the program returns."""
    text = ALLGATHER.replace("hir.launch ins(%a = %g", "hir.launch ins(%a = %x")  # the launch does not need %g
    message = race_of(text, [torch.randn(4)], "ag.mlir", communicator=OneDevice())
    assert message.startswith("ag.mlir:19:3: error: 'func.return' op race on %x: @main returns while the read by ")
    assert "'hir.allgather' at ag.mlir:10:3 on the stream of the 'hir.allgather' posted at ag.mlir:10:3 is" in message


PERMUTE = """
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) -> memref<4xf32> {
  %r = hir.allocate() : memref<4xf32>
  %w = hir.collective_permute %x into %r offset 1 mesh = [0, 1] : memref<4xf32>, memref<4xf32>
  // WAIT
  hir.launch ins(%a = %IN : memref<4xf32>) outs(%OUT : memref<4xf32>) {
    %n = fusion.neg %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.wait %w
  func.return %r : memref<4xf32>
}
"""


class RingOfOne:
    """
    A device whose ring peer sends back what it receives: `hir.collective_permute` copies `send`
    into `recv` once waited for. No job size: the program's two devices are not checked.
    """

    rank = 0

    def collective_permute(self, send: torch.Tensor, recv: torch.Tensor, offset: int, mesh: tuple[int, ...]) -> Any:
        return OneDevice.Work(send, recv)


@pytest.mark.parametrize(
    ("inputs", "outputs", "access"),
    [("%r", "%y", "read on the caller's stream"), ("%y", "%x", "write on the caller's stream")],
)
def test_collective_permute_reads_send_and_writes_recv_until_waited(inputs: str, outputs: str, access: str) -> None:
    """Reading `recv` or overwriting `send` before `hir.wait` races with the permute; after it, nothing does."""
    text = PERMUTE.replace("%IN", inputs).replace("%OUT", outputs)
    message = race_of(text, [torch.randn(4), torch.randn(4)], "permute.mlir", communicator=RingOfOne())
    name = (outputs if access.startswith("write") else inputs).lstrip("%")
    assert message.startswith(f"permute.mlir:6:3: error: 'hir.launch' op race on %{name}: this {access} "), message
    assert "'hir.collective_permute' at permute.mlir:4:3" in message
    x, y = torch.randn(4), torch.randn(4)
    waited = hir.parse(text.replace("  hir.wait %w\n", "").replace("// WAIT", "hir.wait %w"))
    (r,) = hir.execute(waited, [x.clone(), y], communicator=RingOfOne(), race_check=True)
    assert torch.equal(r, x)


REDUCE = """
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %r = hir.allocate() : memref<4xf32>
  %w = hir.reduce sum %x into %r root %c0 mesh = [0, 1] : memref<4xf32>, memref<4xf32>
  hir.launch ins(%a = %IN : memref<4xf32>) outs(%OUT : memref<4xf32>) {
    %n = fusion.neg %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.wait %w
  func.return %r : memref<4xf32>
}
"""


class ReduceOfOne:
    """
    Position `position` of a two-device mesh whose peer contributes zeros: `hir.reduce` copies
    `input` into `output` once waited for, on the root only. No job size: the mesh is not checked.
    """

    rank = 0

    def __init__(self, position: int):
        self.position = position

    def position_in(self, mesh: tuple[int, ...]) -> int:
        return self.position

    def reduce(self, input: torch.Tensor, output: torch.Tensor, root: int, kind: str, mesh: tuple[int, ...]) -> Any:
        return OneDevice.Work(input, output) if root == self.position else OneDevice.Work(input, input)


@pytest.mark.parametrize("position", [0, 1])
def test_reduce_writes_its_output_on_the_root_only(position: int) -> None:
    """Reading `%r` before `hir.wait` races with the reduce on the root; elsewhere the reduce leaves it alone."""
    text = REDUCE.replace("%IN", "%r").replace("%OUT", "%y")
    x = torch.randn(4)
    if position == 0:
        message = race_of(text, [x, torch.randn(4)], "reduce.mlir", communicator=ReduceOfOne(position))
        assert message.startswith("reduce.mlir:6:3: error: 'hir.launch' op race on %r: this read "), message
        assert "'hir.reduce' at reduce.mlir:5:3" in message
    else:
        hir.execute(hir.parse(text), [x, torch.randn(4)], communicator=ReduceOfOne(position), race_check=True)


@pytest.mark.parametrize("position", [0, 1])
def test_reduce_reads_its_input_on_every_device(position: int) -> None:
    """Overwriting `%x` before `hir.wait` races with the reduce, root or not."""
    text = REDUCE.replace("%IN", "%y").replace("%OUT", "%x")
    message = race_of(text, [torch.randn(4), torch.randn(4)], "reduce.mlir", communicator=ReduceOfOne(position))
    assert message.startswith("reduce.mlir:6:3: error: 'hir.launch' op race on %x: this write "), message


# -- allocation and deallocation ---------------------------------------------------------------------

BUFFERS = """
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %main = hir.get_current_stream
  %s = hir.stream %c0
  %out = hir.allocate() : memref<4xf32>
  // ALLOCATE_BEFORE_FORK
  hir.set_current_stream %s
  hir.synchronize %main
  hir.set_current_stream %main
  // ALLOCATE_AFTER_FORK
  hir.set_current_stream %s
  hir.launch ins(%a = %x : memref<4xf32>) outs(%tmp : memref<4xf32>) {
    %n = fusion.neg %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.launch ins(%a = %tmp : memref<4xf32>) outs(%out : memref<4xf32>) {
    %n = fusion.exp %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.set_current_stream %main
  // DEALLOCATE_EARLY
  hir.synchronize %s
  // DEALLOCATE_LATE
  func.return %out : memref<4xf32>
}
"""


def buffers(allocate: str, deallocate: str) -> str:
    text = BUFFERS.replace(f"// ALLOCATE_{allocate}", "%tmp = hir.allocate() : memref<4xf32>")
    return text.replace(f"// DEALLOCATE_{deallocate}", "hir.deallocate %tmp : memref<4xf32>")


def test_buffers_used_after_their_allocation_and_before_their_deallocation() -> None:
    x = torch.randn(4)
    (out,) = hir.execute(hir.parse(buffers("BEFORE_FORK", "LATE")), [x], race_check=True)
    assert torch.equal(out, torch.exp(-x))


def test_a_stream_that_did_not_wait_for_the_allocation_races() -> None:
    """The caching allocator may hand %tmp a block the caller's stream still uses: other streams must wait."""
    message = race_of(buffers("AFTER_FORK", "LATE"), [torch.randn(4)])
    assert message.startswith("prog.mlir:13:3: error: 'hir.launch' op race on %tmp: this write on pool stream 0 ")
    assert "after the allocation by 'hir.allocate' at prog.mlir:11:3 on the caller's stream" in message


def test_deallocating_while_a_stream_still_uses_the_buffer_races() -> None:
    message = race_of(buffers("BEFORE_FORK", "EARLY"), [torch.randn(4)])
    assert message.startswith("prog.mlir:22:3: error: 'hir.deallocate' op race on %tmp: this deallocation gives")
    assert "the write by 'hir.launch' at prog.mlir:13:3 on pool stream 0 is not ordered before" in message


SCRATCH = """
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %main = hir.get_current_stream
  %s = hir.stream %c0
  %out = hir.allocate() : memref<4xf32>
  hir.set_current_stream %s
  hir.synchronize %main
  %tmp = hir.allocate() : memref<4xf32>
  hir.launch ins(%a = %x : memref<4xf32>) outs(%tmp : memref<4xf32>) {
    %n = fusion.neg %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.set_current_stream %main
  hir.synchronize %s
  hir.launch ins(%a = %tmp : memref<4xf32>) outs(%out : memref<4xf32>) {
    %n = fusion.relu %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.set_current_stream %s
  hir.synchronize %main
  hir.launch ins(%a = %tmp : memref<4xf32>) outs(%tmp : memref<4xf32>) {
    %n = fusion.exp %a : tensor<4xf32> -> tensor<4xf32>
    hir.yield %n : tensor<4xf32>
  }
  hir.set_current_stream %main
  func.return %RESULT : memref<4xf32>
}
"""


def test_work_left_on_a_buffer_of_another_stream_is_no_race_at_exit() -> None:
    """%tmp, allocated on pool stream 0, goes back to that stream's pool: its pending work orders any reuse."""
    x = torch.randn(4)
    (out,) = hir.execute(hir.parse(SCRATCH.replace("%RESULT", "%out")), [x], race_check=True)
    assert torch.equal(out, (-x).relu())
    message = race_of(SCRATCH.replace("%RESULT", "%tmp"), [x])  # returned, the caller gets it too early
    assert message.startswith("prog.mlir:27:3: error: 'func.return' op race on %tmp: @main returns while the write")
    assert "the write by 'hir.launch' at prog.mlir:22:3 on pool stream 0 is not ordered before" in message


def test_a_race_before_a_failure_is_reported() -> None:
    """On a GPU a race can make a later op fail; the race is the error reported."""
    text = without_lines(SET_STREAM_HIR, 13).replace(
        "  func.return %buf",
        "  %four = hir.num_streams\n  %bad = hir.alias_select %buf[%four] axis 0 : memref<4x8xf32> -> memref<8xf32, "
        "strided<[1], offset: ?>>\n  func.return %buf",
    )
    with pytest.raises(LocatedError) as caught:
        hir.execute(hir.parse(text), [torch.randn(4, 8)], race_check=True)
    assert " race on %arg0: " in str(caught.value)
    assert "out of range" in str(caught.value.__cause__)


# -- accesses come from declared effects ---------------------------------------------------------------


class FillEffects(MemoryEffect):
    @classmethod
    def get_effects(cls, op: Operation) -> set[EffectInstance]:
        return {EffectInstance(MemoryEffectKind.WRITE, op.operands[0])}


@irdl_op_definition
class FillOp(IRDLOperation):
    """A new op with declared effects: writes ones into its buffer."""

    name = "race_test.fill"
    buffer = operand_def(MemRefType)
    traits = traits_def(FillEffects())
    assembly_format = "$buffer attr-dict `:` type($buffer)"


@irdl_op_definition
class TouchOp(IRDLOperation):
    """A new op that declares no effects at all: assumed to read and write its buffer."""

    name = "race_test.touch"
    buffer = operand_def(MemRefType)
    assembly_format = "$buffer attr-dict `:` type($buffer)"


TEST_COMPILERS = StepCompilers()


@TEST_COMPILERS.compiles(FillOp, TouchOp)
def _compile_fill(op: FillOp | TouchOp, ctx: CompileContext) -> Step:
    slot = ctx.slot(op.buffer)

    def step(frame: Frame) -> None:
        frame.env[slot].fill_(1.0)

    return step


NEW_OP = """
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %main = hir.get_current_stream
  %s0 = hir.stream %c0
  %s1 = hir.stream %c1
  %buf = hir.allocate() : memref<4xf32>
  hir.set_current_stream %s0
  hir.synchronize %main
  race_test.OP %buf : memref<4xf32>
  hir.set_current_stream %s1
  hir.synchronize %main
  // JOIN
  race_test.OP %buf : memref<4xf32>
  hir.set_current_stream %main
  hir.synchronize %s0
  hir.synchronize %s1
  func.return %buf : memref<4xf32>
}
"""


@pytest.mark.parametrize("op", ["fill", "touch"])
def test_a_new_op_is_checked_through_its_effects(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for op_type, step_compiler in TEST_COMPILERS.items():  # the runtime learns to run the new ops
        monkeypatch.setitem(STEP_COMPILERS, op_type, step_compiler)
    ctx = make_context()
    ctx.load_dialect(Dialect("race_test", [FillOp, TouchOp]))
    text = NEW_OP.replace("OP", op)
    message = race_of_module(hir.parse(text, "new.mlir", ctx))
    verb = "write" if op == "fill" else "read"  # an op of unknown effects reads and writes
    assert message.startswith(f"new.mlir:15:3: error: 'race_test.{op}' op race on %buf: this {verb} on pool stream 1")
    assert f"after the write by 'race_test.{op}' at new.mlir:11:3 on pool stream 0" in message
    ordered = hir.parse(text.replace("// JOIN", "hir.synchronize %s0"), "new.mlir", ctx)
    (out,) = hir.execute(ordered, [torch.randn(4)], race_check=True)
    assert torch.equal(out, torch.ones(4))


def race_of_module(module: Any) -> str:
    with pytest.raises(LocatedError) as caught:
        hir.execute(module, [torch.randn(4)], race_check=True)
    assert " race on " in str(caught.value)
    return str(caught.value)


def test_accesses_of_each_op_come_from_its_effects() -> None:
    """What the checker wraps in the lowered all-gather + GEMM, and what it sees each op do."""
    lowered = hir.run_pipeline(hir.parse_file(REPO / "examples" / "ag_matmul.mlir"), "stream-lowering")
    ctx = CompileContext(STEP_COMPILERS)
    seen: dict[str, tuple[list[str], list[str], bool, bool, int] | None] = {}
    for op in lowered.walk():
        accesses = op_accesses(op, ctx)
        seen[op.name] = (
            None
            if accesses is None
            else (
                [v.name_hint or "" for _, v in accesses.reads],
                [v.name_hint or "" for _, v in accesses.writes],
                bool(accesses.posts),
                bool(accesses.joins),
                len(accesses.allocs),
            )
        )
    assert seen["hir.allgather"] == (["a_i"], ["a_gathered_i"], True, False, 0)
    assert seen["hir.wait"] == ([], [], False, True, 0)
    assert seen["hir.launch"] == (["a_gathered_i", "b"], ["c_i"], False, False, 0)
    assert seen["hir.allocate"] == ([], [], False, False, 1)
    for name in ("hir.for", "hir.set_current_stream", "hir.synchronize", "hir.get_current_stream", "hir.stream"):
        assert seen[name] is None, name  # edges come from the stream methods; loops from their bodies
    lowered_launch = next(op for op in lowered.walk() if isinstance(op, hir_dialect.LaunchOp))
    assert op_accesses(lowered_launch, ctx).loops == (("%i", ctx.slot(lowered_launch.parent_block().args[0])),)


# -- hir-run --------------------------------------------------------------------------------------------


def test_hir_run_race_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def run(*args: str | Path) -> tuple[int, str, str]:
        code = 0
        try:
            hir_run_main([str(a) for a in args])
        except SystemExit as exit:
            code = int(exit.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = run(SET_STREAM, "--check", "--race-check", "--num-streams", "3")
    assert code == 0
    assert "check: OK" in out
    assert "race check: OK" in out
    racy = tmp_path / "racy.mlir"
    racy.write_text(without_lines(SET_STREAM_HIR, 26))
    code, out, err = run(racy, "--race-check")
    assert code == 1
    assert "Traceback" not in err
    assert err.startswith(f"{racy}:28:3: error: 'func.return' op race on %arg0: @main returns while")
    code, out, err = run(racy)  # without the checker the CPU run is in order: nothing to see
    assert code == 0
    assert "error" not in err


# -- CUDA -----------------------------------------------------------------------------------------------


@cuda
@needs_cuda
@pytest.mark.parametrize("num_streams", [1, 3])
def test_race_check_on_cuda_streams(num_streams: int) -> None:
    """On a GPU the checker wraps the real streams: the program still overlaps and computes the same."""
    x = torch.randn(4, 8, device="cuda")
    lowered = hir.run_pipeline(hir.parse_file(SET_STREAM), "stream-lowering{backend=copy-engine}")
    caller = torch.cuda.Stream()
    with torch.cuda.stream(caller):
        (out,) = hir.execute(lowered, [x], num_streams=num_streams, race_check=True)
        assert torch.cuda.current_stream() == caller  # the caller's stream is restored
        copy = out.clone()
    torch.cuda.synchronize()
    assert torch.equal(copy, x)
    message = race_of(without_lines(SET_STREAM_HIR, 13), [x], num_streams=num_streams)
    assert "this read on pool stream 0 (%i = 0)" in message
