"""
The fusion and hir dialects through their Python API: axis maps of every fusion op, the
`#fusion.parallel` queries and rules, building ops with their `__init__` and verifying them, the
buffer-type helpers of hir, and located verification (`file:line:col`).
"""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    TensorType,
    bf16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.traits import MemoryEffectKind, get_effects
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.test_value import create_ssa_value

from hir.diagnostics import LocatedError, LocatedParser, format_parse_error, location_of, verify_located
from hir.dialects import fusion, hir
from hir.dialects import shape_rules as rules
from hir.dialects.parallel_encoding import ParallelAttr, layout_of, verify_tensor_type
from hir.tools.hir_opt import available_dialects

Q = DYNAMIC_INDEX


def tensor(*shape: int, element: Attribute = f32, enc: ParallelAttr | None = None) -> TensorType:
    return TensorType(element, shape, enc) if enc is not None else TensorType(element, shape)


def value(t: Attribute) -> SSAValue:
    return create_ssa_value(t)


def context() -> Context:
    ctx = Context()
    for name, factory in available_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str, name: str = "test.mlir") -> ModuleOp:
    return LocatedParser(context(), text, name).parse_module()


STREAM_SERIAL = ParallelAttr(["stream", "serial"])


# -- axis maps ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [fusion.SetOp, fusion.NegOp, fusion.AbsOp, fusion.ExpOp, fusion.ReluOp, fusion.TanhOp])
def test_axis_map_unary(op: type[fusion.UnaryFusionOp]):
    x = value(tensor(4, 8))
    assert op(x).axis_map() == (((0, 0),), ((0, 1),))


def test_axis_map_unary_keeps_axes_whatever_the_encoding():
    x = value(tensor(4, 8))
    set_op = fusion.SetOp(x, tensor(4, 8, enc=STREAM_SERIAL))
    cast = fusion.CastOp(x, tensor(4, 8, element=bf16, enc=ParallelAttr(["serial", "stream"])))
    assert set_op.axis_map() == cast.axis_map() == (((0, 0),), ((0, 1),))


@pytest.mark.parametrize("op", [fusion.AddOp, fusion.SubOp, fusion.MulOp, fusion.DivOp, fusion.MaximumOp])
def test_axis_map_binary(op: type[fusion.BinaryFusionOp]):
    a, b = value(tensor(2, 3, 4)), value(tensor(2, 3, 4))
    assert op(a, b).axis_map() == (((0, 0), (1, 0)), ((0, 1), (1, 1)), ((0, 2), (1, 2)))


def test_axis_map_scalar_elementwise():
    assert fusion.NegOp(value(tensor())).axis_map() == ()


@pytest.mark.parametrize(
    ("operand", "dims", "result", "expected"),
    [
        ((8,), [0], (4, 8), ((), ((0, 0),))),
        ((8,), [1], (8, 4), (((0, 0),), ())),
        ((8,), [0, 2], (2, 8, 3), ((), ((0, 0),), ())),
        ((4, 8), [1], (4, 2, 8), (((0, 0),), (), ((0, 1),))),
        ((), [0], (5,), ((),)),
    ],
)
def test_axis_map_broadcast(operand, dims, result, expected):
    op = fusion.ExpandOp(value(tensor(*operand)), dims, tensor(*result))
    op.verify()
    assert op.axis_map() == expected


@pytest.mark.parametrize(
    ("perm", "expected"),
    [
        ([0, 1, 2], (((0, 0),), ((0, 1),), ((0, 2),))),
        ([2, 0, 1], (((0, 2),), ((0, 0),), ((0, 1),))),
        ([1, 2, 0], (((0, 1),), ((0, 2),), ((0, 0),))),
    ],
)
def test_axis_map_permute(perm, expected):
    x = value(tensor(2, 3, 4))
    shape = tuple((2, 3, 4)[p] for p in perm)
    op = fusion.PermuteOp(x, perm, tensor(*shape))
    op.verify()
    assert op.axis_map() == expected


@pytest.mark.parametrize("op", [fusion.SumOp, fusion.MaxOp, fusion.MinOp])
@pytest.mark.parametrize(
    ("dims", "result", "expected"),
    [
        ([0], (4, 8), (((0, 1),), ((0, 2),))),
        ([1], (2, 8), (((0, 0),), ((0, 2),))),
        ([0, 2], (4,), (((0, 1),),)),
        ([2, 0], (4,), (((0, 1),),)),
        ([0, 1, 2], (), ()),
    ],
)
def test_axis_map_reductions(op: type[fusion.ReductionFusionOp], dims, result, expected):
    reduction = op(value(tensor(2, 4, 8)), dims, tensor(*result))
    reduction.verify()
    assert reduction.axis_map() == expected


