"""
The indexing, scan and arithmetic fusion ops (dialects/fusion/indexing.py, scans.py,
arithmetic.py): their verifiers, and their runs in stream loops from the frontend, against eager
torch. The loops' refusals of unsliceable axes are lit tests
(tests/lit/passes/stream-lowering/indexing_ops_invalid.mlir).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from xdsl.dialects.builtin import IntegerType, TensorType, f32, i1, i64
from xdsl.ir import Attribute, Block
from xdsl.utils.exceptions import VerifyException

import hir
from hir.dialects import fusion
from hir.frontend.errors import FrontendError


def _value(*shape: int, element: Attribute = f32):
    return Block(arg_types=[TensorType(element, shape)]).args[0]


def _t(*shape: int, element: Attribute = f32) -> TensorType:
    return TensorType(element, shape)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: fusion.GatherOp(_value(4, 8), _value(4, element=i64), 1, _t(4)), "gather needs one rank"),
        (lambda: fusion.GatherOp(_value(4, 8), _value(4, 3), 1, _t(4, 3)), "the index must have an integer element"),
        (lambda: fusion.GatherOp(_value(4, 8), _value(3, 3, element=i64), 1, _t(3, 3)), "differ on axis 0"),
        (lambda: fusion.IndexSelectOp(_value(4, 8), _value(5, element=i1), 0, _t(5, 8)), "not i1"),
        (lambda: fusion.IndexSelectOp(_value(4, 8), _value(5, element=i64), 0, _t(5, 4)), "does not match"),
        (lambda: fusion.IndexAddOp(_value(4, 8), _value(2, 3, element=i64), _value(6, 8), 0), "must be 1-D"),
        (lambda: fusion.IndexAddOp(_value(4, 8), _value(2, element=i1), _value(2, 8), 0), "not i1"),
        (lambda: fusion.IndexAddOp(_value(4, 8), _value(2, element=i64), _value(2, 7), 0), "expected 2x8"),
        (lambda: fusion.IndexAddOp(_value(4, 8), _value(3, element=i64), _value(4, 3, 1), 1), "expected 4x3"),
        (lambda: fusion.IndexAddOp(_value(4, 8), _value(2, element=i64), _value(2, 8), 2), "out of range"),
        (
            lambda: fusion.IndexAddOp(_value(4, 8), _value(2, element=i64), _value(2, 8, element=i64), 0),
            "x has element type f32, source i64",
        ),
        (lambda: fusion.FlipOp(_value(4, 8), [2], _t(4, 8)), "out of range"),
        (lambda: fusion.IotaOp(0, _t(4, element=i1)), "an iota of i1"),
        (lambda: fusion.CumsumOp(_value(4, 8), 2, _t(4, 8)), "out of range"),
        (lambda: fusion.ArgMaxOp(_value(4, 8), 1, _t(4)), "must be i64"),
        (lambda: fusion.TopkOp(_value(4, 8), 9, 1, True, _t(4, 9, element=i64)), "k = 9 is out of range"),
        (lambda: fusion.FloorDivOp(_value(4, element=i1), _value(4, element=i1), _t(4, element=i1)), "not i1"),
        (lambda: fusion.Log1pOp(_value(4, element=IntegerType(32))), "floating-point"),
    ],
)
def test_verifiers(make: Callable[[], fusion.FusionOp], message: str) -> None:
    with pytest.raises(VerifyException, match=message):
        make().verify()


STREAM = "[stream, serial]"
CHUNKS = "[stream(2), serial]"


@pytest.mark.parametrize(
    ("fn", "layout"),
    [
        (lambda x, i: torch.gather(x, 1, i % 8), STREAM),
        (lambda x, i: torch.topk(x, 3, dim=-1).values + torch.argmax(x, -1, keepdim=True), CHUNKS),
        (lambda x, i: torch.cumsum(x, dim=1) + torch.flip(x, [1]), STREAM),
        (lambda x, i: torch.tril(x) + torch.arange(8), CHUNKS),
        (lambda x, i: torch.minimum(x, x.flip(1)) // 0.5 + torch.clamp(x, max=0.2), STREAM),
        (lambda x, i: x.index_add(1, torch.arange(8) % 3, x * 2), CHUNKS),
    ],
    ids=["gather", "topk-argmax", "cumsum-flip", "tril-arange", "minimum-floordiv-clamp", "index-add"],
)
def test_streamed_rows_match_eager(fn: Callable[..., torch.Tensor], layout: str) -> None:
    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(8, 8), torch.randint(0, 64, (8, 8))

    args = inputs()
    compiled = hir.compile(fn, args, in_layouts=[layout, layout])
    assert "hir.for" in str(compiled.module)
    for call in (args, inputs()):
        torch.testing.assert_close(compiled(*call), fn(*call))


def test_a_scan_along_the_streamed_axis_is_an_error_at_the_users_line() -> None:
    def running_total(x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=0)  # along the streamed rows

    with pytest.raises(FrontendError, match=r"test_fusion_indexing_ops.py:\d+: error: fusion.cumsum drops the stream"):
        hir.compile(running_total, (torch.randn(8, 8),), in_layouts=[STREAM])


def test_an_index_select_streams_the_index() -> None:
    """An embedding lookup streamed over its token ids: each iteration gathers its rows of the table."""
    table, ids = torch.randn(10, 4), torch.randint(0, 10, (8, 3))
    compiled = hir.compile(lambda w, i: torch.nn.functional.embedding(i, w), (table, ids), in_layouts=[None, STREAM])
    assert "fusion.index_select" in compiled.fusion_text
    torch.testing.assert_close(compiled(table, ids), table[ids])


def test_a_gather_along_its_index_streamed_one_row_at_a_time_is_an_error_at_the_users_line() -> None:
    def pick(x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 0, i)  # gathers along the streamed axis

    x, i = torch.randn(8, 8), torch.randint(0, 8, (8, 8))
    with pytest.raises(
        FrontendError, match=r"test_fusion_indexing_ops.py:\d+: error: gather along axis 0, which its index"
    ):
        hir.compile(pick, (x, i), in_layouts=[None, STREAM])
    compiled = hir.compile(pick, (x, i), in_layouts=[None, CHUNKS])  # chunks of rows keep the axis
    torch.testing.assert_close(compiled(x, i), torch.gather(x, 0, i))


def test_one_index_wrapped_once_per_extent() -> None:
    # A decoder indexes each layer's caches and mask by the same position: the negative values of
    # one index are wrapped once per axis extent, not once per use (three kernels each).
    def f(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return x[i] + y[:, i].T + z[i][:, :6].sum(-1, keepdim=True)

    x, y, z = torch.randn(6, 5), torch.randn(5, 6), torch.randn(9, 7)
    index = torch.tensor([0, -1, 3, -6, 2])
    text = str(hir.import_torch(f, (x, y, z, index)))
    assert text.count("fusion.compare lt") == 2, text  # extents 6 (x and y share it) and 9
    compiled = hir.compile(f, (x, y, z, index))
    for i in (index, torch.tensor([-2, 5, -5, 1, 0])):
        torch.testing.assert_close(compiled(x, y, z, i), f(x, y, z, i))
