"""
Adversarial inputs to the runtime and the Python API: index arithmetic at the edges of its range
computes what MLIR's does (64-bit wrap-around, unsigned ops on the bits of negative values), and
values of the wrong kind give an error that says what is wrong, never a wrong answer or an
exception from deep inside. (hir-opt's side: tests/corpus/malformed/, tests/lit/**/*invalid*.mlir.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import hir
from hir.diagnostics import LocatedError, UserError
from hir.tools.hir_run import main as hir_run_main

ROWS = """
func.func @main(%a: memref<4x8xf32>) -> memref<8xf32> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %m1 = arith.subi %c0, %c1 : index
  %big = arith.constant 9223372036854775807 : index
{body}
  %out = hir.allocate() : memref<8xf32>
  %v = hir.alias_select %a[%row] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  hir.launch ins(%arg = %v : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32>) {{
    %y = fusion.set %arg : tensor<8xf32> -> tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  }}
  func.return %out : memref<8xf32>
}}
"""
"""A program that copies row `%row` of its input, `%row` computed by `body` (index arithmetic)."""


@pytest.mark.parametrize(
    ("body", "row"),
    [
        # unsigned comparison: -1 is the largest unsigned index
        ("%lt = arith.cmpi ult, %m1, %c0 : index\n%row = arith.select %lt, %c3, %c0 : index", 0),
        ("%ge = arith.cmpi uge, %m1, %big : index\n%row = arith.select %ge, %c3, %c0 : index", 3),
        # the largest index + 1 wraps around to the smallest, which is negative
        (
            "%w = arith.addi %big, %c1 : index\n%n = arith.cmpi slt, %w, %c0 : index\n"
            "%row = arith.select %n, %c3, %c0 : index",
            3,
        ),
        # 2^62 * 4 = 2^64 wraps around to 0
        ("%h = arith.constant 4611686018427387904 : index\n%row = arith.muli %h, %c4 : index", 0),
        # divui and remui read -1 as 2^64 - 1, which 3 divides
        (
            "%q = arith.divui %m1, %c2 : index\n%p = arith.cmpi sgt, %q, %c0 : index\n"
            "%row = arith.select %p, %c3, %c0 : index",
            3,
        ),
        ("%row = arith.remui %m1, %c3 : index", 0),
        (
            "%x = arith.maxui %m1, %c2 : index\n%e = arith.cmpi eq, %x, %m1 : index\n"
            "%row = arith.select %e, %c3, %c0 : index",
            3,
        ),
        ("%x = arith.minui %m1, %c2 : index\n%row = arith.addi %x, %c0 : index", 2),
        # the signed ops keep their sign
        ("%q = arith.divsi %m1, %c2 : index\n%row = arith.addi %q, %c1 : index", 1),
        ("%q = arith.floordivsi %m1, %c2 : index\n%row = arith.addi %q, %c1 : index", 0),
        # index_cast to i32 keeps the low 32 bits (the largest index is -1 as an i32)
        (
            "%t = arith.index_cast %big : index to i32\n%b = arith.index_cast %t : i32 to index\n"
            "%n = arith.cmpi slt, %b, %c0 : index\n%row = arith.select %n, %c3, %c0 : index",
            3,
        ),
        # i32 arithmetic wraps at 32 bits
        (
            "%i = arith.constant 2147483647 : i32\n%one = arith.constant 1 : i32\n%s = arith.addi %i, %one : i32\n"
            "%zero = arith.constant 0 : i32\n%n = arith.cmpi slt, %s, %zero : i32\n%row = arith.select %n, %c3, %c0 : index",
            3,
        ),
        # i1 true is -1 as a signed value, also cast to an index
        (
            "%t = arith.cmpi ult, %c0, %c1 : index\n%i = arith.index_cast %t : i1 to index\n"
            "%row = arith.addi %i, %c1 : index",
            0,
        ),
        (
            "%t = arith.constant true\n%f = arith.constant false\n%n = arith.cmpi slt, %t, %f : i1\n"
            "%row = arith.select %n, %c3, %c0 : index",
            3,
        ),
    ],
)
def test_index_arithmetic_is_mlirs(body: str, row: int) -> None:
    text = ROWS.format(body="\n".join("  " + line for line in body.splitlines()))
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    (out,) = hir.execute(hir.parse(text, "rows.mlir"), [a])
    assert torch.equal(out, a[row])


OVERFLOWING_LOOP = """
func.func @main(%a: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 9223372036854775807 : index
  %n = arith.addi %big, %c1 : index
  %buf = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%x = %a : memref<4x8xf32>) outs(%buf : memref<4x8xf32>) {
    %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  hir.for %i = %c0 to %n step %c1 {
    %row = hir.alias_select %buf[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  }
  func.return %buf : memref<4x8xf32>
}
"""


def test_a_loop_bound_that_overflows_runs_no_iteration() -> None:
    """The bound wraps around to a negative index: as in MLIR, no iteration (not 2^63 of them)."""
    a = torch.randn(4, 8)
    (out,) = hir.execute(hir.parse(OVERFLOWING_LOOP, "loop.mlir"), [a])
    assert torch.equal(out, a)


SET_STREAM = Path(__file__).resolve().parent.parent / "examples" / "set_stream.hir.mlir"


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("tpu", "unknown device 'tpu': the runtime knows cpu, cuda"),
        ("cuda:x", "unknown device 'cuda:x'"),
        (True, "the device must be a torch.device or a name such as 'cpu' or 'cuda:0', got True"),
        (2.5, "the device must be a torch.device or a name such as 'cpu' or 'cuda:0', got 2.5"),
    ],
)
def test_a_device_that_is_none_is_a_user_error(device: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        hir.execute(hir.parse_file(SET_STREAM), [torch.randn(4, 8)], device=device)  # type: ignore[arg-type]


def test_cpu_with_an_index_is_the_cpu() -> None:
    """A CPU tensor is on `cpu` whatever index it was asked for on, so `cpu:0` runs CPU inputs."""
    x = torch.randn(4, 8)
    for device in ("cpu:0", torch.device("cpu", 0)):
        (y,) = hir.execute(hir.parse_file(SET_STREAM), [x], device=device)
        assert torch.equal(y, x)


def test_the_api_says_what_it_takes() -> None:
    text = SET_STREAM.read_text()
    with pytest.raises(TypeError, match=r"hir\.parse takes the text of a module"):
        hir.parse(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"hir\.run_pipeline takes a ModuleOp"):
        hir.run_pipeline(text, "cse")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a pass pipeline is a str"):
        hir.run_pipeline(hir.parse(text), ["cse"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("type_", "name", "expected"),
    [
        (
            "tensor<1099511627776x8xf32>",
            "a",
            "(tensor<1099511627776x8xf32>) cannot be allocated: ",
        ),  # larger than memory
        ("tensor<?x8xf32>", "rows", "has dynamic extents (tensor<?x8xf32>): pass the inputs with --inputs"),
    ],
)
def test_hir_run_names_the_argument_it_cannot_make_random_inputs_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], type_: str, name: str, expected: str
) -> None:
    path = tmp_path / "main.mlir"
    path.write_text(
        f"func.func @main(%{name}: {type_}) -> {type_} {{\n"
        f"  %0 = fusion.relu %{name} : {type_} -> {type_}\n"
        f"  func.return %0 : {type_}\n"
        "}\n"
    )
    with pytest.raises(SystemExit) as exit:
        hir_run_main([str(path)])
    assert exit.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:1: error: 'func.func' op argument %{name} (input #0) of @main {expected}"), err
    assert "Traceback" not in err
    assert "internal error" not in err


WRITES_ITS_INPUT = """
func.func @main(%a: memref<4x4xf32>, %b: memref<4x4xf32>) -> memref<4x4xf32> {
  hir.launch ins(%x = %b : memref<4x4xf32>) outs(%a : memref<4x4xf32>) {
    %t = fusion.permute %x perm = [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
    hir.yield %t : tensor<4x4xf32>
  }
  %out = hir.allocate() : memref<4x4xf32>
  hir.launch ins(%p = %a, %q = %b : memref<4x4xf32>, memref<4x4xf32>) outs(%out : memref<4x4xf32>) {
    %s = fusion.add %p, %q : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    hir.yield %s : tensor<4x4xf32>
  }
  func.return %out : memref<4x4xf32>
}
"""


def test_inputs_sharing_memory_with_one_the_program_writes_are_refused() -> None:
    """Aliased, the first launch's write would change what the second reads of the other input."""
    program = hir.compile_program(hir.parse(WRITES_ITS_INPUT, "writes.mlir"))
    assert program.written_inputs == (0,)
    b = torch.randn(4, 4)
    torch.testing.assert_close(program([torch.empty(4, 4), b.clone()])[0], b.t() + b)
    t = torch.randn(4, 4)
    with pytest.raises(LocatedError, match="input #0 and input #1 share memory, and the program writes input #0"):
        program([t, t])
    with pytest.raises(LocatedError, match="input #0 and input #1 share memory"):
        program([t.view(4, 4), t[:, :]])  # views of one tensor


def test_a_lowered_program_takes_inputs_that_require_grad() -> None:
    """Its writes into buffers are not recorded by autograd: the results are values."""
    text = "func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {\n" \
        "  %s = fusion.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>\n" \
        "  func.return %s : tensor<4xf32>\n}\n"  # fmt: skip
    program = hir.compile_program(hir.run_pipeline(hir.parse(text, "add.mlir"), "stream-lowering"))
    x, y = torch.randn(4, requires_grad=True), torch.randn(4)
    (result,) = program([x, y])
    torch.testing.assert_close(result, (x + y).detach())
    assert torch.is_grad_enabled()  # the caller's mode is back


def test_sparse_inputs_and_bad_arguments_are_named() -> None:
    program = hir.compile_program(hir.parse(WRITES_ITS_INPUT, "writes.mlir"))
    with pytest.raises(LocatedError, match=r"input #0 is a torch\.sparse_coo tensor; the program takes dense"):
        program([torch.randn(4, 4).to_sparse(), torch.randn(4, 4)])
    with pytest.raises(LocatedError, match="num_streams must be >= 1, got True"):
        program([torch.randn(4, 4), torch.randn(4, 4)], num_streams=True)
    for module in (None, "func.func @main() { func.return }"):
        with pytest.raises(TypeError, match="compile_program takes a parsed module"):
            hir.compile_program(module)  # type: ignore[arg-type]


def test_an_index_input_outside_64_bits_is_refused() -> None:
    text = "func.func @main(%n: index) -> index {\n  func.return %n : index\n}\n"
    program = hir.compile_program(hir.parse(text, "n.mlir"))
    assert program([5]) == [5]
    with pytest.raises(LocatedError, match=r"input #0 is 1180591620717411303424, outside the 64-bit range"):
        program([2**70])
