"""
`stream-lowering` (and its stage `convert-fusion-to-hir`) on single-device programs: every lowered
program computes what the fusion-level reference computes, on random inputs (never zeros) and for
1, 2, 3, 4 and 8 streams, and has the expected number of stream loops.

The cases are the FileCheck inputs of tests/lit/passes/stream-lowering (every function of every
file that lowers without errors), plus small parametrized programs for the variants FileCheck
does not need to see: each axis, chunk counts, op kinds and dtypes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from device_under_test import execute_lowered
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType

import hir
from hir.dialects import fusion
from hir.dialects import hir as hir_dialect
from hir.runtime.compare import mismatches
from hir.runtime.dtypes import random_tensor, shaped_dtype

LIT_DIR = Path(__file__).resolve().parent / "lit" / "passes" / "stream-lowering"
NUM_STREAMS = (1, 2, 3, 4, 8)
DYNAMIC_EXTENT = 6
"""What a `?` extent of an input is at run time (divisible by the stream(2) chunks of the lit inputs)."""


# -- helpers --------------------------------------------------------------------------------------


@functools.cache
def reference_and_lowered(text: str) -> tuple[ModuleOp, ModuleOp]:
    """The fusion-level module and its `stream-lowering` (parsed and lowered once per text)."""
    return hir.parse(text), hir.run_pipeline(hir.parse(text), "stream-lowering")


def function_named(module: ModuleOp, name: str) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == name)


def count_loops(function: func.FuncOp) -> int:
    return sum(isinstance(op, hir_dialect.ForOp) for op in function.walk())


def random_inputs(function: func.FuncOp, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    inputs = []
    for t in function.function_type.inputs.data:
        assert isinstance(t, TensorType)
        shape = tuple(DYNAMIC_EXTENT if d == DYNAMIC_INDEX else d for d in t.get_shape())
        inputs.append(random_tensor(shape, shaped_dtype(t), "cpu", generator))
    return inputs


def check_lowering(text: str, entry: str, num_streams: int) -> None:
    """Runs the reference and the lowered program on the same random inputs and compares them."""
    reference, lowered = reference_and_lowered(text)
    inputs = random_inputs(function_named(reference, entry), seed=num_streams)
    expected = hir.execute(reference, [x.clone() for x in inputs], entry=entry)
    given = [x.clone() for x in inputs]
    actual = execute_lowered(lowered, given, entry=entry, num_streams=num_streams)
    assert not mismatches(actual, expected), mismatches(actual, expected)
    for before, after in zip(inputs, given):  # the program only reads its inputs
        assert torch.equal(before, after)


# -- the FileCheck inputs -------------------------------------------------------------------------


def lit_functions() -> list[tuple[str, str]]:
    """
    (file, function) of every lit input that lowers (the files that do not expect diagnostics)
    and draws no random numbers (tests/test_random_ops.py checks those).
    """
    cases: list[tuple[str, str]] = []
    for path in sorted(LIT_DIR.glob("*.mlir")):
        if "--verify-diagnostics" in path.read_text().splitlines()[0]:
            continue
        for op in hir.parse_file(path).walk():
            if isinstance(op, func.FuncOp) and not any(isinstance(o, fusion.RandomOp) for o in op.walk()):
                cases.append((path.name, op.sym_name.data))  # random draws differ from the reference's
    return cases


LIT_FUNCTIONS = lit_functions()

# Stream loops after stream-lowering (a fork loop and a main loop per group of fused units).
LIT_LOOPS = {
    ("single_set.mlir", "main"): 2,
    ("per_use_slicing.mlir", "matmul_square"): 2,
    ("set_non_outermost.mlir", "non_outermost"): 2,
    ("binary_op.mlir", "binary"): 2,
    ("two_sets.mlir", "two_sets"): 2,
    ("three_sets.mlir", "three_sets"): 4,
    ("sum_iteration_axis.mlir", "sum_inner"): 2,
    ("sum_iteration_axis.mlir", "sum_outer"): 2,
    ("matmul_m.mlir", "matmul_m"): 2,
    ("matmul_n.mlir", "matmul_n"): 2,
    ("matmul_batch.mlir", "batched"): 2,
    ("matmul_batch.mlir", "broadcast_batch"): 2,
    ("matmul_batch.mlir", "broadcast_batch_chunks"): 2,
    ("linear_bias_n.mlir", "linear_n"): 2,
    ("elementwise_kernel.mlir", "kernel"): 2,
    ("elementwise_kernel.mlir", "segment"): 2,
    ("chunks_chain.mlir", "chain"): 2,
    ("dynamic_extents.mlir", "add_mul"): 2,
    ("dynamic_extents.mlir", "matmul_n"): 2,
    ("dynamic_extents.mlir", "chunks"): 2,
    ("convert_two_sets.mlir", "two_sets"): 2,
    ("convert_units.mlir", "no_stream"): 0,
    ("convert_units.mlir", "segments"): 2,
    ("convert_dynamic.mlir", "add_mul"): 2,
    ("chunks_not_dividing.mlir", "rows"): 2,
    ("chunks_not_dividing.mlir", "inner_axis"): 2,
    ("chunks_not_dividing.mlir", "more_chunks_than_rows"): 2,
    ("made_axis_uneven.mlir", "full_uneven"): 0,
    ("made_axis_uneven.mlir", "broadcast_uneven"): 2,
    ("made_axis_uneven.mlir", "full_even"): 2,
    ("made_axis_uneven.mlir", "kept_out_of_segments"): 2,
    ("calls.mlir", "leaf"): 0,
    ("calls.mlir", "mid"): 2,
    ("calls.mlir", "main"): 2,
    ("chunks_not_dividing.mlir", "dynamic"): 2,
    ("model_ops.mlir", "reshape_kept"): 2,
    ("model_ops.mlir", "slice_kept"): 2,
    ("model_ops.mlir", "concat_off_dim"): 2,
    ("model_ops.mlir", "layer_norm_rows"): 2,
    ("model_ops.mlir", "rms_norm_chunks"): 2,
    ("model_ops.mlir", "mean_rows"): 2,
    ("model_ops.mlir", "masked_softmax"): 2,
    ("model_ops.mlir", "softmax_dynamic"): 2,
    ("sdpa_heads.mlir", "heads"): 2,
    ("sdpa_heads.mlir", "batch_chunks"): 2,
    ("reshape_stream.mlir", "split_outer"): 2,
    ("reshape_stream.mlir", "split_outer_chunks"): 2,
    ("reshape_stream.mlir", "merge"): 2,
    ("reshape_stream.mlir", "merge_inner"): 2,
    ("reshape_stream.mlir", "merge_three"): 2,
    ("reshape_stream.mlir", "merge_chunks"): 2,
    ("reshape_stream.mlir", "chain"): 2,
    ("reshape_stream.mlir", "select_then_chunk"): 2,  # index i and chunk i of 4 along an extent-4 axis: one fused loop
    ("index_add.mlir", "rows"): 2,
    ("index_add.mlir", "column_chunks"): 2,
    ("index_add.mlir", "copy_rows"): 2,
    ("stream_inputs.mlir", "stream_input"): 2,
    ("stream_inputs.mlir", "only_input"): 0,  # only the input is stream-parallel: no loop
    ("stream_inputs.mlir", "other_axis"): 2,
    ("stream_inputs.mlir", "chunks"): 2,
    ("kernel_streamed.mlir", "add_sum_unit"): 2,
    ("kernel_streamed.mlir", "add_sum_streamed"): 2,
    ("kernel_streamed.mlir", "abs_rows"): 2,
    ("matmul_chunks.mlir", "matmul_n_chunks"): 2,
    ("matmul_chunks.mlir", "two_matmuls_inlinable"): 2,
    ("matmul_chunks.mlir", "two_matmuls_not_inlinable"): 4,
}


def test_every_lit_input_has_a_loop_count() -> None:
    assert set(LIT_FUNCTIONS) == set(LIT_LOOPS)


@pytest.mark.parametrize("num_streams", NUM_STREAMS)
@pytest.mark.parametrize(("file", "entry"), LIT_FUNCTIONS)
def test_lit_input_matches_reference(file: str, entry: str, num_streams: int) -> None:
    check_lowering((LIT_DIR / file).read_text(), entry, num_streams)


@pytest.mark.parametrize(("file", "entry"), LIT_FUNCTIONS)
def test_lit_input_loops(file: str, entry: str) -> None:
    _, lowered = reference_and_lowered((LIT_DIR / file).read_text())
    function = function_named(lowered, entry)
    assert count_loops(function) == LIT_LOOPS[(file, entry)]
    # Every fusion op runs inside a launch; the function itself works on buffers.
    assert all(
        isinstance(op.parent_op(), hir_dialect.LaunchOp) for op in function.walk() if isinstance(op, fusion.FusionOp)
    )


# -- small parametrized programs ------------------------------------------------------------------


def tensor(shape: tuple[int, ...], elt: str = "f32", stream: tuple[int, int | None] | None = None) -> str:
    """`tensor<...>`, stream-parallel on `stream = (axis, chunks)` (chunks None: plain `stream`)."""
    dims = "".join(f"{'?' if d == DYNAMIC_INDEX else d}x" for d in shape)
    if stream is None:
        return f"tensor<{dims}{elt}>"
    axis, chunks = stream
    kinds = ["serial"] * len(shape)
    kinds[axis] = "stream" if chunks is None else f"stream({chunks})"
    return f"tensor<{dims}{elt}, #fusion.parallel<[{', '.join(kinds)}]>>"


def program(inputs: list[str], ops: list[tuple[str, list[str], str, str]], results: list[str]) -> str:
    """
    `@main` over arguments %a0, %a1, ... of types `inputs`; each op is (name, operands, extra
    syntax such as `dims = [1]`, result type) and defines %v0, %v1, ...; `results` are returned.
    """
    types = {f"%a{i}": t for i, t in enumerate(inputs)}
    lines = []
    for k, (name, operands, extra, result) in enumerate(ops):
        operand_types = ", ".join(types[o] for o in operands)
        lines.append(f"  %v{k} = fusion.{name} {', '.join(operands)} {extra} : {operand_types} -> {result}")
        types[f"%v{k}"] = result
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(inputs))
    result_types = ", ".join(types[r] for r in results)
    return (
        f"func.func @main({args}) -> ({result_types}) {{\n"
        + "\n".join(lines)
        + f"\n  func.return {', '.join(results)} : {result_types}\n}}\n"
    )


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    loops: int


def set_case(shape: tuple[int, ...], axis: int, chunks: int | None) -> Case:
    text = program([tensor(shape)], [("set", ["%a0"], "", tensor(shape, stream=(axis, chunks)))], ["%v0"])
    return Case(f"set_{'x'.join(map(str, shape))}_axis{axis}_chunks{chunks}", text, 2)


def binary_case(op: str, axis: int, chunks: int | None) -> Case:
    shape = (4, 6)
    text = program(
        [tensor(shape), tensor(shape)], [(op, ["%a0", "%a1"], "", tensor(shape, stream=(axis, chunks)))], ["%v0"]
    )
    return Case(f"{op}_axis{axis}_chunks{chunks}", text, 2)


def reduction_case(op: str, dims: list[int], axis: int, chunks: int | None) -> Case:
    shape = (4, 6, 2)
    kept = tuple(d for i, d in enumerate(shape) if i not in dims)
    result = tensor(kept, stream=(axis, chunks))
    text = program([tensor(shape)], [(op, ["%a0"], f"dims = {dims}", result)], ["%v0"])
    return Case(f"{op}_dims{''.join(map(str, dims))}_axis{axis}_chunks{chunks}", text, 2)


def kernel_case(ops: list[str], axis: int, chunks: int | None) -> Case:
    """A chain of unary ops, all stream-parallel: one fusion.segment, one loop pair."""
    shape = (4, 8)
    t = tensor(shape, stream=(axis, chunks))
    chain = [(op, [f"%v{k - 1}" if k else "%a0"], "", t) for k, op in enumerate(ops)]
    return Case(
        f"kernel_{'_'.join(ops)}_axis{axis}_chunks{chunks}", program([tensor(shape)], chain, [f"%v{len(ops) - 1}"]), 2
    )


def matmul_case(
    a: tuple[int, ...], b: tuple[int, ...], c: tuple[int, ...], axis: int, chunks: int | None, elt: str
) -> Case:
    text = program(
        [tensor(a, elt), tensor(b, elt)], [("matmul", ["%a0", "%a1"], "", tensor(c, elt, (axis, chunks)))], ["%v0"]
    )
    name = f"matmul_{'x'.join(map(str, a))}_{'x'.join(map(str, b))}_axis{axis}_chunks{chunks}_{elt}"
    return Case(name, text, 2)


def linear_case(bias: bool, axis: int, chunks: int | None) -> Case:
    inputs = [tensor((2, 4, 3)), tensor((6, 3))] + ([tensor((6,))] if bias else [])
    operands = ["%a0", "%a1"] + (["%a2"] if bias else [])
    text = program(inputs, [("linear", operands, "", tensor((2, 4, 6), stream=(axis, chunks)))], ["%v0"])
    return Case(f"linear_bias{bias}_axis{axis}_chunks{chunks}", text, 2)


MATMULS = [
    # (a, b, c, stream axis of c): M, N, batch, batch of a broadcast operand, 1-D operands
    ((8, 4), (4, 6), (8, 6), 0),
    ((8, 4), (4, 6), (8, 6), 1),
    ((6, 8, 4), (4, 2), (6, 8, 2), 0),
    ((6, 8, 4), (4, 2), (6, 8, 2), 1),
    ((6, 8, 4), (6, 4, 2), (6, 8, 2), 0),
    ((6, 8, 4), (1, 4, 2), (6, 8, 2), 0),
    ((1, 8, 4), (6, 4, 2), (6, 8, 2), 0),
    ((8, 4), (6, 4, 2), (6, 8, 2), 0),
    ((4,), (4, 6), (6,), 0),
    ((8, 4), (4,), (8,), 0),
]

CASES: list[Case] = [
    *(set_case((4, 6, 2), axis, chunks) for axis in range(3) for chunks in (None, 2)),
    *(
        binary_case(op, axis, chunks)
        for op in ("add", "sub", "mul", "div", "maximum")
        for axis, chunks in ((0, None), (1, 3))
    ),
    *(
        reduction_case(op, dims, axis, chunks)
        for op in ("sum", "max", "min")
        for dims, axis in (([0], 0), ([0], 1), ([1], 0), ([1], 1), ([2], 0), ([0, 2], 0))
        for chunks in (None, 2)
    ),
    *(
        kernel_case(ops, axis, chunks)
        for ops in (["exp", "neg", "tanh"], ["abs", "relu"])
        for axis, chunks in ((0, None), (1, 4))
    ),
    *(matmul_case(a, b, c, axis, chunks, "f32") for a, b, c, axis in MATMULS for chunks in (None, 2)),
    *(linear_case(bias, axis, chunks) for bias in (False, True) for axis in (0, 1, 2) for chunks in (None, 2)),
    # A 2-D matmul streamed on M and on N, in float64 and bfloat16.
    *(matmul_case((8, 16), (16, 6), (8, 6), axis, None, elt) for axis in (0, 1) for elt in ("f64", "bf16")),
    matmul_case((6, 8, 16), (1, 16, 4), (6, 8, 4), 0, 3, "bf16"),
    Case(
        "permute_relu",
        program(
            [tensor((4, 6, 8))],
            [
                ("permute", ["%a0"], "perm = [2, 0, 1]", tensor((8, 4, 6), stream=(1, None))),
                ("relu", ["%v0"], "", tensor((8, 4, 6), stream=(1, None))),
            ],
            ["%v1"],
        ),
        2,
    ),
    Case(
        "broadcast_new_stream_axis",
        program(
            [tensor((8,))],
            [
                ("broadcast", ["%a0"], "dims = [0]", tensor((4, 8), stream=(0, None))),
                ("exp", ["%v0"], "", tensor((4, 8), stream=(0, None))),
            ],
            ["%v1"],
        ),
        2,
    ),
    Case(
        "cast_to_bf16",
        program([tensor((4, 8))], [("cast", ["%a0"], "", tensor((4, 8), "bf16", (0, None)))], ["%v0"]),
        2,
    ),
    Case(
        "two_outputs",
        program(
            [tensor((4, 8))],
            [
                ("exp", ["%a0"], "", tensor((4, 8), stream=(0, None))),
                ("neg", ["%v0"], "", tensor((4, 8), stream=(0, None))),
            ],
            ["%v0", "%v1"],
        ),
        2,
    ),
    Case(
        # stream on N, then a plain op, then stream on M: two loop pairs around a top-level launch.
        "stream_plain_stream",
        program(
            [tensor((4, 8)), tensor((8, 6))],
            [
                ("matmul", ["%a0", "%a1"], "", tensor((4, 6), stream=(1, None))),
                ("relu", ["%v0"], "", tensor((4, 6))),
                ("sum", ["%v1"], "dims = [1]", tensor((4,), stream=(0, None))),
            ],
            ["%v2"],
        ),
        4,
    ),
    Case(
        # the same iteration space (6 columns, 6 rows) on different axes: no loop fusion.
        "different_axes",
        program(
            [tensor((6, 6))],
            [
                ("exp", ["%a0"], "", tensor((6, 6), stream=(0, None))),
                ("neg", ["%v0"], "", tensor((6, 6), stream=(1, None))),
            ],
            ["%v1"],
        ),
        4,
    ),
    Case(
        # a sum over the stream axis of its operand: the reduced value runs whole, after the loop.
        "reduce_streamed_value",
        program(
            [tensor((4, 8))],
            [
                ("exp", ["%a0"], "", tensor((4, 8), stream=(0, None))),
                ("sum", ["%v0"], "dims = [0]", tensor((8,))),
            ],
            ["%v1"],
        ),
        2,
    ),
    Case(
        "dynamic_chain",
        program(
            [tensor((DYNAMIC_INDEX, 8)), tensor((8, DYNAMIC_INDEX))],
            [
                ("matmul", ["%a0", "%a1"], "", tensor((DYNAMIC_INDEX, DYNAMIC_INDEX), stream=(0, None))),
                ("tanh", ["%v0"], "", tensor((DYNAMIC_INDEX, DYNAMIC_INDEX), stream=(0, None))),
                ("sum", ["%v1"], "dims = [1]", tensor((DYNAMIC_INDEX,), stream=(0, None))),
            ],
            ["%v2"],
        ),
        2,
    ),
]


def test_case_names_are_unique() -> None:
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("num_streams", NUM_STREAMS)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_case_matches_reference(case: Case, num_streams: int) -> None:
    check_lowering(case.text, "main", num_streams)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_case_loops(case: Case) -> None:
    _, lowered = reference_and_lowered(case.text)
    assert count_loops(function_named(lowered, "main")) == case.loops


# -- the stages ------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_streams", [1, 3])
@pytest.mark.parametrize(("file", "entry"), [("two_sets.mlir", "two_sets"), ("chunks_chain.mlir", "chain")])
def test_stages_without_loop_fusion(file: str, entry: str, num_streams: int) -> None:
    """fusion-segment then convert-fusion-to-hir alone: one hir.stream_for per unit, run as it is, same results."""
    text = (LIT_DIR / file).read_text()
    reference = hir.parse(text)
    lowered = hir.run_pipeline(hir.parse(text), "fusion-segment,convert-fusion-to-hir")
    units = sum(isinstance(op, fusion.FusionOp | fusion.SegmentOp) for op in function_named(reference, entry).walk())
    loops = [op for op in function_named(lowered, entry).walk() if isinstance(op, hir_dialect.StreamForOp)]
    assert len(loops) == units
    inputs = random_inputs(function_named(reference, entry), seed=0)
    expected = hir.execute(reference, inputs, entry=entry)
    actual = execute_lowered(lowered, inputs, entry=entry, num_streams=num_streams)
    assert not mismatches(actual, expected)