@pytest.mark.parametrize(
    ("a", "b", "result", "expected"),
    [
        # 2-D: M from a, N from b; K is contracted.
        ((4, 8), (8, 16), (4, 16), (((0, 0),), ((1, 1),))),
        # 1-D promotion.
        ((8,), (8,), (), ()),
        ((4, 8), (8,), (4,), (((0, 0),),)),
        ((8,), (8, 16), (16,), (((1, 1),),)),
        ((8,), (3, 8, 16), (3, 16), (((1, 0),), ((1, 2),))),
        ((3, 4, 8), (8,), (3, 4), (((0, 0),), ((0, 1),))),
        # Batched, same batch.
        ((3, 4, 8), (3, 8, 16), (3, 4, 16), (((0, 0), (1, 0)), ((0, 1),), ((1, 2),))),
        # Batch only on one side: the other operand is passed whole.
        ((4, 8), (2, 8, 16), (2, 4, 16), (((1, 0),), ((0, 0),), ((1, 2),))),
        ((2, 3, 4, 8), (8, 16), (2, 3, 4, 16), (((0, 0),), ((0, 1),), ((0, 2),), ((1, 1),))),
        # Batch broadcasting: leading batch axes aligned from the right, extent 1 broadcast (still
        # a source: a loop over that result axis reads its index 0).
        (
            (3, 1, 4, 8),
            (5, 8, 16),
            (3, 5, 4, 16),
            (((0, 0),), ((0, 1), (1, 0)), ((0, 2),), ((1, 2),)),
        ),
        ((1, 4, 8), (6, 8, 5), (6, 4, 5), (((0, 0), (1, 0)), ((0, 1),), ((1, 2),))),
        # Dynamic extents.
        ((Q, 4, 8), (Q, 8, 16), (Q, 4, 16), (((0, 0), (1, 0)), ((0, 1),), ((1, 2),))),
    ],
)
def test_axis_map_matmul(a, b, result, expected):
    op = fusion.MatmulOp(value(tensor(*a)), value(tensor(*b)), tensor(*result))
    op.verify()
    assert op.result_shape() == result
    assert op.axis_map() == expected


def test_matmul_rule_broadcast_shapes():
    assert rules.matmul_rule((3, 1, 4, 8), (5, 8, 16))[0] == (3, 5, 4, 16)
    assert rules.matmul_rule((1, 4, 8), (Q, 8, 2))[0] == (Q, 4, 2)
    assert rules.matmul_rule((Q, 4, 8), (1, 8, 2))[0] == (Q, 4, 2)
    with pytest.raises(VerifyException, match=r"batch extents 3 and 2 do not broadcast"):
        rules.matmul_rule((3, 4, 8), (2, 8, 5))


@pytest.mark.parametrize(
    ("x", "w", "bias", "result", "expected"),
    [
        ((4, 8), (16, 8), None, (4, 16), (((0, 0),), ((1, 0),))),
        ((2, 4, 8), (16, 8), None, (2, 4, 16), (((0, 0),), ((0, 1),), ((1, 0),))),
        # A bias of shape [N] is a second source of the N axis.
        ((4, 8), (16, 8), (16,), (4, 16), (((0, 0),), ((1, 0), (2, 0)))),
        # A scalar bias maps to no axis.
        ((4, 8), (16, 8), (), (4, 16), (((0, 0),), ((1, 0),))),
        # 1-D input: the result is just N.
        ((8,), (16, 8), None, (16,), (((1, 0),),)),
        # 1-D weight: the result drops the contracted axis and has no N.
        ((4, 8), (8,), None, (4,), (((0, 0),),)),
        ((4, 8), (8,), (), (4,), (((0, 0),),)),
        ((8,), (8,), None, (), ()),
    ],
)
def test_axis_map_linear(x, w, bias, result, expected):
    bias_value = value(tensor(*bias)) if bias is not None else None
    op = fusion.LinearOp(value(tensor(*x)), value(tensor(*w)), bias_value, tensor(*result))
    op.verify()
    assert (op.bias is None) == (bias is None)
    assert len(op.operands) == (2 if bias is None else 3)
    assert op.axis_map() == expected


def test_operand_axis_to_result_axis():
    # matmul a[3, 4, 8] x b[8, 16]: a's batch and M axes map, K maps nowhere; b's N maps to 2.
    _, axis_map = rules.matmul_rule((3, 4, 8), (8, 16))
    assert rules.operand_axis_to_result_axis(axis_map, 0, 0) == 0
    assert rules.operand_axis_to_result_axis(axis_map, 0, 1) == 1
    assert rules.operand_axis_to_result_axis(axis_map, 0, 2) is None
    assert rules.operand_axis_to_result_axis(axis_map, 1, 0) is None
    assert rules.operand_axis_to_result_axis(axis_map, 1, 1) == 2
    # A reduced axis maps nowhere, the others shift down.
    reduce = rules.reduce_map(3, [1])
    assert [rules.operand_axis_to_result_axis(reduce, 0, i) for i in range(3)] == [0, None, 1]


# -- #fusion.parallel ------------------------------------------------------------------------------


def test_parallel_queries_serial():
    attr = ParallelAttr(["serial", "serial"])
    assert attr.axis_kinds == ("serial", "serial")
    assert attr.stream_axis is None
    assert attr.stream_chunks is None
    assert attr.didx_axis is None
    assert attr.mesh_ids == ()


