"""
`hir-loop-fusion` on hand-written host programs: every program computes the same before and after
the pass (on random inputs, for several numbers of streams), and the legal ones lose loops.

Programs run in order on CPU, so a fusion that breaks a dependence changes the numbers there too;
on CUDA the same programs also run on real streams.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

import hir
from hir.dialects import hir as hir_dialect
from hir.runtime.inputs import random_inputs

LIT_DIR = Path(__file__).resolve().parent / "lit" / "passes" / "hir-loop-fusion"
NUM_STREAMS = (1, 2, 3, 4, 8)

cuda = pytest.mark.cuda
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=[cuda, needs_cuda])]

# Views of rows of row-major buffers.
ROW8 = "memref<8xf32, strided<[1], offset: ?>>"
COL4 = "memref<4xf32, strided<[4], offset: ?>>"
CHUNK = "memref<2x4xf32, strided<[4, 1], offset: ?>>"
BLOCK16 = "memref<8x16xf32, strided<[16, 1], offset: ?>>"
BLOCK32 = "memref<8x32xf32, strided<[32, 1], offset: ?>>"

PROLOGUE = """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
"""


def stream_loop(iv: str, work: str) -> str:
    """
    A `hir.stream_for` over 0..4 as convert-fusion-to-hir emits it, around hand-written `work`
    that names the loop's induction variable `%{iv}`.
    """
    return f"""
  hir.stream_for %{iv} = %c0 to %c4 step %c1 streams(%{iv}_s) of %n from %main {{
{work}
  }}
