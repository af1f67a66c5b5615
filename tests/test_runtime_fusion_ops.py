"""
Every fusion op executed through `hir.execute` on a one-op fusion-level module parsed from text,
compared with eager torch on random inputs (never zeros), in several dtypes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
import torch.nn.functional as F

import hir

DTYPES: dict[str, torch.dtype] = {
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
    "i1": torch.bool,
    "i32": torch.int32,
    "i64": torch.int64,
}
FLOATS = ["f32", "f64", "bf16", "f16"]
INTS = ["i32", "i64"]
NUMERIC = FLOATS + INTS

# Relative L2 error allowed: the runtime calls the same torch ops, so only a different
# association (addmm vs matmul + add, say) may change the rounding.
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1e-2}

Shape = tuple[int, ...]


# -- helpers --------------------------------------------------------------------------------------


def tensor_type(shape: Shape, elt: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{elt}>"


def one_op_module(op: str, operands: Sequence[tuple[Shape, str]], result: tuple[Shape, str], attrs: str = "") -> str:
    """`func.func @main(%a0, %a1, ...) { %r = fusion.OP %a0, ... attrs : types -> type }`."""
    args = ", ".join(f"%a{i}: {tensor_type(*o)}" for i, o in enumerate(operands))
    names = ", ".join(f"%a{i}" for i in range(len(operands)))
    types = ", ".join(tensor_type(*o) for o in operands)
    result_type = tensor_type(*result)
    return (
        f"func.func @main({args}) -> {result_type} {{\n"
        f"  %r = fusion.{op} {names}{' ' + attrs if attrs else ''} : {types} -> {result_type}\n"
        f"  func.return %r : {result_type}\n"
        "}\n"
    )


def random_input(shape: Shape, elt: str, generator: torch.Generator, scale: float = 1.0) -> torch.Tensor:
    """Normal floats, or integers in [-8, 8] without 0, or random booleans (never all zeros)."""
    dtype = DTYPES[elt]
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=generator, dtype=torch.float64) * scale).to(dtype)
    if dtype == torch.bool:
        values = torch.rand(shape, generator=generator) > 0.5
        return values.flatten().index_fill(0, torch.tensor([0]), True).reshape(shape) if values.numel() else values
    magnitude = torch.randint(1, 9, shape, generator=generator)
    sign = torch.where(torch.rand(shape, generator=generator) > 0.5, 1, -1)
    return (magnitude * sign).to(dtype)


def check_close(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert isinstance(out, torch.Tensor)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    assert out.shape == ref.shape, (tuple(out.shape), tuple(ref.shape))
    if not ref.dtype.is_floating_point:
        assert torch.equal(out, ref)
        return
    assert not out.isnan().any()
    diff = (out.double() - ref.double()).norm()
    scale = ref.double().norm()
    error = float(diff / scale) if scale > 0 else float(diff)
    assert error <= TOLERANCE[ref.dtype], f"relative error {error:.3g}"


def run_one(
    op: str,
    operands: Sequence[tuple[Shape, str]],
    result: tuple[Shape, str],
    reference: Callable[..., torch.Tensor],
    attrs: str = "",
    seed: int = 0,
    scale: float = 1.0,
) -> None:
    """Parses the one-op module, runs it on random inputs and compares with `reference(*inputs)`."""
    module = hir.parse(one_op_module(op, operands, result, attrs), f"{op}.mlir")
    generator = torch.Generator().manual_seed(seed)
    inputs = [random_input(shape, elt, generator, scale) for shape, elt in operands]
    saved = [t.clone() for t in inputs]
    (out,) = hir.execute(module, inputs)
    check_close(out, reference(*saved))
    for before, after in zip(saved, inputs):
        assert torch.equal(before, after), "an input was modified"


# -- elementwise ----------------------------------------------------------------------------------

SHAPES: list[Shape] = [(), (7,), (3, 5), (2, 3, 4)]
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("elt", NUMERIC)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(op: str, elt: str, shape: Shape) -> None:
    run_one(op, [(shape, elt), (shape, elt)], (shape, elt), BINARY[op])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("elt", FLOATS)
def test_div(elt: str, shape: Shape) -> None:
    run_one("div", [(shape, elt), (shape, elt)], (shape, elt), torch.div)


UNARY_ANY = {"neg": torch.neg, "abs": torch.abs, "relu": torch.relu}
UNARY_FLOAT = {"exp": torch.exp, "tanh": torch.tanh}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("elt", NUMERIC)
@pytest.mark.parametrize("op", sorted(UNARY_ANY))
def test_unary(op: str, elt: str, shape: Shape) -> None:
    run_one(op, [(shape, elt)], (shape, elt), UNARY_ANY[op])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_unary_float(op: str, elt: str, shape: Shape) -> None:
    run_one(op, [(shape, elt)], (shape, elt), UNARY_FLOAT[op])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("elt", [*NUMERIC, "i1"])
def test_set(elt: str, shape: Shape) -> None:
    module = hir.parse(one_op_module("set", [(shape, elt)], (shape, elt)))
    x = random_input(shape, elt, torch.Generator().manual_seed(1))
    (out,) = hir.execute(module, [x])
    check_close(out, x)
    if x.numel():
        assert out.data_ptr() != x.data_ptr(), "fusion.set must copy"


def test_set_with_stream_encoding() -> None:
    """The parallel encoding of the result type does not change what the reference computes."""
    text = """
    func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
      %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
      func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    }
    """
    x = torch.randn(4, 8)
    (out,) = hir.execute(hir.parse(text), [x])
    check_close(out, x)


CASTS = [
    ("f32", "f64"),
    ("f64", "f32"),
    ("f32", "bf16"),
    ("bf16", "f32"),
    ("f32", "f16"),
    ("f16", "f64"),
    ("f32", "i32"),
    ("f64", "i64"),
    ("i32", "f32"),
    ("i64", "bf16"),
    ("i32", "i64"),
    ("i64", "i32"),
    ("f32", "i1"),
    ("i1", "f32"),
    ("f32", "f32"),
]


@pytest.mark.parametrize("shape", [(), (3, 5)], ids=str)
@pytest.mark.parametrize(("src", "dst"), CASTS, ids=[f"{a}-{b}" for a, b in CASTS])
def test_cast(src: str, dst: str, shape: Shape) -> None:
    # Scaled so that float -> int casts give values other than 0 and -0.
    run_one("cast", [(shape, src)], (shape, dst), lambda x: x.to(DTYPES[dst]), scale=10.0)


# -- shape ops ------------------------------------------------------------------------------------

BROADCASTS: list[tuple[Shape, list[int], Shape]] = [
    ((4,), [0], (3, 4)),
    ((4,), [1], (4, 3)),
    ((3, 4), [0, 2], (2, 3, 5, 4)),
    ((3, 4), [2], (3, 4, 2)),
    ((), [0, 1], (2, 3)),
    ((2, 3), [], (2, 3)),
]


def expand_reference(dims: list[int], result: Shape) -> Callable[[torch.Tensor], torch.Tensor]:
    def reference(x: torch.Tensor) -> torch.Tensor:
        for d in sorted(dims):
            x = x.unsqueeze(d)
        return x.expand(result)

    return reference


@pytest.mark.parametrize("elt", ["f32", "bf16", "i64"])
@pytest.mark.parametrize(("shape", "dims", "result"), BROADCASTS, ids=str)
def test_broadcast(shape: Shape, dims: list[int], result: Shape, elt: str) -> None:
    run_one("broadcast", [(shape, elt)], (result, elt), expand_reference(dims, result), attrs=f"dims = {dims}")


PERMUTES: list[tuple[Shape, list[int]]] = [
    ((3, 5), [1, 0]),
    ((3, 5), [0, 1]),
    ((2, 3, 4), [2, 0, 1]),
    ((2, 3, 4), [0, 2, 1]),
    ((2, 3, 4, 5), [3, 1, 0, 2]),
]


@pytest.mark.parametrize("elt", ["f32", "f64", "bf16", "i32"])
@pytest.mark.parametrize(("shape", "perm"), PERMUTES, ids=str)
def test_permute(shape: Shape, perm: list[int], elt: str) -> None:
    result = tuple(shape[p] for p in perm)
    run_one("permute", [(shape, elt)], (result, elt), lambda x: x.permute(perm), attrs=f"perm = {perm}")


# -- reductions -----------------------------------------------------------------------------------

REDUCTIONS: list[tuple[Shape, list[int]]] = [
    ((7,), [0]),
    ((3, 5), [0]),
    ((3, 5), [1]),
    ((3, 5), [0, 1]),
    ((2, 3, 4), [1]),
    ((2, 3, 4), [2, 0]),
    ((2, 3, 4), [0, 1, 2]),
]
REDUCE = {
    "sum": lambda x, dims: torch.sum(x, dims).to(x.dtype),  # torch.sum widens integers; fusion keeps the type
    "max": torch.amax,
    "min": torch.amin,
}


@pytest.mark.parametrize("elt", NUMERIC)
@pytest.mark.parametrize(("shape", "dims"), REDUCTIONS, ids=str)
@pytest.mark.parametrize("op", sorted(REDUCE))
def test_reduction(op: str, shape: Shape, dims: list[int], elt: str) -> None:
    result = tuple(d for i, d in enumerate(shape) if i not in dims)
    run_one(op, [(shape, elt)], (result, elt), lambda x: REDUCE[op](x, dims), attrs=f"dims = {dims}")


# -- contractions ---------------------------------------------------------------------------------

MATMULS: list[tuple[Shape, Shape, Shape]] = [
    ((6,), (6,), ()),  # dot
    ((6,), (6, 4), (4,)),  # vector x matrix
    ((3, 6), (6,), (3,)),  # matrix x vector
    ((3, 6), (6, 4), (3, 4)),
    ((2, 3, 6), (2, 6, 4), (2, 3, 4)),  # batched
    ((2, 3, 6), (6, 4), (2, 3, 4)),  # batch broadcast: b has no batch axis
    ((3, 6), (2, 6, 4), (2, 3, 4)),
    ((2, 1, 3, 6), (5, 6, 4), (2, 5, 3, 4)),  # batch axes broadcast against each other
    ((6,), (2, 6, 4), (2, 4)),
    ((2, 3, 6), (6,), (2, 3)),
]


@pytest.mark.parametrize("elt", NUMERIC)
@pytest.mark.parametrize(("a", "b", "result"), MATMULS, ids=str)
def test_matmul(a: Shape, b: Shape, result: Shape, elt: str) -> None:
    run_one("matmul", [(a, elt), (b, elt)], (result, elt), torch.matmul)


LINEARS: list[tuple[Shape, Shape, Shape | None, Shape]] = [
    ((4, 8), (16, 8), None, (4, 16)),
    ((4, 8), (16, 8), (16,), (4, 16)),
    ((4, 8), (16, 8), (), (4, 16)),  # scalar bias
    ((8,), (16, 8), (16,), (16,)),  # 1-D input
    ((4, 8), (8,), None, (4,)),  # 1-D weight
    ((4, 8), (8,), (), (4,)),  # 1-D weight, scalar bias
    ((2, 4, 8), (16, 8), None, (2, 4, 16)),  # 3-D input
    ((2, 4, 8), (16, 8), (16,), (2, 4, 16)),
    ((2, 3, 4, 8), (5, 8), (5,), (2, 3, 4, 5)),
]


@pytest.mark.parametrize("elt", ["f32", "f64", "bf16", "i64"])
@pytest.mark.parametrize(("x", "w", "bias", "result"), LINEARS, ids=str)
def test_linear(x: Shape, w: Shape, bias: Shape | None, result: Shape, elt: str) -> None:
    operands = [(x, elt), (w, elt)] + ([(bias, elt)] if bias is not None else [])
    run_one("linear", operands, (result, elt), linear_reference)


def linear_reference(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    if w.dim() == 1 and bias is not None:  # F.linear rejects a bias with a 1-D weight
        return torch.matmul(x, w) + bias
    return F.linear(x, w, bias)


# -- whole functions ------------------------------------------------------------------------------

CHAIN = """
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>) {
  %h = fusion.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %r = fusion.relu %h : tensor<4x16xf32> -> tensor<4x16xf32>
  %t = fusion.tanh %h : tensor<4x16xf32> -> tensor<4x16xf32>
  %m = fusion.mul %r, %t : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %p = fusion.permute %m perm = [1, 0] : tensor<4x16xf32> -> tensor<16x4xf32>
  %s = fusion.sum %p dims = [1] : tensor<16x4xf32> -> tensor<16xf32>
  %e = fusion.exp %s : tensor<16xf32> -> tensor<16xf32>
  %bb = fusion.broadcast %e dims = [0] : tensor<16xf32> -> tensor<4x16xf32>
  %d = fusion.div %m, %bb : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  func.return %d, %s : tensor<4x16xf32>, tensor<16xf32>
}
"""


def chain_reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> list[torch.Tensor]:
    h = F.linear(x, w, b)
    m = torch.relu(h) * torch.tanh(h)
    s = m.t().sum(1)
    return [m / torch.exp(s).expand(4, 16), s]


def test_chain_of_ops_with_two_outputs() -> None:
    generator = torch.Generator().manual_seed(3)
    inputs = [random_input(s, "f32", generator) for s in [(4, 8), (16, 8), (16,)]]
    outputs = hir.execute(hir.parse(CHAIN), inputs)
    assert len(outputs) == 2
    for out, ref in zip(outputs, chain_reference(*inputs)):
        check_close(out, ref)


def test_compiled_program_runs_many_times() -> None:
    program = hir.compile_program(hir.parse(CHAIN))
    generator = torch.Generator().manual_seed(4)
    for _ in range(3):
        inputs = [random_input(s, "f32", generator) for s in [(4, 8), (16, 8), (16,)]]
        for out, ref in zip(program(inputs), chain_reference(*inputs)):
            check_close(out, ref)


def test_preallocated_outputs_at_fusion_level() -> None:
    generator = torch.Generator().manual_seed(5)
    inputs = [random_input(s, "f32", generator) for s in [(4, 8), (16, 8), (16,)]]
    bufs = [torch.full((4, 16), float("nan")), torch.full((16,), float("nan"))]
    outputs = hir.execute(hir.parse(CHAIN), inputs, outputs=bufs)
    for out, buf, ref in zip(outputs, bufs, chain_reference(*inputs)):
        assert out is buf
        check_close(buf, ref)


def test_dynamic_extents() -> None:
    text = """
    func.func @main(%a: tensor<?x5xf32>, %b: tensor<?x5xf32>) -> tensor<?xf32> {
      %c = fusion.mul %a, %b : tensor<?x5xf32>, tensor<?x5xf32> -> tensor<?x5xf32>
      %s = fusion.sum %c dims = [1] : tensor<?x5xf32> -> tensor<?xf32>
      func.return %s : tensor<?xf32>
    }
    """
    program = hir.compile_program(hir.parse(text))
    for rows in (1, 3, 9):
        a, b = torch.randn(rows, 5), torch.randn(rows, 5)
        (out,) = program([a, b])
        check_close(out, (a * b).sum(1))


@pytest.mark.parametrize(
    ("op", "attrs", "operand", "result"),
    [
        ("broadcast", "dims = [0]", (4,), (3, 4)),
        ("permute", "perm = [0, 1]", (3, 4), (3, 4)),
        ("cast", "", (3, 4), (3, 4)),
        ("set", "", (3, 4), (3, 4)),
    ],
)
def test_results_do_not_alias_inputs(op: str, attrs: str, operand: Shape, result: Shape) -> None:
    """Value semantics: a result is a tensor of its own, which the caller may write."""
    x = torch.randn(operand)
    (out,) = hir.execute(hir.parse(one_op_module(op, [(operand, "f32")], (result, "f32"), attrs)), [x])
    before = x.clone()
    out.fill_(7.0)
    assert torch.equal(x, before)


def test_returned_argument_does_not_alias_the_input() -> None:
    text = "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  func.return %x : tensor<3xf32>\n}\n"
    x = torch.randn(3)
    (out,) = hir.execute(hir.parse(text), [x])
    check_close(out, x)
    assert out.data_ptr() != x.data_ptr()


def test_reshape_into_copies_once_and_handles_strided_outputs() -> None:
    """A reshape of a permute's view into a buffer: through a view of the buffer, or, where the
    buffer has none in that shape (a transposed buffer), through `x.reshape`."""
    from hir.runtime.kernels import _reshape_into

    x = torch.randn(2, 3, 4).permute(0, 2, 1)  # strided: reshape would copy it
    out = torch.empty(2, 12)
    assert _reshape_into(out, x) is out
    torch.testing.assert_close(out, x.reshape(2, 12))
    transposed = torch.empty(12, 2).t()  # no view in x's shape
    assert _reshape_into(transposed, x) is transposed
    torch.testing.assert_close(transposed, x.reshape(2, 12))


@pytest.mark.parametrize("transposed", [False, True], ids=["row-major", "column-major"])
@pytest.mark.parametrize("axis", [0, 1])
def test_a_gemm_writes_a_block_of_a_larger_matrix_in_place(
    axis: int, transposed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A product into a row or column block of a matrix (a sharded weight's gradient block in its
    full-shaped `.grad`), row- or column-major, with a leading unit axis: one GEMM, no copy."""
    from hir.runtime.kernels import _matmul_into

    a, b = torch.randn(1, 6, 5), torch.randn(5, 4)
    full = torch.zeros(8, 12).t() if transposed else torch.zeros(12, 8)
    block = full.narrow(0, 4, 6) if axis == 0 else full.narrow(1, 2, 4)
    block = block.narrow(1, 0, 4) if axis == 0 else block.narrow(0, 3, 6)
    assert not block.is_contiguous()
    copies: list[tuple[int, ...]] = []
    original = torch.Tensor.copy_

    def copy_(self: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        copies.append(tuple(self.shape))
        return original(self, src, non_blocking)

    monkeypatch.setattr(torch.Tensor, "copy_", copy_)
    _matmul_into(block.unsqueeze(0), a, b)
    monkeypatch.undo()
    torch.testing.assert_close(block, (a @ b)[0])
    assert copies == []
    torch.testing.assert_close(full.sum(), block.sum())  # nothing outside the block written