def test_parallel_queries_stream():
    attr = ParallelAttr(["serial", "stream", "serial"])
    assert attr.stream_axis == 1
    assert attr.stream_chunks is None
    assert attr.didx_axis is None


def test_parallel_queries_stream_chunks():
    attr = ParallelAttr(["stream", "serial"], [4, 0])
    assert attr.stream_axis == 0
    assert attr.stream_chunks == 4
    assert str(attr) == "#fusion.parallel<[stream(4), serial]>"


def test_parallel_queries_didx():
    attr = ParallelAttr(["serial", "didx", "stream"], mesh=[3, 1])
    assert attr.didx_axis == 1
    assert attr.stream_axis == 2
    assert attr.mesh_ids == (3, 1)
    assert str(attr) == "#fusion.parallel<[serial, didx, stream], mesh = [3, 1]>"


def test_parallel_prints_and_parses_back():
    for attr in (
        ParallelAttr(["stream", "serial"]),
        ParallelAttr(["serial", "stream"], [0, 2]),
        ParallelAttr(["didx", "stream"], [0, 8], mesh=[0, 1]),
        ParallelAttr(["serial"], mesh=[5]),
    ):
        module = parse(f"func.func @f(%x: tensor<{'x'.join(['2'] * len(attr.axis_kinds))}xf32, {attr}>)")
        [f] = module.ops
        assert f.function_type.inputs.data[0].encoding == attr  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kinds", "chunks", "mesh", "message"),
    [
        (["serial"], [0, 0], (), "#fusion.parallel needs one chunk count per axis"),
        (["serial", "sharded"], None, (), "unknown parallel type 'sharded', expected one of serial, stream, didx"),
        (["serial", "stream"], [2, 0], (), r"only a stream axis takes a chunk count, got serial\(2\)"),
        (["stream"], [-1], (), r"only a stream axis takes a chunk count, got stream\(-1\)"),
        (["stream", "stream"], None, (), "at most one stream axis per tensor, found 2"),
        (["didx", "didx"], None, (0, 1), "at most one didx axis per tensor, found 2"),
        (["didx", "serial"], None, (), r"a didx axis needs a mesh: add `mesh = \[ids\]`"),
        (["didx"], None, (0, 0), r"mesh device ids must be distinct and non-negative, got \[0, 0\]"),
        (["serial"], None, (1, -2), r"mesh device ids must be distinct and non-negative, got \[1, -2\]"),
    ],
)
def test_parallel_rules(kinds, chunks, mesh, message):
    with pytest.raises(VerifyException, match=message):
        ParallelAttr(kinds, chunks, mesh)


def test_parallel_rules_are_parse_errors_at_the_attribute():
    text = "func.func @f(%x: tensor<2x2xf32, #fusion.parallel<[stream, stream]>>)"
    with pytest.raises(ParseError, match=r"at most one stream axis per tensor") as info:
        parse(text, "attr.mlir")
    assert format_parse_error(info.value).startswith(
        "attr.mlir:1:50: error: at most one stream axis per tensor, found 2\n"
    )


def test_layout_of():
    plain = layout_of(tensor(4, 8))
    assert plain.kinds == ("serial", "serial")
    assert plain.stream_axis is None
    assert plain.didx_axis is None
    assert plain.mesh == ()
    encoded = layout_of(tensor(4, 2, enc=ParallelAttr(["stream", "didx"], [2, 0], mesh=[0, 1])))
    assert encoded.kinds == ("stream", "didx")
    assert encoded.stream_axis == 0
    assert encoded.stream_chunks == 2
    assert encoded.didx_axis == 1
    assert encoded.mesh == (0, 1)


def test_verify_tensor_type():
    verify_tensor_type(tensor(4, 8), "x")
    verify_tensor_type(tensor(Q, 8, enc=ParallelAttr(["stream", "serial"], [3, 0])), "x")
    verify_tensor_type(tensor(Q, 8, enc=ParallelAttr(["didx", "serial"], mesh=[0, 1, 2])), "x")
    with pytest.raises(VerifyException, match=r"x: #fusion.parallel lists 1 axes but the tensor has rank 2"):
        verify_tensor_type(tensor(4, 8, enc=ParallelAttr(["stream"])), "x")
    verify_tensor_type(tensor(5, 8, enc=ParallelAttr(["didx", "serial"], mesh=[0, 1])), "y")  # shards of 3 and 2
    with pytest.raises(VerifyException, match=r"y: didx axis 0 has extent 0: a sharded axis needs at least one index"):
        verify_tensor_type(tensor(0, 8, enc=ParallelAttr(["didx", "serial"], mesh=[0, 1])), "y")
    verify_tensor_type(tensor(4, 8, enc=ParallelAttr(["serial", "stream"], [0, 3])), "z")  # chunks of 3, 3, 2


# -- building fusion ops --------------------------------------------------------------------------