"""


def unary_rows(iv: str, op: str, src: str, dst: str) -> str:
    """`dst[iv] = op(src[iv])` on rows of 4x8 buffers."""
    return f"""
    %{iv}_in = hir.alias_select %{src}[%{iv}] axis 0 : memref<4x8xf32> -> {ROW8}
    %{iv}_out = hir.alias_select %{dst}[%{iv}] axis 0 : memref<4x8xf32> -> {ROW8}
    hir.launch ins(%x = %{iv}_in : {ROW8}) outs(%{iv}_out : {ROW8}) {{
      %y = fusion.{op} %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }}"""


def function(args: str, results: str, body: str, returned: str) -> str:
    return f"func.func @main({args}) -> ({results}) {{{PROLOGUE}{body}\n  func.return {returned} : {results}\n}}\n"


@dataclass(frozen=True)
class Program:
    name: str
    text: str
    loops_before: int
    loops_after: int


TWO_COPIES = Program(
    "two_copies",
    function(
        "%arg0: memref<4x8xf32>",
        "memref<4x8xf32>",
        "  %b1 = hir.allocate() : memref<4x8xf32>"
        + stream_loop("i", unary_rows("i", "set", "arg0", "b1"))
        + "  %b2 = hir.allocate() : memref<4x8xf32>"
        + stream_loop("j", unary_rows("j", "relu", "b1", "b2")),
        "%b2",
    ),
    2,
    1,
)

CHAIN_WITH_BROADCAST = Program(
    "chain_with_broadcast",
    function(
        "%arg0: memref<4x8xf32>, %w: memref<1x8xf32>",
        "memref<4x8xf32>, memref<4x8xf32>",
        "  %b1 = hir.allocate() : memref<4x8xf32>"
        + stream_loop("i", unary_rows("i", "neg", "arg0", "b1"))
        + "  %b2 = hir.allocate() : memref<4x8xf32>"
        + stream_loop(
            "j",
            f"""
    %a = hir.alias_select %b1[%j] axis 0 : memref<4x8xf32> -> {ROW8}
    %w0 = hir.alias_select %w[%c0] axis 0 : memref<1x8xf32> -> {ROW8}
    %b = hir.alias_select %b2[%j] axis 0 : memref<4x8xf32> -> {ROW8}
    hir.launch ins(%x = %a, %v = %w0 : {ROW8}, {ROW8}) outs(%b : {ROW8}) {{
      %y = fusion.add %x, %v : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }}""",
        )
        + "  %b3 = hir.allocate() : memref<4x8xf32>"
        + stream_loop("l", unary_rows("l", "exp", "b2", "b3")),
        "%b1, %b3",
    ),
    3,
    1,
)

IN_PLACE = Program(
    "in_place",
    function(
        "%arg0: memref<4x8xf32>",
        "memref<4x8xf32>",
        "  %b = hir.allocate() : memref<4x8xf32>"
        + stream_loop("i", unary_rows("i", "neg", "arg0", "b"))
        + stream_loop(
            "j",
            f"""
    %v = hir.alias_select %b[%j] axis 0 : memref<4x8xf32> -> {ROW8}
    hir.launch ins(%x = %v : {ROW8}) outs(%v : {ROW8}) {{
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }}""",
        ),
        "%b",
    ),
    2,
    1,
)

CHUNKS = Program(
    "chunks",
    function(
        "%arg0: memref<8x4xf32>",
        "memref<8x4xf32>",
        "  %b1 = hir.allocate() : memref<8x4xf32>"
        + stream_loop(
            "i",
            f"""
    %a = hir.alias_chunk %arg0[%i] axis 0 chunks 4 : memref<8x4xf32> -> {CHUNK}
    %b = hir.alias_chunk %b1[%i] axis 0 chunks 4 : memref<8x4xf32> -> {CHUNK}
    hir.launch ins(%x = %a : {CHUNK}) outs(%b : {CHUNK}) {{
      %y = fusion.tanh %x : tensor<2x4xf32> -> tensor<2x4xf32>
      hir.yield %y : tensor<2x4xf32>
    }}""",
        )
        + "  %b2 = hir.allocate() : memref<8x4xf32>"
        + stream_loop(
            "j",
            f"""
    %a2 = hir.alias_chunk %b1[%j] axis 0 chunks 4 : memref<8x4xf32> -> {CHUNK}
    %b2v = hir.alias_chunk %b2[%j] axis 0 chunks 4 : memref<8x4xf32> -> {CHUNK}
    hir.launch ins(%x = %a2, %z = %a2 : {CHUNK}, {CHUNK}) outs(%b2v : {CHUNK}) {{
      %y = fusion.mul %x, %z : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
      hir.yield %y : tensor<2x4xf32>
    }}""",
        ),
        "%b2",
    ),
    2,
    1,
)

MATMUL_THEN_RELU = Program(
    "matmul_then_relu",
    function(
        "%a: memref<4x8x16xf32>, %w: memref<16x32xf32>",
        "memref<4x8x32xf32>",
        "  %c = hir.allocate() : memref<4x8x32xf32>"
        + stream_loop(
            "i",
            f"""
    %ai = hir.alias_select %a[%i] axis 0 : memref<4x8x16xf32> -> {BLOCK16}
    %ci = hir.alias_select %c[%i] axis 0 : memref<4x8x32xf32> -> {BLOCK32}
    hir.launch ins(%x = %ai, %y = %w : {BLOCK16}, memref<16x32xf32>) outs(%ci : {BLOCK32}) {{
      %z = fusion.matmul %x, %y : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
      hir.yield %z : tensor<8x32xf32>
    }}""",
        )
        + "  %d = hir.allocate() : memref<4x8x32xf32>"
        + stream_loop(
            "j",
            f"""
    %cj = hir.alias_select %c[%j] axis 0 : memref<4x8x32xf32> -> {BLOCK32}
    %dj = hir.alias_select %d[%j] axis 0 : memref<4x8x32xf32> -> {BLOCK32}
    hir.launch ins(%x = %cj : {BLOCK32}) outs(%dj : {BLOCK32}) {{
      %z = fusion.relu %x : tensor<8x32xf32> -> tensor<8x32xf32>
      hir.yield %z : tensor<8x32xf32>
    }}""",
        ),
        "%d",
    ),
    2,
    1,
)

COLUMNS = Program(
    "columns",
    function(
        "%arg0: memref<4x4xf32>",
        "memref<4x4xf32>",
        "  %b1 = hir.allocate() : memref<4x4xf32>\n  %b2 = hir.allocate() : memref<4x4xf32>"
        + stream_loop(
            "i",
            f"""
    %a = hir.alias_select %arg0[%i] axis 1 : memref<4x4xf32> -> {COL4}
    %b = hir.alias_select %b1[%i] axis 1 : memref<4x4xf32> -> {COL4}
    hir.launch ins(%x = %a : {COL4}) outs(%b : {COL4}) {{
      %y = fusion.exp %x : tensor<4xf32> -> tensor<4xf32>
      hir.yield %y : tensor<4xf32>
    }}""",
        )
        + stream_loop(
            "j",
            f"""
    %a2 = hir.alias_select %b1[%j] axis 1 : memref<4x4xf32> -> {COL4}
    %b2v = hir.alias_select %b2[%j] axis 1 : memref<4x4xf32> -> {COL4}
    hir.launch ins(%x = %a2 : {COL4}) outs(%b2v : {COL4}) {{
      %y = fusion.neg %x : tensor<4xf32> -> tensor<4xf32>
      hir.yield %y : tensor<4xf32>
    }}""",
        ),
        "%b2",
    ),
    2,
    1,
)

# Not legal: the second loop reads all of what the first writes (a sum over the stream axis).
WHOLE_READ = Program(
    "whole_read",
    function(
        "%arg0: memref<4x8xf32>",
        "memref<4x8xf32>",
        "  %b1 = hir.allocate() : memref<4x8xf32>"
        + stream_loop("i", unary_rows("i", "exp", "arg0", "b1"))
        + "  %b2 = hir.allocate() : memref<4x8xf32>"
        + stream_loop(
            "j",
            f"""
    %b = hir.alias_select %b2[%j] axis 0 : memref<4x8xf32> -> {ROW8}
    hir.launch ins(%x = %b1 : memref<4x8xf32>) outs(%b : {ROW8}) {{
      %y = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }}""",
        ),
        "%b2",
    ),
    2,
    2,
)

# Not legal: the first loop reads all of %t, the second overwrites its rows.
WAR_HAZARD = Program(
    "war_hazard",
    function(
        "%arg0: memref<4x8xf32>",
        "memref<4x8xf32>, memref<4x8xf32>",
        """  %t = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%x = %arg0 : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
    %y = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  %b1 = hir.allocate() : memref<4x8xf32>"""
        + stream_loop(
            "i",
            f"""
    %b = hir.alias_select %b1[%i] axis 0 : memref<4x8xf32> -> {ROW8}
    hir.launch ins(%x = %t : memref<4x8xf32>) outs(%b : {ROW8}) {{
      %y = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }}""",
        )
        + stream_loop("j", unary_rows("j", "neg", "arg0", "t")),
        "%b1, %t",
    ),
    2,
    2,
)

# Not legal: iteration j of the second loop reads row j + 1 mod 4, written by another iteration.
NEXT_ROW = Program(
    "next_row",
    function(
        "%arg0: memref<4x8xf32>",
        "memref<4x8xf32>",
        "  %b1 = hir.allocate() : memref<4x8xf32>"
        + stream_loop("i", unary_rows("i", "exp", "arg0", "b1"))
        + "  %b2 = hir.allocate() : memref<4x8xf32>"
        + stream_loop(
            "j",
            f"""
    %j1 = arith.addi %j, %c1 : index
    %next = arith.remui %j1, %c4 : index
    %a = hir.alias_select %b1[%next] axis 0 : memref<4x8xf32> -> {ROW8}
    %b = hir.alias_select %b2[%j] axis 0 : memref<4x8xf32> -> {ROW8}
    hir.launch ins(%x = %a : {ROW8}) outs(%b : {ROW8}) {{
      %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }}""",
        ),
        "%b2",
    ),
    2,
    2,
)

# The first two loops fuse; a whole-buffer launch on the caller's stream keeps the third apart.
LAUNCH_BETWEEN = Program(
    "launch_between",
    function(
        "%arg0: memref<4x8xf32>",
        "memref<4x8xf32>",
        "  %b1 = hir.allocate() : memref<4x8xf32>"
        + stream_loop("i", unary_rows("i", "exp", "arg0", "b1"))
        + "  %b2 = hir.allocate() : memref<4x8xf32>"
        + stream_loop("j", unary_rows("j", "neg", "b1", "b2"))
        + """  %t = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%x = %b2 : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
    %y = fusion.tanh %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  %b3 = hir.allocate() : memref<4x8xf32>"""
        + stream_loop("l", unary_rows("l", "relu", "t", "b3")),
        "%b3",
    ),
    3,
    2,
)

PROGRAMS = [
    TWO_COPIES,
    CHAIN_WITH_BROADCAST,
    IN_PLACE,
    CHUNKS,
    MATMUL_THEN_RELU,
    COLUMNS,
    WHOLE_READ,
    WAR_HAZARD,
    NEXT_ROW,
    LAUNCH_BETWEEN,
]


# -- helpers --------------------------------------------------------------------------------------


def fused(text: str) -> ModuleOp:
    module = hir.run_pipeline(hir.parse(text), "hir-loop-fusion")
    module.verify()
    return module


def count_loops(module: ModuleOp) -> int:
    return sum(isinstance(op, hir_dialect.StreamForOp) for op in module.walk())


def function_named(module: ModuleOp, name: str) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == name)


def assert_same_results(before: ModuleOp, after: ModuleOp, entry: str, device: str) -> None:
    """The same outputs before and after, bit for bit, with each of NUM_STREAMS (compiled once)."""
    types = function_named(before, entry).function_type.inputs.data
    unfused, fused_program = hir.compile_program(before, entry), hir.compile_program(after, entry)
    for num_streams in NUM_STREAMS:
        inputs = random_inputs(types, seed=num_streams, device=device)
        expected = unfused([x.clone() for x in inputs], num_streams=num_streams)
        actual = fused_program([x.clone() for x in inputs], num_streams=num_streams)
        if device == "cuda":
            torch.cuda.synchronize()
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected):
            torch.testing.assert_close(got, want, rtol=0, atol=0, msg=lambda m, n=num_streams: f"{n} streams: {m}")


# -- the hand-written programs --------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_fusion_keeps_results(program: Program, device: str) -> None:
    assert_same_results(hir.parse(program.text), fused(program.text), "main", device)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_legal_fusion_removes_loops(program: Program) -> None:
    assert count_loops(hir.parse(program.text)) == program.loops_before
    assert count_loops(fused(program.text)) == program.loops_after


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_second_run_changes_nothing(program: Program) -> None:
    once = fused(program.text)
    twice = hir.run_pipeline(fused(program.text), "hir-loop-fusion")
    assert str(twice) == str(once)


# -- the FileCheck inputs, run ----------------------------------------------------------------------


def runnable_functions() -> list[tuple[str, str]]:
    """(file, function) of every lit input function the CPU runtime can run (no collectives, no test ops)."""
    cases: list[tuple[str, str]] = []
    for path in sorted(LIT_DIR.glob("*.mlir")):
        for op in hir.parse_file(path).walk():
            if not isinstance(op, func.FuncOp):
                continue
            runnable = not any(
                isinstance(inner, hir_dialect.CommunicationOp) or inner.name.startswith("test.") for inner in op.walk()
            )
            if runnable:
                cases.append((path.name, op.sym_name.data))
    return cases


@pytest.mark.parametrize(("file", "entry"), runnable_functions())
def test_lit_inputs_keep_results(file: str, entry: str) -> None:
    text = (LIT_DIR / file).read_text()
    assert_same_results(hir.parse(text), fused(text), entry, "cpu")
