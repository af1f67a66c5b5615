"""
The fusion ops of models (activations, pow, compare/where, full, reshape/slice/concat, mean,
softmax, norms, more casts) through `hir.execute` on one-op modules, against references computed
independently in float64 from their formulas (or by Python indexing), on random inputs in several
dtypes; their axis maps; and their `out=` kernels writing into strided views.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pytest
import torch
from test_runtime_fusion_ops import (
    DTYPES,
    FLOATS,
    NUMERIC,
    Shape,
    check_close,
    one_op_module,
    random_input,
    tensor_type,
)
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.utils.exceptions import VerifyException

import hir
from hir.dialects import fusion
from hir.dialects import shape_rules as rules
from hir.runtime.kernels import out_kernel


def run(text: str, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """Runs `main` of `text` on copies of `inputs`, checking that they stay unmodified."""
    given = [x.clone() for x in inputs]
    (out,) = hir.execute(hir.parse(text), given)
    for before, after in zip(inputs, given):
        assert torch.equal(before, after), "an input was modified"
    return out


def in_float64(formula: Callable[..., torch.Tensor], dtype: torch.dtype) -> Callable[..., torch.Tensor]:
    """The formula evaluated in float64, rounded to `dtype` once at the end."""
    return lambda *xs: formula(*[x.double() if x.dtype.is_floating_point else x for x in xs]).to(dtype)


def inputs_for(operands: Sequence[tuple[Shape, str]], seed: int, scale: float = 1.0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [random_input(shape, elt, generator, scale) for shape, elt in operands]


# -- float elementwise ----------------------------------------------------------------------------

SQRT2 = math.sqrt(2.0)
UNARY_FORMULAS: dict[str, tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = {
    "sigmoid": ("", lambda x: 1 / (1 + torch.exp(-x))),
    "silu": ("", lambda x: x / (1 + torch.exp(-x))),
    "gelu_none": ("approximate = none", lambda x: 0.5 * x * (1 + torch.erf(x / SQRT2))),
    "gelu_tanh": (
        "approximate = tanh",
        lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    ),
}
POSITIVE_FORMULAS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sqrt": lambda x: x**0.5,
    "rsqrt": lambda x: x**-0.5,
    "reciprocal": lambda x: 1 / x,
}


@pytest.mark.parametrize("shape", [(), (7,), (3, 5)], ids=str)
@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize("case", sorted(UNARY_FORMULAS))
def test_activation(case: str, elt: str, shape: Shape) -> None:
    attrs, formula = UNARY_FORMULAS[case]
    text = one_op_module(case.split("_")[0], [(shape, elt)], (shape, elt), attrs)
    (x,) = inputs_for([(shape, elt)], seed=1, scale=3.0)
    check_close(run(text, [x]), in_float64(formula, DTYPES[elt])(x))


@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize("op", sorted(POSITIVE_FORMULAS))
def test_positive_domain(op: str, elt: str) -> None:
    (x,) = inputs_for([((4, 6), elt)], seed=2)
    x = (x.abs() + 0.25).to(DTYPES[elt])  # away from 0, where they are defined and tame
    check_close(
        run(one_op_module(op, [((4, 6), elt)], ((4, 6), elt)), [x]), in_float64(POSITIVE_FORMULAS[op], x.dtype)(x)
    )


@pytest.mark.parametrize("elt", FLOATS)
def test_pow(elt: str) -> None:
    base, exponent = inputs_for([((4, 6), elt), ((4, 6), elt)], seed=3)
    base = (base.abs() + 0.5).to(base.dtype)
    text = one_op_module("pow", [((4, 6), elt), ((4, 6), elt)], ((4, 6), elt))
    check_close(
        run(text, [base, exponent]), in_float64(lambda a, b: torch.exp(b * torch.log(a)), base.dtype)(base, exponent)
    )


def test_pow_by_a_broadcast_scalar() -> None:
    """`x ** 2` as the importer writes it: a 0-d fusion.full, broadcast, then fusion.pow."""
    text = """
    func.func @main(%x: tensor<3x4xbf16>) -> tensor<3x4xbf16> {
      %two = fusion.full 2 : tensor<bf16>
      %e = fusion.broadcast %two dims = [0, 1] : tensor<bf16> -> tensor<3x4xbf16>
      %y = fusion.pow %x, %e : tensor<3x4xbf16>, tensor<3x4xbf16> -> tensor<3x4xbf16>
      func.return %y : tensor<3x4xbf16>
    }
    """
    (x,) = inputs_for([((3, 4), "bf16")], seed=4)
    check_close(run(text, [x]), in_float64(lambda a: a * a, torch.bfloat16)(x))


# -- comparisons and where ------------------------------------------------------------------------

PREDICATES = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


@pytest.mark.parametrize("elt", [*NUMERIC, "i1"])
@pytest.mark.parametrize("predicate", sorted(PREDICATES))
def test_compare(predicate: str, elt: str) -> None:
    a, b, pick = inputs_for([((5, 6), elt), ((5, 6), elt), ((5, 6), "i1")], seed=5)
    b = torch.where(pick, a, b)  # many equal pairs, so that eq, le and ge see ties
    text = one_op_module("compare", [((5, 6), elt), ((5, 6), elt)], ((5, 6), "i1")).replace(
        "fusion.compare %a0", f"fusion.compare {predicate}, %a0"
    )
    out = run(text, [a, b])
    expected = torch.tensor(
        [PREDICATES[predicate](x, y) for x, y in zip(a.double().flatten().tolist(), b.double().flatten().tolist())]
    ).reshape(5, 6)
    assert out.dtype == torch.bool
    assert torch.equal(out, expected)
    assert 0 < int(expected.sum()) < expected.numel() or (predicate in ("eq", "ne") and elt == "i1")


@pytest.mark.parametrize("elt", [*NUMERIC, "i1"])
def test_where(elt: str) -> None:
    operands = [((4, 6), "i1"), ((4, 6), elt), ((4, 6), elt)]
    condition, a, b = inputs_for(operands, seed=6)
    out = run(one_op_module("where", operands, ((4, 6), elt)), [condition, a, b])
    expected = [
        x if c else y for c, x, y in zip(condition.flatten().tolist(), a.flatten().tolist(), b.flatten().tolist())
    ]
    check_close(out, torch.tensor(expected, dtype=a.dtype).reshape(4, 6))


# -- constants ------------------------------------------------------------------------------------

FULLS: list[tuple[str, str, object]] = [
    ("5.000000e-01", "f32", 0.5),
    ("-1.250000e+00", "bf16", -1.25),
    ("3", "f64", 3.0),
    ("-inf", "f16", -math.inf),
    ("7", "i32", 7),
    ("-9", "i64", -9),
    ("true", "i1", True),
    ("false", "i1", False),
]


@pytest.mark.parametrize("shape", [(), (3, 4)], ids=str)
@pytest.mark.parametrize(("literal", "elt", "value"), FULLS, ids=[f"{e}:{lit}" for lit, e, _ in FULLS])
def test_full(literal: str, elt: str, value: object, shape: Shape) -> None:
    t = tensor_type(shape, elt)
    text = f"func.func @main() -> {t} {{\n  %c = fusion.full {literal} : {t}\n  func.return %c : {t}\n}}\n"
    out = run(text, [])
    assert out.dtype == DTYPES[elt]
    assert tuple(out.shape) == shape
    assert all(v == value for v in out.flatten().tolist())


def test_full_nan() -> None:
    out = run(
        "func.func @main() -> tensor<2xf32> {\n  %c = fusion.full nan : tensor<2xf32>\n  func.return %c : tensor<2xf32>\n}\n",
        [],
    )
    assert out.isnan().all()


# -- shape ops ------------------------------------------------------------------------------------

RESHAPES: list[tuple[Shape, Shape]] = [
    ((4, 6, 8), (4, 48)),
    ((4, 48), (4, 6, 8)),
    ((2, 3, 4), (6, 4)),
    ((2, 3, 4), (24,)),
    ((6, 4), (2, 3, 2, 2)),
    ((4, 1, 8), (4, 8)),
    ((4, 8), (1, 4, 8, 1)),
    ((1, 1), ()),
    ((2, 6), (3, 4)),  # no axis kept: 2x6 and 3x4 form one group
    ((1, 1, 4, 2), (1, 4, 2)),  # extent-1 axes paired
    ((2, 1, 3, 1), (6, 1)),
]


@pytest.mark.parametrize("elt", ["f32", "bf16", "i64", "i1"])
@pytest.mark.parametrize(("src", "dst"), RESHAPES, ids=str)
def test_reshape(src: Shape, dst: Shape, elt: str) -> None:
    (x,) = inputs_for([(src, elt)], seed=7)
    out = run(one_op_module("reshape", [(src, elt)], (dst, elt)), [x])
    assert out.flatten().tolist() == x.flatten().tolist()
    assert tuple(out.shape) == dst


def test_reshape_dynamic() -> None:
    """`?` extents come from the operand axis they face, whatever their value at run time."""
    text = one_op_module("reshape", [((-1, 6, 8), "f32")], ((-1, 48), "f32")).replace("-1x", "?x")
    program = hir.compile_program(hir.parse(text))
    for rows in (1, 3, 5):
        x = torch.randn(rows, 6, 8)
        (out,) = program([x])
        assert torch.equal(out, x.reshape(rows, 48))


SLICES: list[tuple[Shape, list[int], list[int], Shape]] = [
    ((4, 8), [0, 5], [1, 1], (4, 3)),
    ((4, 8), [1, 0], [2, 3], (2, 3)),
    ((4, 8), [3, 7], [1, 1], (1, 1)),
    ((4, 8), [4, 0], [1, 1], (0, 8)),
    ((2, 3, 9), [1, 0, 2], [1, 1, 3], (1, 3, 3)),
    ((7,), [6], [5], (1,)),
]


@pytest.mark.parametrize("elt", ["f32", "f16", "i32", "i1"])
@pytest.mark.parametrize(("src", "offsets", "strides", "dst"), SLICES, ids=str)
def test_slice(src: Shape, offsets: list[int], strides: list[int], dst: Shape, elt: str) -> None:
    (x,) = inputs_for([(src, elt)], seed=8)
    attrs = f"offsets = {offsets} strides = {strides}"
    out = run(one_op_module("slice", [(src, elt)], (dst, elt), attrs), [x])
    index = tuple(range(o, o + n * s, s) for o, s, n in zip(offsets, strides, dst))
    expected = x
    for axis, kept in enumerate(index):  # one axis at a time, by index lists: independent of slicing
        expected = expected.index_select(axis, torch.tensor(kept, dtype=torch.long))
    check_close(out, expected)


def test_slice_dynamic_axis_kept_whole() -> None:
    text = one_op_module("slice", [((-1, 8), "f32")], ((-1, 2), "f32"), "offsets = [0, 3] strides = [1, 4]")
    program = hir.compile_program(hir.parse(text.replace("-1x", "?x")))
    for rows in (1, 4):
        x = torch.randn(rows, 8)
        (out,) = program([x])
        assert torch.equal(out, torch.stack([x[:, 3], x[:, 7]], dim=1))


CONCATS: list[tuple[list[Shape], int, Shape]] = [
    ([(4, 2), (4, 6)], 1, (4, 8)),
    ([(1, 3), (2, 3), (3, 3)], 0, (6, 3)),
    ([(2, 3, 1), (2, 3, 2)], 2, (2, 3, 3)),
    ([(5,)], 0, (5,)),
    ([(0, 4), (2, 4)], 0, (2, 4)),
]


@pytest.mark.parametrize("elt", ["f32", "bf16", "i64", "i1"])
@pytest.mark.parametrize(("shapes", "dim", "dst"), CONCATS, ids=str)
def test_concat(shapes: list[Shape], dim: int, dst: Shape, elt: str) -> None:
    operands = [(s, elt) for s in shapes]
    xs = inputs_for(operands, seed=9)
    out = run(one_op_module("concat", operands, (dst, elt), f"dim = {dim}"), xs)
    assert tuple(out.shape) == dst
    start = 0
    for x in xs:  # each operand is found where it belongs
        assert torch.equal(out.narrow(dim, start, x.shape[dim]), x)
        start += x.shape[dim]


# -- reductions and normalizations ----------------------------------------------------------------


@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize(("shape", "dims"), [((7,), [0]), ((3, 5), [1]), ((2, 3, 4), [2, 0])], ids=str)
def test_mean(shape: Shape, dims: list[int], elt: str) -> None:
    result = tuple(d for i, d in enumerate(shape) if i not in dims)
    (x,) = inputs_for([(shape, elt)], seed=10)
    out = run(one_op_module("mean", [(shape, elt)], (result, elt), f"dims = {dims}"), [x])
    count = math.prod(shape[d] for d in dims)
    check_close(out, in_float64(lambda v: v.sum(dims) / count, x.dtype)(x))


def softmax_formula(x: torch.Tensor, dim: int) -> torch.Tensor:
    e = torch.exp(x - x.amax(dim, keepdim=True))
    return e / e.sum(dim, keepdim=True)


@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize(("shape", "dim"), [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1)], ids=str)
def test_softmax(shape: Shape, dim: int, elt: str) -> None:
    (x,) = inputs_for([(shape, elt)], seed=11, scale=4.0)
    out = run(one_op_module("softmax", [(shape, elt)], (shape, elt), f"dim = {dim}"), [x])
    check_close(out, in_float64(lambda v: softmax_formula(v, dim), x.dtype)(x))


def norm_inputs(shape: Shape, count: int, elt: str, affine: int) -> list[torch.Tensor]:
    normalized = shape[len(shape) - count :]
    (x, *rest) = inputs_for([(shape, elt)] + [(normalized, elt)] * affine, seed=12, scale=2.0)
    return [(x + 3.0).to(x.dtype), *rest]  # a mean far from 0: the normalization must remove it


def layer_norm_formula(count: int, eps: float) -> Callable[..., torch.Tensor]:
    def formula(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None) -> torch.Tensor:
        dims = list(range(x.dim() - count, x.dim()))
        centered = x - x.mean(dims, keepdim=True)
        y = centered / torch.sqrt((centered**2).mean(dims, keepdim=True) + eps)
        return y * (weight if weight is not None else 1) + (bias if bias is not None else 0)

    return formula


def rms_norm_formula(count: int, eps: float) -> Callable[..., torch.Tensor]:
    def formula(x: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
        dims = list(range(x.dim() - count, x.dim()))
        return x / torch.sqrt((x**2).mean(dims, keepdim=True) + eps) * (weight if weight is not None else 1)

    return formula


NORM_SHAPES: list[tuple[Shape, int]] = [((8,), 1), ((4, 8), 1), ((2, 3, 8), 1), ((2, 3, 8), 2)]


@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize("affine", [0, 1, 2], ids=["plain", "weight", "weight+bias"])
@pytest.mark.parametrize(("shape", "count"), NORM_SHAPES, ids=str)
def test_layer_norm(shape: Shape, count: int, affine: int, elt: str) -> None:
    inputs = norm_inputs(shape, count, elt, affine)
    dims = list(range(len(shape) - count, len(shape)))
    operands = [(tuple(t.shape), elt) for t in inputs]
    out = run(one_op_module("layer_norm", operands, (shape, elt), f"dims = {dims} eps = 1.000000e-05"), inputs)
    check_close(out, in_float64(layer_norm_formula(count, 1e-5), inputs[0].dtype)(*inputs))


@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize("affine", [0, 1], ids=["plain", "weight"])
@pytest.mark.parametrize(("shape", "count"), NORM_SHAPES, ids=str)
def test_rms_norm(shape: Shape, count: int, affine: int, elt: str) -> None:
    inputs = norm_inputs(shape, count, elt, affine)
    dims = list(range(len(shape) - count, len(shape)))
    operands = [(tuple(t.shape), elt) for t in inputs]
    out = run(one_op_module("rms_norm", operands, (shape, elt), f"dims = {dims} eps = 1.000000e-06"), inputs)
    check_close(out, in_float64(rms_norm_formula(count, 1e-6), inputs[0].dtype)(*inputs))


# -- casts to and from booleans and integers ------------------------------------------------------

CASTS = [("i1", "i64"), ("i64", "i1"), ("bf16", "i1"), ("i1", "bf16"), ("f16", "i32"), ("i32", "i1"), ("i32", "f16")]


@pytest.mark.parametrize(("src", "dst"), CASTS, ids=[f"{a}-{b}" for a, b in CASTS])
def test_more_casts(src: str, dst: str) -> None:
    (x,) = inputs_for([((4, 6), src)], seed=13, scale=10.0)
    x = torch.where(torch.arange(24).reshape(4, 6) % 5 == 0, torch.zeros((), dtype=x.dtype), x)  # zeros too: -> False
    out = run(one_op_module("cast", [((4, 6), src)], ((4, 6), dst)), [x])
    expected = [float(int(v)) if DTYPES[dst] != torch.bool else v != 0 for v in x.double().flatten().tolist()]
    assert torch.equal(out, torch.tensor(expected).reshape(4, 6).to(DTYPES[dst]))


# -- out= kernels into strided views (the launch into a stream loop's slice) ----------------------


@pytest.mark.parametrize(
    ("text", "shapes"),
    [
        (one_op_module("concat", [((4, 2), "f32"), ((4, 3), "f32")], ((4, 5), "f32"), "dim = 1"), [(4, 2), (4, 3)]),
        (one_op_module("reshape", [((2, 3, 4), "f32")], ((6, 4), "f32")), [(2, 3, 4)]),
        (one_op_module("slice", [((4, 8), "f32")], ((2, 4), "f32"), "offsets = [1, 0] strides = [2, 2]"), [(4, 8)]),
        (one_op_module("softmax", [((3, 5), "f32")], ((3, 5), "f32"), "dim = 1"), [(3, 5)]),
        (one_op_module("gelu", [((3, 5), "f32")], ((3, 5), "f32"), "approximate = tanh"), [(3, 5)]),
        (one_op_module("gelu", [((3, 5), "f32")], ((3, 5), "f32"), "approximate = none"), [(3, 5)]),
        (one_op_module("silu", [((3, 5), "f32")], ((3, 5), "f32")), [(3, 5)]),
        (one_op_module("layer_norm", [((3, 5), "f32")], ((3, 5), "f32"), "dims = [1] eps = 1.000000e-05"), [(3, 5)]),
        (one_op_module("mean", [((3, 5), "f32")], ((3,), "f32"), "dims = [1]"), [(3, 5)]),
    ],
    ids=["concat", "reshape", "slice", "softmax", "gelu-tanh", "gelu", "silu", "layer_norm", "mean"],
)
def test_out_kernel_into_strided_view(text: str, shapes: list[Shape]) -> None:
    module = hir.parse(text)
    op = next(o for o in module.walk() if isinstance(o, fusion.FusionOp))
    xs = [torch.randn(s) for s in shapes]
    expected = run(text, xs)
    target = torch.full((*expected.shape, 2), float("nan"))[..., 1]  # every other element: a strided view
    out_kernel(op)(target, *xs)
    assert torch.equal(target, expected)
    contiguous = torch.full(expected.shape, float("nan"))
    out_kernel(op)(contiguous, *xs)
    assert torch.equal(contiguous, expected)
    full = hir.parse(
        "func.func @main() -> tensor<3x4xi32> {\n  %c = fusion.full 5 : tensor<3x4xi32>\n  func.return %c : tensor<3x4xi32>\n}\n"
    )
    into = torch.zeros(3, 4, 2, dtype=torch.int32)[..., 0]
    out_kernel(next(o for o in full.walk() if isinstance(o, fusion.FullOp)))(into)
    assert (into == 5).all()


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((1, 2, 6, 4), (1, 1, 1, 4, 5)),  # a tensor-parallel layer: the shard's weight broadcast over chunks
        ((3, 6, 4), (4, 5)),  # a batch against a matrix
        ((3, 6, 4), (1, 4, 5)),
        ((2, 3, 6, 4), (3, 4, 5)),  # a real batch of weights: torch.matmul's batched GEMM
    ],
)
@pytest.mark.parametrize("layout", ["contiguous", "strided a", "transposed b"])
def test_matmul_into(a_shape: tuple[int, ...], b_shape: tuple[int, ...], layout: str) -> None:
    """The out= matmul (one GEMM over all rows for a broadcast weight) against torch.matmul."""
    a = torch.randn(*a_shape[:-1], 2 * a_shape[-1])[..., ::2] if layout == "strided a" else torch.randn(a_shape)
    b = (
        torch.randn(*b_shape[:-2], b_shape[-1], b_shape[-2]).transpose(-1, -2)
        if layout == "transposed b"
        else torch.randn(b_shape)
    )
    expected = torch.matmul(a, b)
    out = torch.full(expected.shape, float("nan"))
    text = one_op_module("matmul", [(a_shape, "f32"), (b_shape, "f32")], (tuple(expected.shape), "f32"))
    out_kernel(next(o for o in hir.parse(text).walk() if isinstance(o, fusion.MatmulOp)))(out, a, b)
    torch.testing.assert_close(out, expected)


# -- axis maps ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dst", "expected"),
    [
        ((4, 6, 8), (4, 48), (((0, 0),), ())),  # the leading axis is kept, 48 = 6x8 is merged
        ((4, 48), (4, 6, 8), (((0, 0),), (), ())),  # split: neither part maps
        ((2, 3, 4), (6, 4), ((), ((0, 2),))),  # the trailing axis is kept behind a merge
        ((4, 1, 8), (4, 8), (((0, 0),), ((0, 2),))),  # extent-1 axes belong to no group
        ((4, 8), (1, 4, 8, 1), ((), ((0, 0),), ((0, 1),), ())),
        # extent-1 axes between the same groups pair up from the group after them backwards: a
        # device axis of extent 1 (a one-device mesh) survives dropping a stacked axis before it
        ((1, 1, 4, 2), (1, 4, 2), (((0, 1),), ((0, 2),), ((0, 3),))),
        ((1, 4), (1, 1, 4), ((), ((0, 0),), ((0, 1),))),
        ((2, 1, 3, 1), (6, 1), ((), ((0, 3),))),
        ((2, 6), (3, 4), ((), ())),
        ((DYNAMIC_INDEX, 6, 8), (DYNAMIC_INDEX, 48), (((0, 0),), ())),
    ],
    ids=str,
)
def test_reshape_axis_map(src: Shape, dst: Shape, expected: rules.AxisMap) -> None:
    assert rules.reshape_map(src, dst) == expected


def test_reshape_keeps_an_axis_only_where_slicing_commutes() -> None:
    """Where the map says result axis r is operand axis a, result[.., i, ..] == reshape(x[.., i, ..])."""
    for src, dst in RESHAPES:
        x = torch.randn(src)
        y = x.reshape(dst)
        for r, sources in enumerate(rules.reshape_map(src, dst)):
            for _, a in sources:
                for i in range(dst[r]):
                    sliced_dst = dst[:r] + dst[r + 1 :]
                    assert torch.equal(y.select(r, i), x.select(a, i).reshape(sliced_dst))


def test_axis_maps_of_the_new_ops() -> None:
    assert rules.slice_rule((4, 8), [0, 5], [1, 1], (4, 3)) == (((0, 0),), ())
    assert rules.slice_rule((4, 8), [0, 0], [1, 2], (4, 4)) == (((0, 0),), ())  # strided: not kept
    assert rules.concat_rule([(4, 2), (4, 6)], 1) == ((4, 8), (((0, 0), (1, 0)), ()))
    assert rules.concat_rule([(DYNAMIC_INDEX, 2), (3, 2)], 0)[0] == (DYNAMIC_INDEX, 2)
    assert rules.normalize_map(3, 3, [1, 2]) == (((0, 0),), (), ())
    assert rules.generated_map(2) == ((), ())


def test_properties_without_axes_renumber() -> None:
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.utils.test_value import create_ssa_value

    x = create_ssa_value(TensorType(f32, [2, 4, 8]))
    softmax = fusion.SoftmaxOp(x, 2)
    assert softmax.properties_without_axes([0], 0)["dim"].value.data == 1
    norm = fusion.RmsNormOp(x, None, [1, 2], 1e-6)
    assert list(norm.properties_without_axes([0], 0)["dims"].iter_values()) == [0, 1]
    sliced = fusion.SliceOp(x, [0, 1, 2], [1, 1, 2], TensorType(f32, [2, 3, 3]))
    props = sliced.properties_without_axes([0], 0)
    assert list(props["offsets"].iter_values()) == [1, 2]
    assert list(props["strides"].iter_values()) == [1, 2]
    concat = fusion.ConcatOp([x, x], 2, TensorType(f32, [2, 4, 16]))
    assert concat.properties_without_axes([0, 0], 0)["dim"].value.data == 1


def test_reshape_rule_errors() -> None:
    with pytest.raises(VerifyException, match="the element counts differ"):
        rules.reshape_groups((4, 6), (5, 5))
    with pytest.raises(VerifyException, match="a dynamic extent must stay one axis of its own"):
        rules.reshape_groups((DYNAMIC_INDEX, 4), (2, DYNAMIC_INDEX))
    assert rules.reshape_groups((0, 4), (4, 0)) == []  # empty tensors reshape freely