def test_build_and_verify_fusion_ops():
    x, y = value(tensor(4, 8)), value(tensor(4, 8))
    w, bias = value(tensor(16, 8)), value(tensor(16))
    ints = value(tensor(4, 8, element=i64))
    ops: list[Operation] = [
        fusion.SetOp(x, tensor(4, 8, enc=STREAM_SERIAL)),
        *(op(x) for op in (fusion.NegOp, fusion.AbsOp, fusion.ExpOp, fusion.ReluOp, fusion.TanhOp)),
        *(op(x, y) for op in (fusion.AddOp, fusion.SubOp, fusion.MulOp, fusion.DivOp, fusion.MaximumOp)),
        fusion.CastOp(x, tensor(4, 8, element=bf16)),
        fusion.ExpandOp(x, [0], tensor(2, 4, 8)),
        fusion.PermuteOp(x, [1, 0], tensor(8, 4)),
        fusion.SumOp(x, [1], tensor(4)),
        fusion.MaxOp(x, [0], tensor(8)),
        fusion.MinOp(x, [0, 1], tensor()),
        fusion.MatmulOp(x, value(tensor(8, 2)), tensor(4, 2)),
        fusion.LinearOp(x, w, None, tensor(4, 16)),
        fusion.LinearOp(x, w, bias, tensor(4, 16)),
        *(op(x) for op in (fusion.SigmoidOp, fusion.SiluOp, fusion.SqrtOp, fusion.RsqrtOp, fusion.ReciprocalOp)),
        *(op(x) for op in (fusion.LogOp, fusion.SinOp, fusion.CosOp, fusion.ErfOp)),
        fusion.GeluOp(x, "tanh"),
        fusion.GeluBackwardOp(x, y, "none"),
        fusion.SiluBackwardOp(x, y),
        fusion.PowOp(x, y),
        fusion.CompareOp("ge", x, y, tensor(4, 8, element=i1)),
        fusion.WhereOp(value(tensor(4, 8, element=i1)), x, y),
        fusion.FullOp(0.5, tensor(4, 8)),
        fusion.ReshapeOp(x, tensor(2, 16)),
        fusion.SliceOp(x, [1, 0], [2, 1], tensor(2, 8)),
        fusion.ConcatOp([x, y], 0, tensor(8, 8)),
        fusion.MeanOp(x, [1], tensor(4)),
        fusion.SoftmaxOp(x, 1),
        fusion.LayerNormOp(x, value(tensor(8)), value(tensor(8)), [1], 1e-5),
        fusion.RmsNormOp(x, value(tensor(8)), [1], 1e-6),
        *(op(x, y) for op in (fusion.MinimumOp, fusion.FloorDivOp, fusion.TruncDivOp, fusion.RemainderOp)),
        fusion.Log1pOp(x),
        fusion.Expm1Op(x),
        fusion.FmodOp(x, y),
        *(op(ints, ints) for op in (fusion.BitAndOp, fusion.BitOrOp, fusion.BitXorOp)),
        *(op(x) for op in (fusion.FloorOp, fusion.CeilOp, fusion.RoundOp, fusion.TruncOp, fusion.SignOp)),
        fusion.GatherOp(x, value(tensor(4, 3, element=i64)), 1, tensor(4, 3)),
        fusion.IndexSelectOp(x, value(tensor(2, 5, element=i64)), 0, tensor(2, 5, 8)),
        fusion.IndexAddOp(x, value(tensor(3, element=i64)), value(tensor(3, 8)), 0),
        fusion.IndexCopyOp(x, value(tensor(3, element=i64)), value(tensor(3, 8)), 0),
        fusion.FlipOp(x, [0], tensor(4, 8)),
        fusion.IotaOp(1, tensor(4, 8, element=i64)),
        fusion.RandomOp("uniform", tensor(4, 8)),
        fusion.RandomOp("normal", tensor(4, 8)),
        fusion.CumsumOp(x, 1, tensor(4, 8)),
        fusion.CumprodOp(x, 0, tensor(4, 8)),
        fusion.ProdOp(x, 1, tensor(4)),
        fusion.ArgMaxOp(x, 1, tensor(4, element=i64)),
        fusion.ArgMinOp(x, 0, tensor(8, element=i64)),
        fusion.TopkOp(x, 3, 1, True, tensor(4, 3, element=i64)),
        fusion.ScaledDotProductAttentionOp(x, y, value(tensor(4, 6)), None, True, 0.125, tensor(4, 6)),
        fusion.ScaledDotProductAttentionOp(x, y, y, value(tensor(4, 4, element=i1)), False, 1.0, tensor(4, 8)),
        fusion.ScaledDotProductAttentionBackwardOp(x, x, y, y, None, True, 0.125, tensor(3, 4, 8)),
        fusion.ScaledDotProductAttentionLogsumexpOp(x, y, y, x, True, 0.125, tensor(4)),
        fusion.ScaledDotProductAttentionStatsBackwardOp(x, x, y, y, x, value(tensor(4)), False, 1.0, tensor(3, 4, 8)),
        fusion.LayerNormBackwardOp(x, y, value(tensor(8)), [1], 1e-5),
        fusion.RmsNormBackwardOp(x, y, None, [1], 1e-6),
    ]
    assert {type(op) for op in ops} == set(fusion.FUSION_OPS)
    for op in ops:
        op.verify()


