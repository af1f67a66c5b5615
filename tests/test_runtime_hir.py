"""
The runtime on hir programs: hand-written stream pipelines of the shape stream-lowering emits,
launches that write into views, the checks and errors of `execute`, the `hir-run` CLI, and on
CUDA the streams themselves (pool reuse, the caller's stream, and races a missing
`hir.synchronize` causes).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.diagnostics import LocatedError
from hir.runtime import streams as runtime_streams
from hir.runtime.device import streams_for
from hir.runtime.inputs import random_inputs
from hir.tools.hir_run import main as hir_run_main

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
SET_STREAM_HIR = EXAMPLES / "set_stream.hir.mlir"
SET_STREAM = EXAMPLES / "set_stream.mlir"

Shape = tuple[int, ...]
DTYPES = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "i32": torch.int32, "i64": torch.int64}

cuda = pytest.mark.cuda
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=[cuda, needs_cuda])]


# -- types and random data ------------------------------------------------------------------------


def dims(shape: Shape) -> str:
    return "".join(f"{d}x" for d in shape)


def memref(shape: Shape, elt: str = "f32") -> str:
    return f"memref<{dims(shape)}{elt}>"


def tensor(shape: Shape, elt: str = "f32") -> str:
    return f"tensor<{dims(shape)}{elt}>"


def view(shape: Shape, axis: int, elt: str = "f32") -> str:
    """The type of `hir.alias_select` of a contiguous `memref<shape>` at `axis`."""
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    kept = [d for i, d in enumerate(shape) if i != axis]
    kept_strides = [s for i, s in enumerate(strides) if i != axis]
    return f"memref<{dims(tuple(kept))}{elt}, strided<[{', '.join(map(str, kept_strides))}], offset: ?>>"


def random_tensor(shape: Shape, elt: str, generator: torch.Generator, device: str = "cpu") -> torch.Tensor:
    """Normal floats or integers in [-8, 8] without 0: never zeros."""
    dtype = DTYPES[elt]
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype=dtype, device=device)
    magnitude = torch.randint(1, 9, shape, generator=generator)
    sign = torch.where(torch.rand(shape, generator=generator) > 0.5, 1, -1)
    return (magnitude * sign).to(dtype=dtype, device=device)


def poison(shape: Shape, elt: str, device: str = "cpu") -> torch.Tensor:
    dtype = DTYPES[elt]
    return torch.full(shape, float("nan") if dtype.is_floating_point else -12345, dtype=dtype, device=device)


def is_poison(t: torch.Tensor) -> bool:
    return bool(t.isnan().all() if t.dtype.is_floating_point else (t == -12345).all())


def assert_matches(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    out, ref = out.cpu(), ref.cpu()
    if not ref.dtype.is_floating_point:
        assert torch.equal(out, ref)
        return
    assert not out.isnan().any(), "unwritten (NaN) elements"
    error = float((out.double() - ref.double()).norm() / ref.double().norm())
    # tf32 may be on for CUDA matmuls; otherwise float32 lands far under this.
    assert error < (1e-2 if ref.dtype == torch.bfloat16 else 1e-3), f"relative error {error:.3g}"


# -- stream programs (fork loop + main loop, as stream-lowering emits them) -----------------------


@dataclass
class Buffer:
    """A function argument or result buffer; `axis` is the stream axis it is sliced along, or None (whole)."""

    shape: Shape
    axis: int | None
    elt: str = "f32"

    @property
    def slice_type(self) -> str:
        return memref(self.shape, self.elt) if self.axis is None else view(self.shape, self.axis, self.elt)

    @property
    def slice_shape(self) -> Shape:
        return self.shape if self.axis is None else tuple(d for i, d in enumerate(self.shape) if i != self.axis)


def stream_program(
    ins: Sequence[Buffer],
    outs: Sequence[Buffer],
    body: str,
    extent: int,
    *,
    fork_sync: bool = True,
    join_sync: bool = True,
) -> str:
    """
    `@main(ins) -> outs`: a fork loop (each pool stream waits for the caller's), then a main loop
    over `extent` iterations that selects iteration i's slices, launches `body` on pool stream
    `i mod num_streams` and has the caller's stream wait for it. `body` is the launch region: its
    arguments are %x0, %x1, ... (one per input) and it ends with `hir.yield` of one value per output.
    """
    args = ", ".join(f"%arg{j}: {memref(b.shape, b.elt)}" for j, b in enumerate(ins))
    results = ", ".join(memref(b.shape, b.elt) for b in outs)
    lines = [f"func.func @main({args}) -> ({results}) {{"]
    lines += [
        "  %c0 = arith.constant 0 : index",
        "  %c1 = arith.constant 1 : index",
        f"  %cn = arith.constant {extent} : index",
    ]
    lines += [f"  %buf{j} = hir.allocate() : {memref(b.shape, b.elt)}" for j, b in enumerate(outs)]
    lines += ["  %main = hir.get_current_stream", "  %n = hir.num_streams"]
    lines += [
        "  hir.for %i = %c0 to %cn step %c1 {",
        "    %k = arith.remui %i, %n : index",
        "    %s = hir.stream %k",
        "    hir.set_current_stream %s",
        *(["    hir.synchronize %main"] if fork_sync else []),
        "  }",
    ]
    lines += [
        "  hir.for %i = %c0 to %cn step %c1 {",
        "    %k = arith.remui %i, %n : index",
        "    %s = hir.stream %k",
        "    hir.set_current_stream %s",
    ]
    in_names = []
    for j, b in enumerate(ins):
        if b.axis is None:
            in_names.append(f"%arg{j}")
        else:
            lines.append(
                f"    %in{j} = hir.alias_select %arg{j}[%i] axis {b.axis} : {memref(b.shape, b.elt)} -> {b.slice_type}"
            )
            in_names.append(f"%in{j}")
    for j, b in enumerate(outs):
        assert b.axis is not None, "outputs are sliced"
        lines.append(
            f"    %out{j} = hir.alias_select %buf{j}[%i] axis {b.axis} : {memref(b.shape, b.elt)} -> {b.slice_type}"
        )
    pairs = ", ".join(f"%x{j} = {name}" for j, name in enumerate(in_names))
    in_types = ", ".join(b.slice_type for b in ins)
    out_names = ", ".join(f"%out{j}" for j in range(len(outs)))
    out_types = ", ".join(b.slice_type for b in outs)
    lines.append(f"    hir.launch ins({pairs} : {in_types}) outs({out_names} : {out_types}) {{")
    lines += [f"      {line.strip()}" for line in body.strip().splitlines()]
    lines.append("    }")
    lines.append("    hir.set_current_stream %main")
    if join_sync:
        lines.append("    hir.synchronize %s")
    lines.append("  }")
    bufs = ", ".join(f"%buf{j}" for j in range(len(outs)))
    lines += [f"  func.return {bufs} : {results}", "}"]
    return "\n".join(lines) + "\n"


@dataclass
class StreamCase:
    ins: list[Buffer]
    outs: list[Buffer]
    body: str
    extent: int
    reference: Callable[..., list[torch.Tensor]]

    def text(self, **flags: bool) -> str:
        return stream_program(self.ins, self.outs, self.body, self.extent, **flags)

    def inputs(self, seed: int = 0, device: str = "cpu") -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        return [random_tensor(b.shape, b.elt, generator, device) for b in self.ins]


STREAM_CASES: dict[str, StreamCase] = {
    # fusion.set streamed over axis 0: the program of examples/set_stream.hir.mlir, 6 chunks.
    "copy": StreamCase(
        [Buffer((6, 8), 0)],
        [Buffer((6, 8), 0)],
        "%y = fusion.set %x0 : tensor<8xf32> -> tensor<8xf32>\nhir.yield %y : tensor<8xf32>",
        6,
        lambda x: [x.clone()],
    ),
    # Two sliced inputs; `sub` is not symmetric, so swapped operands would show.
    "binary": StreamCase(
        [Buffer((5, 7), 0, "i64"), Buffer((5, 7), 0, "i64")],
        [Buffer((5, 7), 0, "i64")],
        "%y = fusion.sub %x0, %x1 : tensor<7xi64>, tensor<7xi64> -> tensor<7xi64>\nhir.yield %y : tensor<7xi64>",
        5,
        lambda a, b: [a - b],
    ),
    # The stream axis is axis 1 of 3: the slices are strided views.
    "inner_axis": StreamCase(
        [Buffer((3, 6, 5), 1), Buffer((3, 6, 5), 1)],
        [Buffer((3, 6, 5), 1)],
        "%y = fusion.mul %x0, %x1 : tensor<3x5xf32>, tensor<3x5xf32> -> tensor<3x5xf32>\n"
        "hir.yield %y : tensor<3x5xf32>",
        6,
        lambda a, b: [a * b],
    ),
    # The innermost axis: every slice is a column (stride 7).
    "innermost_axis": StreamCase(
        [Buffer((4, 7), 1)],
        [Buffer((4, 7), 1)],
        "%y = fusion.relu %x0 : tensor<4xf32> -> tensor<4xf32>\nhir.yield %y : tensor<4xf32>",
        7,
        lambda x: [torch.relu(x)],
    ),
    # The input's stream axis is 0, the output's is 1: a transpose done chunk by chunk.
    "transpose": StreamCase(
        [Buffer((5, 4), 0)],
        [Buffer((4, 5), 1)],
        "%y = fusion.neg %x0 : tensor<4xf32> -> tensor<4xf32>\nhir.yield %y : tensor<4xf32>",
        5,
        lambda x: [-x.t()],
    ),
    # A segment of several ops with a whole (unsliced) input and two outputs, one of them 0-d slices.
    "segment": StreamCase(
        [Buffer((4, 8), 0), Buffer((4, 8), 0), Buffer((8,), None)],
        [Buffer((4, 8), 0), Buffer((4,), 0)],
        """
        %m = fusion.mul %x0, %x1 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
        %a = fusion.add %m, %x2 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
        %t = fusion.tanh %a : tensor<8xf32> -> tensor<8xf32>
        %r = fusion.sum %t dims = [0] : tensor<8xf32> -> tensor<f32>
        hir.yield %t, %r : tensor<8xf32>, tensor<f32>
        """,
        4,
        lambda x, y, b: [torch.tanh(x * y + b), torch.tanh(x * y + b).sum(1)],
    ),
    # A matmul streamed over M (4 chunks of 3 rows); the weight is passed whole.
    "matmul": StreamCase(
        [Buffer((4, 3, 16), 0), Buffer((16, 5), None)],
        [Buffer((4, 3, 5), 0)],
        "%y = fusion.matmul %x0, %x1 : tensor<3x16xf32>, tensor<16x5xf32> -> tensor<3x5xf32>\n"
        "hir.yield %y : tensor<3x5xf32>",
        4,
        lambda a, w: [torch.matmul(a, w)],
    ),
    # A linear layer streamed over rows, weight and bias whole.
    "linear": StreamCase(
        [Buffer((6, 8), 0), Buffer((5, 8), None), Buffer((5,), None)],
        [Buffer((6, 5), 0)],
        "%y = fusion.linear %x0, %x1, %x2 : tensor<8xf32>, tensor<5x8xf32>, tensor<5xf32> -> tensor<5xf32>\n"
        "hir.yield %y : tensor<5xf32>",
        6,
        lambda x, w, b: [F.linear(x, w, b)],
    ),
}


def run_stream_case(name: str, num_streams: int, device: str, seed: int = 0) -> None:
    case = STREAM_CASES[name]
    module = hir.parse(case.text(), f"{name}.hir.mlir")
    inputs = case.inputs(seed, device)
    saved = [t.clone() for t in inputs]
    outputs = hir.execute(module, inputs, num_streams=num_streams)
    if device == "cuda":
        torch.cuda.synchronize()
    expected = case.reference(*saved)
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected):
        assert out.device.type == device
        assert_matches(out, ref)
    for before, after in zip(saved, inputs):
        assert torch.equal(before, after), "an input was modified"


@pytest.mark.filterwarnings("error")  # e.g. torch's "an output with one or more elements was resized"
@pytest.mark.parametrize("num_streams", range(1, 9))
@pytest.mark.parametrize("name", sorted(STREAM_CASES))
def test_stream_program(name: str, num_streams: int) -> None:
    run_stream_case(name, num_streams, "cpu")


def test_generated_copy_program_is_the_example() -> None:
    """The helper writes what examples/set_stream.hir.mlir holds, up to names and the extent."""
    generated = stream_program(
        [Buffer((4, 8), 0)],
        [Buffer((4, 8), 0)],
        "%y = fusion.set %x0 : tensor<8xf32> -> tensor<8xf32>\nhir.yield %y : tensor<8xf32>",
        4,
    )

    def op_names(text: str) -> list[str]:
        return re.findall(r"\b(?:hir|fusion|arith|func)\.[a-z_]+", text)

    assert op_names(generated) == op_names(SET_STREAM_HIR.read_text())


def test_compiled_stream_program_reruns_with_other_stream_counts() -> None:
    case = STREAM_CASES["segment"]
    program = hir.compile_program(hir.parse(case.text()))
    for seed, num_streams in enumerate([3, 1, 8, 2]):
        inputs = case.inputs(seed)
        for out, ref in zip(program(inputs, num_streams=num_streams), case.reference(*inputs)):
            assert_matches(out, ref)


# -- a single-op launch writes into the view it is given ------------------------------------------


@dataclass
class LaunchCase:
    op: str
    operands: list[tuple[Shape, str]]
    result: tuple[Shape, str]
    reference: Callable[..., torch.Tensor]
    attrs: str = ""


LAUNCH_CASES: dict[str, LaunchCase] = {
    "set": LaunchCase("set", [((3, 4), "f32")], ((3, 4), "f32"), lambda x: x),
    "set_i64": LaunchCase("set", [((3, 4), "i64")], ((3, 4), "i64"), lambda x: x),
    "add": LaunchCase("add", [((3, 4), "f32")] * 2, ((3, 4), "f32"), torch.add),
    "sub": LaunchCase("sub", [((3, 4), "f64")] * 2, ((3, 4), "f64"), torch.sub),
    "mul": LaunchCase("mul", [((3, 4), "i32")] * 2, ((3, 4), "i32"), torch.mul),
    "div": LaunchCase("div", [((3, 4), "bf16")] * 2, ((3, 4), "bf16"), torch.div),
    "maximum": LaunchCase("maximum", [((3, 4), "f32")] * 2, ((3, 4), "f32"), torch.maximum),
    "neg": LaunchCase("neg", [((3, 4), "f32")], ((3, 4), "f32"), torch.neg),
    "abs": LaunchCase("abs", [((3, 4), "i64")], ((3, 4), "i64"), torch.abs),
    "exp": LaunchCase("exp", [((3, 4), "f32")], ((3, 4), "f32"), torch.exp),
    "relu": LaunchCase("relu", [((3, 4), "f32")], ((3, 4), "f32"), torch.relu),
    "relu_i32": LaunchCase("relu", [((3, 4), "i32")], ((3, 4), "i32"), torch.relu),
    "tanh": LaunchCase("tanh", [((3, 4), "f64")], ((3, 4), "f64"), torch.tanh),
    "cast_f32_f64": LaunchCase("cast", [((3, 4), "f32")], ((3, 4), "f64"), lambda x: x.double()),
    "cast_f32_bf16": LaunchCase("cast", [((3, 4), "f32")], ((3, 4), "bf16"), lambda x: x.bfloat16()),
    "cast_i64_f32": LaunchCase("cast", [((3, 4), "i64")], ((3, 4), "f32"), lambda x: x.float()),
    "permute": LaunchCase("permute", [((3, 4), "f32")], ((4, 3), "f32"), lambda x: x.t(), "perm = [1, 0]"),
    "permute_3d": LaunchCase(
        "permute", [((2, 3, 4), "f32")], ((4, 2, 3), "f32"), lambda x: x.permute(2, 0, 1), "perm = [2, 0, 1]"
    ),
    "broadcast": LaunchCase("broadcast", [((4,), "f32")], ((3, 4), "f32"), lambda x: x.expand(3, 4), "dims = [0]"),
    "broadcast_inner": LaunchCase(
        "broadcast", [((3,), "f32")], ((3, 4), "f32"), lambda x: x[:, None].expand(3, 4), "dims = [1]"
    ),
    "sum": LaunchCase("sum", [((3, 4), "f32")], ((3,), "f32"), lambda x: x.sum(1), "dims = [1]"),
    "sum_i32": LaunchCase("sum", [((3, 4), "i32")], ((4,), "i32"), lambda x: x.sum(0).int(), "dims = [0]"),
    "sum_all": LaunchCase("sum", [((3, 4), "f32")], ((), "f32"), lambda x: x.sum(), "dims = [0, 1]"),
    "max": LaunchCase("max", [((3, 4), "f32")], ((4,), "f32"), lambda x: x.amax(0), "dims = [0]"),
    "min": LaunchCase("min", [((2, 3, 4), "f64")], ((3,), "f64"), lambda x: x.amin((0, 2)), "dims = [0, 2]"),
    "matmul": LaunchCase("matmul", [((3, 6), "f32"), ((6, 4), "f32")], ((3, 4), "f32"), torch.matmul),
    "matmul_vec": LaunchCase("matmul", [((6,), "f32"), ((6, 4), "f32")], ((4,), "f32"), torch.matmul),
    "matmul_batched": LaunchCase("matmul", [((2, 3, 6), "f32"), ((6, 4), "f32")], ((2, 3, 4), "f32"), torch.matmul),
    "linear": LaunchCase("linear", [((3, 6), "f32"), ((5, 6), "f32")], ((3, 5), "f32"), F.linear),
    "linear_bias": LaunchCase("linear", [((3, 6), "f32"), ((5, 6), "f32"), ((5,), "f32")], ((3, 5), "f32"), F.linear),
    "linear_bias_3d": LaunchCase(
        "linear", [((2, 3, 6), "f32"), ((5, 6), "f32"), ((5,), "f32")], ((2, 3, 5), "f32"), F.linear
    ),
    "linear_vector_input": LaunchCase(
        "linear", [((6,), "f32"), ((5, 6), "f32"), ((5,), "f32")], ((5,), "f32"), F.linear
    ),
    "linear_vector_weight": LaunchCase(
        "linear", [((3, 6), "f32"), ((6,), "f32"), ((), "f32")], ((3,), "f32"), lambda x, w, b: x @ w + b
    ),
}


def launch_into_view_program(case: LaunchCase, axis: int) -> tuple[str, Shape]:
    """
    `%buf` has one axis more than the op's result, of extent 3, at `axis`; the launch writes
    `alias_select %buf[1] axis axis`. Returns the text and the buffer's shape.
    """
    shape, elt = case.result
    buf_shape = (*shape[:axis], 3, *shape[axis:])
    args = ", ".join(f"%a{j}: {memref(s, e)}" for j, (s, e) in enumerate(case.operands))
    pairs = ", ".join(f"%x{j} = %a{j}" for j in range(len(case.operands)))
    in_types = ", ".join(memref(s, e) for s, e in case.operands)
    names = ", ".join(f"%x{j}" for j in range(len(case.operands)))
    tensor_types = ", ".join(tensor(s, e) for s, e in case.operands)
    attrs = f" {case.attrs}" if case.attrs else ""
    text = f"""
    func.func @main({args}) -> {memref(buf_shape, elt)} {{
      %c1 = arith.constant 1 : index
      %buf = hir.allocate() : {memref(buf_shape, elt)}
      %v = hir.alias_select %buf[%c1] axis {axis} : {memref(buf_shape, elt)} -> {view(buf_shape, axis, elt)}
      hir.launch ins({pairs} : {in_types}) outs(%v : {view(buf_shape, axis, elt)}) {{
        %r = fusion.{case.op} {names}{attrs} : {tensor_types} -> {tensor(shape, elt)}
        hir.yield %r : {tensor(shape, elt)}
      }}
      func.return %buf : {memref(buf_shape, elt)}
    }}
    """
    return text, buf_shape


@pytest.mark.filterwarnings("error")  # e.g. torch's "an output with one or more elements was resized"
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("where", ["outer", "inner"])
@pytest.mark.parametrize("name", sorted(LAUNCH_CASES))
def test_single_op_launch_writes_into_the_view(name: str, where: str, device: str) -> None:
    case = LAUNCH_CASES[name]
    if device == "cuda" and case.op in ("matmul", "linear") and case.result[1] != "f32":
        pytest.skip("no integer matmul on CUDA")
    axis = 0 if where == "outer" else len(case.result[0])
    text, buf_shape = launch_into_view_program(case, axis)
    generator = torch.Generator().manual_seed(11)
    inputs = [random_tensor(s, e, generator, device) for s, e in case.operands]
    buf = poison(buf_shape, case.result[1], device)
    pointer = buf.data_ptr()
    (out,) = hir.execute(hir.parse(text, f"{name}.hir.mlir"), inputs, outputs=[buf])
    assert out is buf
    assert buf.data_ptr() == pointer
    expected = case.reference(*inputs).to(buf.dtype)
    assert_matches(buf.select(axis, 1), expected)
    for untouched in (0, 2):
        assert is_poison(buf.select(axis, untouched)), "the launch wrote outside its view"


def test_segment_launch_writes_into_the_view() -> None:
    """A multi-op launch copies each yielded value into its (strided) destination once."""
    case = STREAM_CASES["segment"]
    inputs = case.inputs(seed=2)
    bufs = [poison(b.shape, b.elt) for b in case.outs]
    pointers = [b.data_ptr() for b in bufs]
    outputs = hir.execute(hir.parse(case.text()), inputs, outputs=bufs, num_streams=2)
    for out, buf, pointer, ref in zip(outputs, bufs, pointers, case.reference(*inputs)):
        assert out is buf
        assert buf.data_ptr() == pointer
        assert_matches(buf, ref)


VIEWS_INTO_MATMUL = """
func.func @main(%g: memref<2x4x8xf32>, %a: memref<8x16xf32>) -> memref<3x8x16xf32> {
  %c1 = arith.constant 1 : index
  %buf = hir.allocate() : memref<3x8x16xf32>
  %v = hir.alias_select %buf[%c1] axis 0 : memref<3x8x16xf32> -> memref<8x16xf32, strided<[16, 1], offset: ?>>
  hir.launch ins(%g_1 = %g, %a_1 = %a : memref<2x4x8xf32>, memref<8x16xf32>) outs(%v : memref<8x16xf32, strided<[16, 1], offset: ?>>) {
    %r = fusion.reshape %g_1 : tensor<2x4x8xf32> -> tensor<8x8xf32>
    %t = fusion.permute %r perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
    %mm = fusion.matmul %t, %a_1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    hir.yield %mm : tensor<8x16xf32>
  }
  func.return %buf : memref<3x8x16xf32>
}
"""


@pytest.mark.filterwarnings("error")
def test_views_and_a_gemm_write_the_destination_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    A launch of views and the GEMM that reads them (fusion-segment merges them) computes the GEMM
    into its destination view through the out= form: no temporary copied in, nothing outside the
    view written; the result is the reference on strided operands.
    """
    g, a = torch.randn(2, 4, 8), torch.randn(8, 16)
    buf = poison((3, 8, 16), "f32")
    copies: list[torch.Tensor] = []
    original_copy = torch.Tensor.copy_

    def counted_copy(self: torch.Tensor, source: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        copies.append(self)
        return original_copy(self, source, non_blocking)

    program = hir.compile_program(hir.parse(VIEWS_INTO_MATMUL, "views.hir.mlir"))
    monkeypatch.setattr(torch.Tensor, "copy_", counted_copy)
    (out,) = program([g, a], outputs=[buf])
    monkeypatch.undo()
    assert out is buf
    assert copies == []
    assert_matches(buf[1], g.reshape(8, 8).t() @ a)
    assert is_poison(buf[0])
    assert is_poison(buf[2])


# -- execute: outputs, checks and errors ----------------------------------------------------------


def test_preallocated_output_is_written_in_place_and_returned() -> None:
    module = hir.parse_file(SET_STREAM_HIR)
    x = torch.randn(4, 8)
    buf = torch.full((4, 8), float("nan"))
    (out,) = hir.execute(module, [x], outputs=[buf], num_streams=3)
    assert out is buf
    assert torch.equal(buf, x)
    # None leaves that output to the program.
    (fresh,) = hir.execute(module, [x], outputs=[None])
    assert fresh is not buf
    assert torch.equal(fresh, x)


def test_preallocated_output_of_a_non_contiguous_view() -> None:
    """A strided view of the caller's memory is written in place too."""
    module = hir.parse_file(SET_STREAM_HIR)
    x = torch.randn(4, 8)
    storage = torch.full((8, 4), float("nan"))
    (out,) = hir.execute(module, [x], outputs=[storage.t()])
    assert out.data_ptr() == storage.data_ptr()
    assert torch.equal(storage.t(), x)


def located_error(run: Callable[[], object]) -> str:
    with pytest.raises(LocatedError) as info:
        run()
    return str(info.value)


@pytest.mark.parametrize(
    "make_output",
    [lambda x: x, lambda x: x[:], lambda x: x.view(8, 4)],
    ids=["same", "slice", "reshaped"],
)
def test_inputs_cannot_be_aliased(make_output: Callable[[torch.Tensor], torch.Tensor]) -> None:
    module = hir.parse_file(SET_STREAM_HIR)
    x = torch.randn(4, 8)
    message = located_error(lambda: hir.execute(module, [x], outputs=[make_output(x).view(4, 8)]))
    assert "inputs cannot be aliased" in message
    assert "set_stream.hir.mlir:2:1: error:" in message


TWO_OUTPUTS = """func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = fusion.add %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %b = fusion.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}"""


def test_preallocated_outputs_cannot_overlap_each_other() -> None:
    """Two outputs in one storage: overlapping rows are refused, disjoint ones are written in place."""
    lowered = hir.run_pipeline(hir.parse(TWO_OUTPUTS), "stream-lowering")
    x, storage = torch.randn(4, 8), torch.full((8, 8), float("nan"))
    message = located_error(lambda: hir.execute(lowered, [x], outputs=[storage[:4], storage[2:6]]))
    assert "preallocated outputs #0 and #1 overlap: each needs memory of its own" in message
    a, b = hir.execute(lowered, [x], outputs=[storage[:4], storage[4:]])
    assert a.data_ptr() == storage.data_ptr()
    assert torch.equal(storage[:4], x + x)
    assert torch.equal(b, x * x)


def test_disjoint_parts_of_one_storage_are_not_aliased() -> None:
    module = hir.parse_file(SET_STREAM_HIR)
    storage = torch.randn(8, 8)
    x, buf = storage[:4], storage[4:]
    expected = x.clone()
    (out,) = hir.execute(module, [x], outputs=[buf])
    assert out is buf
    assert torch.equal(storage[4:], expected)


@pytest.mark.parametrize(
    ("inputs", "outputs", "message"),
    [
        ([], None, "takes 1 inputs, got 0"),
        ([torch.randn(4, 8), torch.randn(4, 8)], None, "takes 1 inputs, got 2"),
        ([torch.randn(4, 9)], None, "input #0 has shape 4x9, expected 4x8"),
        ([torch.randn(4)], None, "input #0 has shape 4, expected 4x8"),
        ([torch.randn(4, 8, dtype=torch.float64)], None, "input #0 has dtype torch.float64, expected torch.float32"),
        ([torch.randint(0, 3, (4, 8))], None, "input #0 has dtype torch.int64"),
        ([3], None, "input #0 must be a torch.Tensor"),
        ([torch.randn(4, 8)], [torch.randn(4, 8), torch.randn(4, 8)], "has 1 outputs, 2 were preallocated"),
        ([torch.randn(4, 8)], [torch.randn(8, 4)], "preallocated output #0 has shape 8x4, expected 4x8"),
        ([torch.randn(4, 8)], [torch.randn(4, 8).half()], "preallocated output #0 has dtype torch.float16"),
    ],
)
def test_wrong_inputs_and_outputs(inputs: list, outputs: list | None, message: str) -> None:
    module = hir.parse_file(SET_STREAM_HIR)
    error = located_error(lambda: hir.execute(module, inputs, outputs=outputs))
    assert message in error
    assert error.startswith(f"{SET_STREAM_HIR}:2:1: error: 'func.func' op ")


def test_wrong_device() -> None:
    module = hir.parse_file(SET_STREAM_HIR)
    meta = torch.empty(4, 8, device="meta")
    error = located_error(lambda: hir.execute(module, [meta], device="cpu"))
    assert "input #0 is on meta, but the program runs on cpu" in error
    error = located_error(lambda: hir.execute(module, [torch.randn(4, 8)], outputs=[meta]))
    assert "preallocated output #0 is on meta, but the program runs on cpu" in error


def test_wrong_device_between_inputs() -> None:
    text = STREAM_CASES["binary"].text()
    a, b = torch.randint(1, 5, (5, 7)), torch.empty(5, 7, dtype=torch.int64, device="meta")
    error = located_error(lambda: hir.execute(hir.parse(text), [a, b]))
    assert "input #1 is on meta, but the program runs on cpu" in error


def test_bad_num_streams() -> None:
    error = located_error(lambda: hir.execute(hir.parse_file(SET_STREAM_HIR), [torch.randn(4, 8)], num_streams=0))
    assert "num_streams must be >= 1, got 0" in error


def test_unknown_entry_function() -> None:
    error = located_error(lambda: hir.execute(hir.parse_file(SET_STREAM_HIR), [torch.randn(4, 8)], entry="nope"))
    assert "no function @nope to run (functions: @main)" in error


def test_entry_function_other_than_main() -> None:
    text = SET_STREAM_HIR.read_text() + FUSION_DOUBLE
    x = torch.randn(4, 8)
    (out,) = hir.execute(hir.parse(text), [x], entry="double")
    assert torch.equal(out, x + x)


FUSION_DOUBLE = """
func.func @double(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = fusion.add %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""


def test_op_the_runtime_cannot_execute() -> None:
    text = """func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %m = memref.alloc() : memref<4xf32>
  func.return %x : memref<4xf32>
}
"""
    module = hir.parse(text, "unsupported.mlir")
    error = located_error(lambda: hir.compile_program(module))
    assert error == "unsupported.mlir:2:3: error: 'memref.alloc' op the runtime cannot execute this op"
    # execute compiles first: nothing runs.
    assert located_error(lambda: hir.execute(module, [torch.randn(4)])) == error


def line_col(text: str, needle: str) -> tuple[int, int]:
    """1-based position of the first non-blank character of the line holding `needle`."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number, len(line) - len(line.lstrip()) + 1
    raise AssertionError(needle)


def test_run_time_failure_inside_a_loop_names_the_op() -> None:
    """The main loop runs one iteration too many: alias_select fails at index 4 of 4."""
    text = stream_program(
        [Buffer((4, 8), 0)],
        [Buffer((4, 8), 0)],
        "%y = fusion.set %x0 : tensor<8xf32> -> tensor<8xf32>\nhir.yield %y : tensor<8xf32>",
        4,
    ).replace("%cn = arith.constant 4", "%cn = arith.constant 5")
    line, col = line_col(text, "%in0 = hir.alias_select")
    error = located_error(lambda: hir.execute(hir.parse(text, "overrun.hir.mlir"), [torch.randn(4, 8)]))
    assert error.startswith(f"overrun.hir.mlir:{line}:{col}: error: 'hir.alias_select' op failed at run time: ")
    assert "index 4 is out of bounds" in error or "out of range" in error


def test_run_time_failure_inside_a_launch_segment_names_the_fusion_op() -> None:
    """Dynamic extents that the IR cannot check: the add of the segment fails in torch."""
    text = """func.func @main(%a: memref<?xf32>, %b: memref<?xf32>) -> memref<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %buf = hir.allocate() : memref<f32>
  hir.for %i = %c0 to %c2 step %c1 {
    hir.launch ins(%x = %a, %y = %b : memref<?xf32>, memref<?xf32>) outs(%buf : memref<f32>) {
      %s = fusion.add %x, %y : tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>
      %m = fusion.sum %s dims = [0] : tensor<?xf32> -> tensor<f32>
      hir.yield %m : tensor<f32>
    }
  }
  func.return %buf : memref<f32>
}
"""
    program = hir.compile_program(hir.parse(text, "segment.hir.mlir"))
    a, b = torch.randn(4), torch.randn(4)
    (out,) = program([a, b])
    assert_matches(out, (a + b).sum())
    error = located_error(lambda: program([a, torch.randn(5)]))
    assert error.startswith("segment.hir.mlir:8:7: error: 'fusion.add' op failed at run time: ")
    assert "size of tensor a (4) must match the size of tensor b (5)" in error


def test_value_never_produced() -> None:
    """The second iteration uses the buffer the first released (a use before the release in the text, so no verifier error)."""
    text = """func.func @main(%x: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %buf = hir.allocate() : memref<4x8xf32>
  hir.for %i = %c0 to %c2 step %c1 {
    %v = hir.alias_select %buf[%c0] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.deallocate %buf : memref<4x8xf32>
  }
  func.return %x : memref<4x8xf32>
}
"""
    error = located_error(lambda: hir.execute(hir.parse(text, "dealloc.mlir"), [torch.randn(4, 8)]))
    assert error == "dealloc.mlir:7:5: error: 'hir.alias_select' op operand #0 (%buf) was never produced"


def test_communication_without_devices() -> None:
    text = """func.func @main(%x: memref<4xf32>) -> memref<8xf32> {
  %buf = hir.allocate() : memref<8xf32>
  %w = hir.allgather %x into %buf axis 0 mesh = [0, 1] : memref<4xf32>, memref<8xf32>
  hir.wait %w
  func.return %buf : memref<8xf32>
}
"""
    out = torch.full((8,), 7.0)
    error = located_error(lambda: hir.execute(hir.parse(text, "ag.mlir"), [torch.randn(4)], outputs=[out]))
    # Refused before the run, at the op that needs the devices: nothing was written.
    assert error.startswith("ag.mlir:3:3: error: 'hir.allgather' op needs the devices of mesh [0, 1]: ")
    assert torch.equal(out, torch.full((8,), 7.0))


def test_cpu_program_with_stream_ops_runs_in_order() -> None:
    """On CPU streams are no-ops: the caller has no stream to restore, the program just runs."""
    x = torch.randn(4, 8)
    for num_streams in (1, 4):
        (out,) = hir.execute(hir.parse_file(SET_STREAM_HIR), [x], num_streams=num_streams)
        assert torch.equal(out, x)
    # and after an error the next run is unaffected
    with pytest.raises(LocatedError):
        hir.execute(hir.parse_file(SET_STREAM_HIR), [torch.randn(4, 9)])
    (out,) = hir.execute(hir.parse_file(SET_STREAM_HIR), [x])
    assert torch.equal(out, x)


# -- hir-run --------------------------------------------------------------------------------------


def hir_run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`hir-run ARGS` in a process of its own (about 1.5 s: torch's import)."""
    command = [sys.executable, "-m", "hir.tools.hir_run", *map(str, args)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


def hir_run_here(capsys: pytest.CaptureFixture[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The same through `hir.tools.hir_run.main` in this process: exit status, stdout, stderr."""
    code = 0
    try:
        hir_run_main([str(a) for a in args])
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def assert_clean_failure(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1, result
    assert "error:" in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_cli_inputs_outputs_round_trip(tmp_path: Path) -> None:
    case = STREAM_CASES["segment"]
    inputs = case.inputs(seed=5)
    (tmp_path / "prog.hir.mlir").write_text(case.text())
    torch.save(inputs, tmp_path / "in.pt")
    result = hir_run(
        tmp_path / "prog.hir.mlir", "--inputs", tmp_path / "in.pt", "--outputs", tmp_path / "out.pt",
        "--num-streams", "3", "--device", "cpu",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    outputs = torch.load(tmp_path / "out.pt")
    assert isinstance(outputs, list)
    assert len(outputs) == 2
    for out, ref in zip(outputs, case.reference(*inputs)):
        assert_matches(out, ref)


def test_cli_random_inputs_are_seeded_and_verbose_timings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = hir_run_here(capsys, SET_STREAM_HIR, "--seed", "7", "--outputs", tmp_path / "a.pt", "-v", "--device", "cpu")
    b = hir_run_here(capsys, SET_STREAM_HIR, "--seed", "7", "--outputs", tmp_path / "b.pt", "--num-streams", "2")
    c = hir_run_here(capsys, SET_STREAM_HIR, "--seed", "8", "--outputs", tmp_path / "c.pt")
    for r in (a, b, c):
        assert r.returncode == 0, r.stderr
    (out_a,), (out_b,), (out_c,) = (torch.load(tmp_path / f"{n}.pt") for n in "abc")
    assert torch.equal(out_a, out_b)
    assert not torch.equal(out_a, out_c)
    # set_stream is a copy: the output is the seeded random input itself, never zeros
    program = hir.compile_program(hir.parse_file(SET_STREAM_HIR))
    (expected,) = random_inputs(program.global_input_types, seed=7)
    assert torch.equal(out_a, expected)
    assert expected.abs().min() > 0
    # -v: progress with timings on stderr, nothing on stdout (outputs went to the file)
    assert "ran @main (hir level)" in a.stderr
    assert "s] started: cpu" in a.stderr
    assert " ms)" in a.stderr
    assert a.stdout == ""
    assert b.stderr == ""


def test_cli_entry_prints_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "two.mlir").write_text(SET_STREAM_HIR.read_text() + FUSION_DOUBLE)
    result = hir_run_here(capsys, tmp_path / "two.mlir", "--entry", "double", "--device", "cpu")
    missing = hir_run_here(capsys, tmp_path / "two.mlir", "--entry", "nope")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("output #0: (4, 8) torch.float32 sum=")
    assert_clean_failure(missing, "no function @nope to run (functions: @main, @double)")


def test_cli_reference_check_passes(capsys: pytest.CaptureFixture[str]) -> None:
    result = hir_run_here(capsys, SET_STREAM_HIR, "--reference", SET_STREAM, "--check", "--num-streams", "3")
    assert result.returncode == 0, result.stderr
    assert (
        f"check: OK (the fusion-level reference {SET_STREAM} against {SET_STREAM_HIR}: 1 output matches)"
        in result.stdout
    )


def test_cli_reference_check_fails_for_a_wrong_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = SET_STREAM_HIR.read_text().replace("fusion.set", "fusion.neg")
    assert wrong != SET_STREAM_HIR.read_text()
    (tmp_path / "wrong.hir.mlir").write_text(wrong)
    result = hir_run_here(capsys, tmp_path / "wrong.hir.mlir", "--reference", SET_STREAM, "--check")
    assert_clean_failure(result, "check failed")
    assert "output #0: Mismatched elements: 32 / 32" in result.stderr


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every error exits 1 with `error:` and no traceback: one in a process of its own, the rest here."""
    (tmp_path / "bad.mlir").write_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = fusion.nope\n}\n")
    (tmp_path / "undefined.mlir").write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %q : tensor<4xf32>\n}\n"
    )
    (tmp_path / "invalid.mlir").write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = fusion.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<5xf32>\n"
        "  func.return %x : tensor<4xf32>\n}\n"
    )
    torch.save([torch.randn(4, 9)], tmp_path / "wrong_shape.pt")
    torch.save(torch.randn(4, 8), tmp_path / "not_a_list.pt")
    cases = [
        ([tmp_path / "bad.mlir"], "bad.mlir:3:1: error: Operation fusion.nope is not registered"),
        ([tmp_path / "undefined.mlir"], "undefined.mlir:4:1: error: values used but not defined: [%q]"),
        ([tmp_path / "invalid.mlir"], "invalid.mlir:2:3: error: 'fusion.add' op result shape 5 does not match"),
        ([tmp_path / "missing.mlir"], "missing.mlir"),
        ([SET_STREAM_HIR, "--inputs", tmp_path / "wrong_shape.pt"], "input #0 has shape 4x9, expected 4x8"),
        ([SET_STREAM_HIR, "--inputs", tmp_path / "not_a_list.pt"], "holds a Tensor, expected a list of tensors"),
        ([SET_STREAM_HIR, "--check"], "--check on a hir module needs --reference FILE"),
        ([SET_STREAM_HIR, "--entry", "nope"], "no function @nope to run (functions: @main)"),
    ]
    for k, (args, message) in enumerate(cases):
        assert_clean_failure(hir_run(*args) if k == 4 else hir_run_here(capsys, *args), message)


class _RunsCode:
    """Unpickling this calls `print`, as a crafted --inputs file would call anything."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("UNPICKLED AND RAN CODE",))


def test_cli_input_files_are_loaded_safely(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--inputs never unpickles code, even when the environment asks torch.load to; bad files say why."""
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    torch.save([torch.randn(4, 8), _RunsCode()], tmp_path / "crafted.pt")
    (tmp_path / "text.pt").write_text("101 102\n")
    (tmp_path / "empty.pt").write_bytes(b"")
    cases = [
        ("crafted.pt", "holds Python objects other than tensors and numbers"),
        ("text.pt", "is not a list of tensors written by torch.save (the file is not in torch.save's format)"),
        ("empty.pt", "is not a list of tensors written by torch.save (the file is empty or cut short)"),
        ("missing.pt", "No such file or directory"),
    ]
    for name, message in cases:
        result = hir_run_here(capsys, SET_STREAM_HIR, "--inputs", tmp_path / name)
        assert_clean_failure(result, f"--inputs {tmp_path / name}")
        assert message in result.stderr, result.stderr
        assert "UNPICKLED AND RAN CODE" not in result.stdout + result.stderr


def test_cli_check_says_what_it_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check names both sides; a pipeline that leaves the module fusion-level is refused, not compared with itself."""
    result = hir_run_here(capsys, SET_STREAM, "--check", "--num-streams", "2")
    assert result.returncode == 0, result.stderr
    assert "check: OK (the fusion-level reference against the program lowered by -p 'stream-lowering': 1 output" in (
        result.stdout
    )
    for pipeline in ("", "cse"):
        result = hir_run_here(capsys, SET_STREAM, "--check", "-p", pipeline)
        assert_clean_failure(
            result, f"-p '{pipeline}' lowers it to, but that pipeline leaves @main at the fusion level"
        )
        assert "check: OK" not in result.stdout
    result = hir_run_here(capsys, SET_STREAM_HIR, "--reference", SET_STREAM_HIR)
    assert_clean_failure(result, f"--reference {SET_STREAM_HIR} is a hir module: give the fusion-level module")
    result = hir_run_here(capsys, SET_STREAM, "--reference", SET_STREAM)
    assert_clean_failure(result, f"but {SET_STREAM} is fusion-level: use --check")


def test_cli_multidevice_module_in_one_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 2-device program run without torchrun says how many processes it needs and the command."""
    lowered = tmp_path / "allgather.hir.mlir"
    lowered.write_text(
        str(hir.run_pipeline(hir.parse_file(EXAMPLES / "multidevice" / "allgather.mlir"), "stream-lowering"))
    )
    expected = (
        "one process each, but this is a single process: run it with python -m torch.distributed.run "
        f"--nproc-per-node 2 -m hir.tools.hir_run {lowered} --num-streams 2"
    )
    assert_clean_failure(hir_run_here(capsys, lowered, "--num-streams", "2"), expected)
    fusion_level = EXAMPLES / "multidevice" / "allgather.mlir"
    assert_clean_failure(hir_run_here(capsys, fusion_level, "--check"), "--nproc-per-node 2")


def test_cli_option_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert_clean_failure(
        hir_run_here(capsys, SET_STREAM_HIR, "--outputs", tmp_path / "nowhere" / "out.pt"),
        f"the folder {tmp_path / 'nowhere'} does not exist",
    )
    assert_clean_failure(hir_run_here(capsys, SET_STREAM_HIR, "--timeout", "0"), "the timeout must be > 0 seconds")
    monkeypatch.setenv("HIR_DIST_TIMEOUT", "soon")
    assert_clean_failure(hir_run_here(capsys, SET_STREAM_HIR), "HIR_DIST_TIMEOUT='soon': expected a number of seconds")


# -- CUDA -----------------------------------------------------------------------------------------

SLEEP_CYCLES = 200_000_000  # ~0.1 s at 2 GHz: far longer than the host takes to enqueue the program


def pool_streams(count: int) -> list[torch.cuda.Stream]:
    pool = streams_for(torch.device("cuda"))
    return [pool.pool(k) for k in range(count)]


@cuda
@needs_cuda
@pytest.mark.parametrize("num_streams", range(1, 9))
@pytest.mark.parametrize("name", sorted(STREAM_CASES))
def test_stream_program_cuda(name: str, num_streams: int) -> None:
    run_stream_case(name, num_streams, "cuda", seed=num_streams)


@cuda
@needs_cuda
def test_stream_pool_is_reused_across_runs() -> None:
    case = STREAM_CASES["copy"]
    program = hir.compile_program(hir.parse(case.text()))
    program(case.inputs(device="cuda"), num_streams=4)
    before = dict(runtime_streams._POOL)
    streams = pool_streams(4)
    assert [s.stream_id for s in streams] == [s.stream_id for s in pool_streams(4)]
    assert all(s is t for s, t in zip(streams, pool_streams(4)))
    for _ in range(3):
        program(case.inputs(device="cuda"), num_streams=4)
    assert runtime_streams._POOL.keys() == before.keys()
    assert all(runtime_streams._POOL[k] is v for k, v in before.items())
    caller = torch.cuda.current_stream()
    assert all(s != caller for s in streams)
    torch.cuda.synchronize()


@cuda
@needs_cuda
def test_caller_stream_is_restored_after_a_run_and_after_an_error() -> None:
    case = STREAM_CASES["copy"]
    good = hir.compile_program(hir.parse(case.text()))
    # one iteration too many: fails in the main loop while a pool stream is current
    bad = hir.compile_program(hir.parse(case.text().replace("%cn = arith.constant 6", "%cn = arith.constant 7")))
    caller = torch.cuda.Stream()
    default = torch.cuda.current_stream()
    with torch.cuda.stream(caller):
        x = case.inputs(device="cuda")[0]
        (out,) = good([x], num_streams=3)
        assert torch.cuda.current_stream() == caller
        with pytest.raises(LocatedError, match=r"hir\.alias_select"):
            bad([x], num_streams=3)
        assert torch.cuda.current_stream() == caller
        snapshot = out.clone()
    assert torch.cuda.current_stream() == default
    torch.cuda.synchronize()
    assert torch.equal(snapshot.cpu(), x.cpu())


def delete_line(text: str, line: str) -> str:
    lines = text.splitlines(keepends=True)
    matches = [k for k, item in enumerate(lines) if item.strip() == line]
    assert len(matches) == 1, matches
    del lines[matches[0]]
    return "".join(lines)


def run_with_slow_workers(text: str, x: torch.Tensor, num_streams: int) -> torch.Tensor:
    """
    Each pool stream sleeps before the program's work reaches it; the output is read (cloned) on
    the caller's stream right after the run. Only the join `hir.synchronize` orders that read
    after the workers' writes.
    """
    program = hir.compile_program(hir.parse(text))
    buf = torch.full_like(x, float("nan"))
    caller = torch.cuda.Stream()
    torch.cuda.synchronize()
    for stream in pool_streams(num_streams):
        with torch.cuda.stream(stream):
            torch.cuda._sleep(SLEEP_CYCLES)
    with torch.cuda.stream(caller):
        program([x], outputs=[buf], num_streams=num_streams)
        snapshot = buf.clone()
    torch.cuda.synchronize()
    return snapshot


def run_with_slow_caller(text: str, source: torch.Tensor, num_streams: int) -> torch.Tensor:
    """
    The caller's stream sleeps, then writes the input; the program is enqueued right after. Only
    the fork `hir.synchronize` makes the workers read the input after that write.
    """
    program = hir.compile_program(hir.parse(text))
    x = torch.full_like(source, float("nan"))
    caller = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(caller):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.copy_(source)
        (out,) = program([x], num_streams=num_streams)
    torch.cuda.synchronize()
    return out


@cuda
@needs_cuda
@pytest.mark.parametrize("num_streams", [1, 2, 4])
def test_missing_join_synchronize_is_a_race(num_streams: int) -> None:
    full = SET_STREAM_HIR.read_text()
    broken = delete_line(full, "hir.synchronize %s")  # the caller's stream no longer waits for the workers
    x = torch.randn(4, 8, device="cuda")
    assert torch.equal(run_with_slow_workers(full, x, num_streams), x)
    wrong = run_with_slow_workers(broken, x, num_streams)
    assert not torch.equal(wrong, x), "a missing join synchronize went unnoticed"
    assert wrong.isnan().all(), "the caller's stream read the output before any worker wrote it"


@cuda
@needs_cuda
@pytest.mark.parametrize("num_streams", [1, 2, 4])
def test_missing_fork_synchronize_is_a_race(num_streams: int) -> None:
    full = SET_STREAM_HIR.read_text()
    broken = delete_line(full, "hir.synchronize %main")  # workers no longer wait for the caller's stream
    source = torch.randn(4, 8, device="cuda")
    assert torch.equal(run_with_slow_caller(full, source, num_streams), source)
    wrong = run_with_slow_caller(broken, source, num_streams)
    assert not torch.equal(wrong, source), "a missing fork synchronize went unnoticed"
    assert wrong.isnan().all(), "the workers read the input before the caller's stream wrote it"


@cuda
@needs_cuda
def test_hir_run_on_cuda(tmp_path: Path) -> None:
    result = hir_run(SET_STREAM_HIR, "--reference", SET_STREAM, "--device", "cuda", "--num-streams", "2", "-v")
    assert result.returncode == 0, result.stderr
    assert "started: cuda" in result.stderr


def test_a_run_does_not_walk_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    A call's checks use what compile_program and the first call found: walking the function on
    every call made a 10 000-op program pay 1.5 us an op per run (benchmarks/host_overhead.py).
    """
    from xdsl.ir import Operation

    lines = ["func.func @main() -> index {", "  %c1 = arith.constant 1 : index", "  %v0 = arith.constant 0 : index"]
    lines += [f"  %v{i + 1} = arith.addi %v{i}, %c1 : index" for i in range(50)]
    lines += ["  func.return %v50 : index", "}"]
    program = hir.compile_program(hir.parse("\n".join(lines), "chain.mlir"))
    assert program([]) == [50]
    walks: list[Operation] = []
    original = Operation.walk

    def counting_walk(self: Operation, *args: object, **kwargs: object) -> object:
        walks.append(self)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Operation, "walk", counting_walk)
    assert program([]) == [50]
    assert not walks, f"a run walked {walks[0].name}"


SHAPE_MISMATCH = """
func.func @main(%a: memref<?x4xf32>, %b: memref<4x3xf32>) -> memref<2x3xf32> {{
  %c = hir.allocate() : memref<2x3xf32>
  hir.launch ins(%x = %a, %y = %b : memref<?x4xf32>, memref<4x3xf32>) outs(%c : memref<2x3xf32>) {{
    %r = fusion.matmul %x, %y : tensor<?x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>{segment}
  }}
  func.return %c : memref<2x3xf32>
}}
"""


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize(
    ("segment", "where"),
    [
        # one op: its out= kernel would resize the buffer
        ("\n    hir.yield %r : tensor<2x3xf32>", r"4:3: error: 'hir\.launch' op failed at run time: the kernel"),
        (
            "\n    %s = fusion.relu %r : tensor<2x3xf32> -> tensor<2x3xf32>\n    hir.yield %s : tensor<2x3xf32>",
            # several: the last op writes the buffer through its out= kernel, which would resize it
            r"6:5: error: 'fusion\.relu' op failed at run time: the kernel",
        ),
    ],
)
def test_a_result_of_another_shape_than_its_buffer_is_an_error(segment: str, where: str) -> None:
    """A dynamic extent that does not match the buffer's at run time: located error, never an unwritten buffer."""
    module = hir.parse(SHAPE_MISMATCH.format(segment=segment), "mismatch.mlir")
    with pytest.raises(
        LocatedError,
        match=rf"mismatch\.mlir:{where} computed a result of shape \(1, 3\) for a destination of shape \(2, 3\)",
    ):
        hir.execute(module, [torch.randn(1, 4), torch.randn(4, 3)])


class _LoggedStreams(runtime_streams.CpuStreams):
    """CPU streams that log the current-stream queries and switches of a run."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def current(self) -> runtime_streams.Stream:
        self.calls.append("current")
        return "caller"

    def set_current(self, stream: runtime_streams.Stream) -> None:
        self.calls.append(f"set_current {stream}")


def test_a_program_without_stream_switches_leaves_the_current_stream_alone() -> None:
    """
    No query of the caller's stream before the first launch, and no restore after, where the
    program never makes another stream current; a program that does is restored to the caller's.
    """
    text = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
"""
    x = torch.randn(4, 8)
    plain = hir.compile_program(
        hir.run_pipeline(hir.parse(text.replace(", #fusion.parallel<[stream, serial]>", "")), "stream-lowering")
    )
    streamed = hir.compile_program(hir.run_pipeline(hir.parse(text), "stream-lowering"))
    assert not plain.switches_streams
    assert streamed.switches_streams
    for program, expected_last in ((plain, None), (streamed, "set_current caller")):
        streams = _LoggedStreams()
        (y,) = program([x], streams=streams)
        torch.testing.assert_close(y, torch.exp(x))
        assert (streams.calls[-1] if streams.calls else None) == expected_last, streams.calls