def test_unary_and_binary_default_to_the_operand_type():
    x = value(tensor(4, 8, enc=STREAM_SERIAL))
    assert fusion.ReluOp(x).result.type == x.type
    assert fusion.AddOp(x, x).result.type == x.type


def test_built_op_prints_custom_syntax():
    x = value(tensor(4, 8))
    op = fusion.SumOp(x, [1], tensor(4, enc=ParallelAttr(["stream"])))
    assert str(op) == "%0 = fusion.sum %1 dims = [1] : tensor<4x8xf32> -> tensor<4xf32, #fusion.parallel<[stream]>>"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: fusion.AddOp(value(tensor(4, 8)), value(tensor(8, 4))), "operands must have the same shape, got 4x8"),
        (
            lambda: fusion.ExpOp(value(tensor(4, element=i32))),
            "fusion.exp needs a floating-point element type, got i32",
        ),
        (lambda: fusion.TanhOp(value(tensor(4, element=i32))), "fusion.tanh needs a floating-point element type"),
        (
            lambda: fusion.DivOp(value(tensor(4, element=i32)), value(tensor(4, element=i32))),
            "fusion.div needs a floating-point element type",
        ),
        (lambda: fusion.NegOp(value(tensor(4)), tensor(4, element=bf16)), "operand #0 has element type f32"),
        (lambda: fusion.NegOp(value(tensor(4)), tensor(5)), "result shape 5 does not match the expected shape 4"),
        (
            lambda: fusion.SetOp(value(tensor(4)), tensor(4, enc=ParallelAttr(["stream", "serial"]))),
            "result: #fusion.parallel lists 2 axes but the tensor has rank 1",
        ),
        (
            lambda: fusion.ExpandOp(value(tensor(4)), [0], tensor(2, 5)),
            r"broadcast of 4 with new dims \[0\] cannot produce 2x5",
        ),
        (lambda: fusion.ExpandOp(value(tensor(4)), [2], tensor(2, 4)), "broadcast dims entry 2 is out of range"),
        (lambda: fusion.PermuteOp(value(tensor(4, 8)), [0], tensor(4)), r"perm \[0\] is not a permutation"),
        (lambda: fusion.SumOp(value(tensor(4, 8)), [], tensor(4, 8)), "dims must name at least one axis"),
        (lambda: fusion.MinOp(value(tensor(4, 8)), [1, 1], tensor(4)), r"dims \[1, 1\] has duplicates"),
        (
            lambda: fusion.MatmulOp(value(tensor(4, 8)), value(tensor(7, 2)), tensor(4, 2)),
            "matmul contraction extents differ: 4x8 and 7x2",
        ),
        (
            lambda: fusion.LinearOp(value(tensor(4, 8)), value(tensor(16, 8)), value(tensor(8)), tensor(4, 16)),
            "linear bias must be a scalar or have shape 16, got 8",
        ),
        (
            lambda: fusion.LinearOp(value(tensor(4, 8)), value(tensor(8)), value(tensor(1)), tensor(4)),
            "linear with a 1-D weight takes a scalar bias",
        ),
    ],
)
def test_fusion_verifier_errors(build, message):
    with pytest.raises(VerifyException, match=message):
        build().verify()


def test_segment_built_from_python():
    a = value(tensor(4, 8))
    block = Block(arg_types=[a.type])
    neg = fusion.NegOp(block.args[0])
    block.add_ops([neg, fusion.YieldOp(neg.result)])
    segment = fusion.SegmentOp([a], [tensor(4, 8)], Region(block))
    segment.verify()
    assert segment.inner_ops == [neg]
    assert segment.yield_op.values[0] is neg.result


# -- hir buffer types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "strides"),
    [
        ((), []),
        ((8,), [1]),
        ((4, 8), [8, 1]),
        ((2, 3, 4), [12, 4, 1]),
        ((Q, 8), [8, 1]),
        ((4, Q), [None, 1]),
        ((4, Q, 2), [None, 2, 1]),
        ((Q, Q, 2), [None, 2, 1]),
    ],
)
def test_contiguous_strides(shape, strides):
    assert hir.contiguous_strides(shape) == strides


def test_select_result_type():
    base = MemRefType(f32, [4, 8])
    assert hir.select_result_type(base, 0) == MemRefType(f32, [8], StridedLayoutAttr([1], None))
    assert hir.select_result_type(base, 1) == MemRefType(f32, [4], StridedLayoutAttr([8], None))
    assert str(hir.select_result_type(base, 1)) == "memref<4xf32, strided<[8], offset: ?>>"


def test_select_result_type_of_a_view():
    view = hir.select_result_type(MemRefType(f32, [4, 8, 2]), 0)
    assert view == MemRefType(f32, [8, 2], StridedLayoutAttr([2, 1], None))
    assert hir.select_result_type(view, 1) == MemRefType(f32, [8], StridedLayoutAttr([2], None))
    assert hir.select_result_type(view, 0) == MemRefType(f32, [2], StridedLayoutAttr([1], None))


def test_select_result_type_dynamic():
    base = MemRefType(f32, [Q, Q, 8])
    assert str(hir.select_result_type(base, 1)) == "memref<?x8xf32, strided<[?, 1], offset: ?>>"
    assert str(hir.select_result_type(base, 0)) == "memref<?x8xf32, strided<[8, 1], offset: ?>>"


def test_memref_strides_rejects_non_strided_layouts():
    transposed = MemRefType(f32, [4, 8], AffineMapAttr(AffineMap.from_callable(lambda i, j: (j, i))))
    with pytest.raises(VerifyException, match=r"has a layout that is not strided"):
        hir.memref_strides(transposed)


def test_chunk_result_type():
    assert str(hir.chunk_result_type(MemRefType(f32, [8, 4]), 0, 4)) == "memref<2x4xf32, strided<[4, 1], offset: ?>>"
    assert str(hir.chunk_result_type(MemRefType(f32, [Q, 4]), 0, 4)) == "memref<?x4xf32, strided<[4, 1], offset: ?>>"


def test_tensor_type_of():
    view = hir.select_result_type(MemRefType(bf16, [4, 8]), 0)
    assert hir.tensor_type_of(view) == TensorType(bf16, [8])


# -- building hir ops -----------------------------------------------------------------------------


def test_build_and_verify_buffer_ops():
    n, i = value(IndexType()), value(IndexType())
    static = hir.AllocateOp(MemRefType(f32, [4, 8]))
    dynamic = hir.AllocateOp(MemRefType(f32, [Q, 8]), [n], symmetric=True)
    select = hir.AliasSelectOp(static.result, i, 1)
    chunk = hir.AliasChunkOp(static.result, i, 0, 2)
    dealloc = hir.DeallocateOp(dynamic.result)
    for op in (static, dynamic, select, chunk, dealloc):
        op.verify()
    assert static.symmetric is None
    assert dynamic.symmetric is not None
    assert select.result.type == hir.select_result_type(MemRefType(f32, [4, 8]), 1)
    assert select.axis_value == 1
    assert chunk.result.type == hir.chunk_result_type(MemRefType(f32, [4, 8]), 0, 2)
    assert str(dynamic) == "%0 = hir.allocate(%1) symmetric : memref<?x8xf32>"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: hir.AllocateOp(MemRefType(f32, [Q, Q])), "has 2 dynamic extents but 0 sizes are given"),
        (
            lambda: hir.AllocateOp(MemRefType(f32, [4], StridedLayoutAttr([2]))),
            "hir.allocate makes contiguous buffers",
        ),
    ],
)
def test_hir_buffer_verifier_errors(build, message):
    with pytest.raises(VerifyException, match=message):
        build().verify()


def test_alias_chunk_not_dividing_has_a_dynamic_extent() -> None:
    chunk = hir.AliasChunkOp(value(MemRefType(f32, [6])), value(IndexType()), 0, 4)
    chunk.verify()
    assert chunk.result.type.get_shape() == (Q,)
    assert [hir.chunk_bounds(6, 4, i) for i in range(4)] == [(0, 2), (2, 2), (4, 2), (6, 0)]
    assert [hir.chunk_bounds(7, 3, i) for i in range(3)] == [(0, 3), (3, 3), (6, 1)]


def test_alias_select_axis_out_of_range():
    # __init__ computes the result type first, so an out-of-range axis is caught on a generic op.
    m, i = value(MemRefType(f32, [4])), value(IndexType())
    op = hir.AliasSelectOp.create(
        operands=[m, i], result_types=[MemRefType(f32, [])], properties=hir.AliasSelectOp(m, i, 0).properties
    )
    op.properties["axis"] = IntegerAttr(3, i64)
    with pytest.raises(VerifyException, match=r"axis 3 is out of range for memref<4xf32> of rank 1"):
        op.verify()


def test_build_for_adds_the_terminator():
    lb = value(IndexType())
    loop = hir.ForOp(lb, lb, lb, Block(arg_types=[IndexType()]))
    loop.verify()
    assert isinstance(loop.body.block.last_op, hir.YieldOp)
    assert loop.induction_var.type == IndexType()


def test_for_rejects_yielded_values():
    lb = value(IndexType())
    block = Block(arg_types=[IndexType()])
    block.add_op(hir.YieldOp(lb))
    with pytest.raises(VerifyException, match=r"hir.for carries no values"):
        hir.ForOp(lb, lb, lb, block).verify()


def launch(ins: list[SSAValue], outs: list[SSAValue], body) -> hir.LaunchOp:
    block = Block(arg_types=[hir.tensor_type_of(v.type) for v in ins])  # type: ignore[arg-type]
    block.add_ops(body(*block.args))
    return hir.LaunchOp(ins, outs, Region(block))


def test_build_and_verify_launch():
    a, b = value(MemRefType(f32, [4, 8])), value(MemRefType(f32, [4, 8]))
    c, d = value(MemRefType(f32, [4, 8])), value(MemRefType(f32, [4]))

    def body(x: SSAValue, y: SSAValue) -> list[Operation]:
        add = fusion.AddOp(x, y)
        total = fusion.SumOp(add.result, [1], tensor(4))
        return [add, total, hir.YieldOp(add.result, total.result)]

    op = launch([a, b], [c, d], body)
    op.verify()
    assert [arg.type for arg in op.body.block.args] == [tensor(4, 8), tensor(4, 8)]
    effects = get_effects(op)
    assert effects is not None
    reads = {e.value for e in effects if e.kind == MemoryEffectKind.READ and e.value is not None}
    writes = {e.value for e in effects if e.kind == MemoryEffectKind.WRITE and e.value is not None}
    assert reads == {a, b}
    assert writes == {c, d}


def test_launch_rejects_non_fusion_ops():
    a = value(MemRefType(f32, [4]))

    def body(x: SSAValue) -> list[Operation]:
        return [hir.NumStreamsOp(), hir.YieldOp(x)]

    with pytest.raises(VerifyException, match=r"a launch region holds fusion ops only, found hir.num_streams"):
        launch([a], [a], body).verify()


def test_launch_rejects_wrong_yield():
    a, b = value(MemRefType(f32, [4])), value(MemRefType(f32, [8]))
    with pytest.raises(VerifyException, match=r"hir.yield gives 0 values for 1 outs buffers"):
        launch([a], [a], lambda x: [hir.YieldOp()]).verify()
    with pytest.raises(VerifyException, match=r"yielded value #0 of type tensor<4xf32> does not fit outs #0"):
        launch([a], [b], lambda x: [hir.YieldOp(x)]).verify()


def test_build_and_verify_stream_ops():
    k = value(IndexType())
    main = hir.GetCurrentStreamOp()
    stream = hir.StreamOp(k)
    num = hir.NumStreamsOp()
    ops = [main, stream, num, hir.SetCurrentStreamOp(stream.result), hir.SynchronizeOp(main.result)]
    for op in ops:
        op.verify()
    assert main.result.type == hir.StreamType()
    assert num.result.type == IndexType()
    # Pure ops have no effects; the others declare theirs (so dce keeps them).
    assert get_effects(stream) == set()
    assert get_effects(num) == set()
    assert get_effects(ops[3])
    assert get_effects(ops[4])
    assert get_effects(main)


def test_build_and_verify_communication_ops():
    part, whole = value(MemRefType(f32, [1, 8])), value(MemRefType(f32, [2, 8]))
    peer = value(IndexType())
    ops = [
        hir.AllgatherOp(part, whole, 0, [0, 1]),
        hir.ReduceScatterOp(whole, part, 0, [0, 1], "max"),
        hir.AllreduceOp(whole, whole, [0, 1]),
        hir.BroadcastOp(whole, whole, peer, [0, 1]),
        hir.SendOp(part, peer, [0, 1]),
        hir.RecvOp(part, peer, [0, 1]),
        hir.CollectivePermuteOp(part, part, 1, [0, 1]),
        hir.ReduceOp(whole, whole, peer, [0, 1], "max"),
    ]
    for op in ops:
        op.verify()
        assert op.result.type == hir.WorkType()
        assert op.mesh_ids == (0, 1)
    assert ops[2].kind.data == "sum"
    wait = hir.WaitOp(ops[0].result)
    wait.verify()
    assert str(ops[0]) == "%0 = hir.allgather %1 into %2 axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf32>"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda p, w, i: hir.AllgatherOp(p, w, 0, [0, 1, 2]),
            "allgather: 2x8 must be 1x8 with axis 0 scaled by the mesh size 3",
        ),
        (lambda p, w, i: hir.AllgatherOp(p, w, 0, []), r"mesh must list distinct non-negative device ids, got \[\]"),
        (lambda p, w, i: hir.ReduceScatterOp(w, p, 0, [0, 1], "prod"), "unknown reduction 'prod'"),
        (lambda p, w, i: hir.AllreduceOp(p, w, [0, 1]), "allreduce buffers differ in shape"),
        (lambda p, w, i: hir.BroadcastOp(w, p, i, [0, 1]), "broadcast buffers differ in shape"),
        (lambda p, w, i: hir.SendOp(p, i, [1, 1]), r"got \[1, 1\]"),
        (lambda p, w, i: hir.CollectivePermuteOp(p, w, 1, [0, 1]), "send and recv differ in shape: 1x8 and 2x8"),
        (lambda p, w, i: hir.CollectivePermuteOp(p, p, 2, [0, 1]), "offset 2 is out of range for a mesh of 2 devices"),
        (lambda p, w, i: hir.ReduceOp(p, w, i, [0, 1]), "reduce buffers differ in shape"),
        (lambda p, w, i: hir.ReduceOp(w, w, i, [0, 1], "prod"), "unknown reduction 'prod'"),
    ],
)
def test_communication_verifier_errors(build, message):
    part, whole = value(MemRefType(f32, [1, 8])), value(MemRefType(f32, [2, 8]))
    with pytest.raises(VerifyException, match=message):
        build(part, whole, value(IndexType())).verify()


def test_build_and_verify_symmetric_memory_ops():
    buf = hir.AllocateOp(MemRefType(f32, [4]), symmetric=True)
    rank = hir.DeviceIndexOp([0, 1])
    view = hir.PeerViewOp(buf.result, rank.result, [0, 1])
    barrier = hir.BarrierOp([0, 1])
    for op in (buf, rank, view, barrier):
        op.verify()
    assert rank.mesh_ids == (0, 1)
    assert view.result.type == buf.result.type
    assert get_effects(view) == set()
    assert get_effects(barrier)
    plain = hir.AllocateOp(MemRefType(f32, [4]))
    with pytest.raises(VerifyException, match=r"hir.peer_view needs a buffer from `hir.allocate symmetric`"):
        hir.PeerViewOp(plain.result, rank.result, [0, 1]).verify()


# -- located verification -------------------------------------------------------------------------


BAD_ADD = """\
func.func @f(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  %n = hir.num_streams
  %0 = fusion.add %a, %b : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32>
  func.return
}
"""


def test_verify_located_names_file_line_col():
    module = parse(BAD_ADD, "prog.mlir")
    with pytest.raises(
        LocatedError,
        match=r"^prog\.mlir:3:3: error: 'fusion\.add' op operands must have the same shape, got 4 and 8$",
    ) as info:
        verify_located(module)
    assert isinstance(info.value.op, fusion.AddOp)
    assert info.value.message == "operands must have the same shape, got 4 and 8"


def test_verify_located_line_offset():
    # A chunk of a --split-input-file run starts `line_offset` lines into the file.
    module = LocatedParser(context(), BAD_ADD, "prog.mlir", line_offset=10).parse_module()
    with pytest.raises(LocatedError, match=r"^prog\.mlir:13:3: error: 'fusion\.add' op"):
        verify_located(module)


def test_verify_located_innermost_op():
    text = """\
func.func @f(%m: memref<4xf32>, %c: index) {
  hir.for %i = %c to %c step %c {
    hir.launch ins(%x = %m : memref<4xf32>) outs(%m : memref<4xf32>) {
      %y = fusion.exp %x : tensor<4xf32> -> tensor<2xf32>
      hir.yield %x : tensor<4xf32>
    }
  }
  func.return
}
"""
    with pytest.raises(LocatedError, match=r"^in\.mlir:4:7: error: 'fusion\.exp' op result shape 2"):
        verify_located(parse(text, "in.mlir"))


def test_verify_located_module_error():
    text = "func.func @f() {\n  func.return\n}\nfunc.func @f() {\n  func.return\n}\n"
    with pytest.raises(LocatedError, match=r"^dup\.mlir:1:1: error: 'builtin\.module' op Redefinition of symbol"):
        verify_located(parse(text, "dup.mlir"))


def test_verify_located_passes_valid_modules():
    text = (
        "func.func @f(%a: tensor<4xf32>) {\n  %0 = fusion.neg %a : tensor<4xf32> -> tensor<4xf32>\n  func.return\n}\n"
    )
    module = parse(text)
    verify_located(module)


def test_location_of_python_built_ops():
    # Ops built in Python have no location; they take their closest located ancestor's.
    module = parse("func.func @f(%a: tensor<4xf32>) {\n  func.return\n}\n", "src.mlir")
    [f] = module.ops
    neg = fusion.NegOp(f.body.block.args[0])  # type: ignore[attr-defined]
    assert location_of(neg) is None
    f.body.block.insert_op_before(neg, f.body.block.last_op)  # type: ignore[attr-defined]
    assert location_of(neg) == "src.mlir:1:1"
    assert location_of(ModuleOp([])) is None


def test_format_parse_error():
    with pytest.raises(ParseError) as info:
        parse("func.func @f(%x: tensor<4xf32, #fusion.parallel<[strem]>>)", "p.mlir")
    text = format_parse_error(info.value)
    first, source, caret = text.split("\n")
    assert first == "p.mlir:1:50: error: unknown parallel type 'strem', expected one of serial, stream, didx"
    assert source == "func.func @f(%x: tensor<4xf32, #fusion.parallel<[strem]>>)"
    assert caret.index("^") == 49


def test_int_attr_is_the_mesh_parameter():
    # The mesh is stored as builtin IntAttrs (what generic printers and passes see).
    assert ParallelAttr(["didx"], mesh=[2, 3]).mesh.data == (IntAttr(2), IntAttr(3))


def test_bitwise_ops_need_integers():
    with pytest.raises(VerifyException, match=r"fusion\.bitxor needs an integer type"):
        fusion.BitXorOp(value(tensor(4, 8)), value(tensor(4, 8))).verify()
