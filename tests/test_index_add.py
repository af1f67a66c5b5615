"""
`fusion.index_add` (dialects/fusion/indexing.py) and what lowers to it, against eager torch on
random data (never zeros), with repeated indices: the op at the fusion level and lowered (its
`out=` kernel into a buffer and into strided views), in f32, bf16 and f16, on the CPU and on a
GPU; the frontend's `index_put(..., accumulate=True)` (one index tensor of any shape on any axis,
several broadcast together, negative indices), `index_add` with `alpha`, `x[idx] = v` with one
value, and their refusals; the backward of F.interpolate, which scatters by index_put. Verifiers:
test_fusion_indexing_ops.py; an embedding's training: test_training.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from device_under_test import execute_lowered

import hir
from hir.frontend.errors import FrontendError
from hir.runtime.kernels import eager_kernel, out_kernel

GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=GPU)]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
# torch.index_add itself on both sides: on a GPU the atomic adds of repeated indices may sum in
# another order, which rounds differently in half precision.
TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (2e-2, 2e-2), torch.float16: (2e-3, 2e-3)}


def generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=generator(seed)).to(dtype)


def module(x: str, index: str, source: str, dim: int) -> str:
    return f"""
func.func @main(%x: tensor<{x}>, %i: tensor<{index}>, %s: tensor<{source}>) -> tensor<{x}> {{
  %r = fusion.index_add %x, %i, %s dim = {dim} : tensor<{x}>, tensor<{index}>, tensor<{source}> -> tensor<{x}>
  func.return %r : tensor<{x}>
}}
"""


def assert_close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    rtol, atol = TOLERANCE.get(expected.dtype, (1e-5, 1e-5))
    torch.testing.assert_close(actual.cpu(), expected.cpu(), rtol=rtol, atol=atol)


# -- the op ---------------------------------------------------------------------------------------

# Repeated entries (3 twice, 0 three times) accumulate; every position of x is read.
INDEX = torch.tensor([3, 0, 7, 3, 0, 0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_the_op_matches_torch_at_the_fusion_level_and_lowered(dim: int, dtype: str, device: str) -> None:
    shape = [8, 8, 8]
    source_shape = [len(INDEX) if d == dim else n for d, n in enumerate(shape)]
    text = module("8x8x8x" + dtype, "6xi64", "x".join(map(str, source_shape)) + "x" + dtype, dim)
    x, source = randn(*shape, dtype=DTYPES[dtype]), randn(*source_shape, seed=1, dtype=DTYPES[dtype])
    expected = torch.index_add(x, dim, INDEX, source)
    reference = hir.parse(text)
    inputs = [t.to(device) for t in (x, INDEX, source)]
    (fusion_level,) = hir.execute(reference, inputs)
    assert_close(fusion_level, expected)
    lowered = hir.run_pipeline(hir.parse(text), "stream-lowering")
    given = [x.clone(), INDEX.clone(), source.clone()]
    (out,) = execute_lowered(lowered, given, device_name=device)
    assert_close(out, expected)
    assert torch.equal(given[0], x)  # the inputs are only read
    assert torch.equal(given[2], source)


def test_the_out_kernel_writes_a_strided_view_and_takes_narrow_indices() -> None:
    """torch's index_add takes int32 and int64 indices only: an i16 index is widened first."""
    op = hir.parse(module("5x3xf32", "4xi16", "4x3xf32", 0)).walk()
    index_add = next(o for o in op if o.name == "fusion.index_add")
    x, source = randn(5, 3), randn(4, 3, seed=1)
    index = torch.tensor([4, 1, 1, 0], dtype=torch.int16)
    expected = torch.index_add(x, 0, index.long(), source)
    assert_close(eager_kernel(index_add)(x, index, source), expected)  # type: ignore[arg-type]
    base = torch.full((5, 6), 7.0)
    view = base[:, ::2]
    out_kernel(index_add)(view, x, index, source)  # type: ignore[arg-type]
    assert_close(view, expected)
    torch.testing.assert_close(base[:, 1::2], torch.full((5, 3), 7.0))  # the other columns are untouched


def test_a_stream_loop_off_the_indexed_axis_slices_x_and_source() -> None:
    """Streamed on a batch axis: each iteration adds its batch's slices, with the whole index."""
    text = """
func.func @main(%x: tensor<4x10x8xf32>, %i: tensor<6xi64>, %s: tensor<4x6x8xf32>) -> tensor<4x10x8xf32, #fusion.parallel<[stream(2), serial, serial]>> {
  %r = fusion.index_add %x, %i, %s dim = 1 : tensor<4x10x8xf32>, tensor<6xi64>, tensor<4x6x8xf32> -> tensor<4x10x8xf32, #fusion.parallel<[stream(2), serial, serial]>>
  func.return %r : tensor<4x10x8xf32, #fusion.parallel<[stream(2), serial, serial]>>
}
"""
    lowered = hir.run_pipeline(hir.parse(text), "stream-lowering")
    assert "hir.alias_chunk %s" in str(lowered)
    x, index, source = randn(4, 10, 8), torch.tensor([9, 0, 9, 4, 4, 9]), randn(4, 6, 8, seed=1)
    (out,) = execute_lowered(lowered, [x, index, source], num_streams=2)
    assert_close(out, torch.index_add(x, 1, index, source))


# -- the frontend ---------------------------------------------------------------------------------


def _compiled_matches_eager(fn: Callable[..., torch.Tensor], *args: torch.Tensor) -> str:
    """Compiles `fn`, checks it against eager on `args`, and returns its fusion text."""
    compiled = hir.compile(fn, args)
    torch.testing.assert_close(compiled(*args), fn(*args))
    return compiled.fusion_text


def _put(*positions: int | None) -> Callable[..., torch.Tensor]:
    """`index_put(x, indices, values, accumulate=True)` with the index tensors at `positions` (None: a whole axis)."""

    def put(x: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        *indices, values = rest
        given = iter(indices)
        return torch.ops.aten.index_put(x, [None if p is None else next(given) for p in positions], values, True)

    return put


# Negative entries count from the end; several name one position.
ROWS = torch.tensor([0, -1, 2, 2, -6, 5])


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (_put(0), (randn(6, 4, 5), ROWS, randn(6, 4, 5, seed=1))),
        (_put(0), (randn(6, 4, 5), ROWS.view(2, 3), randn(2, 3, 4, 5, seed=1))),
        (_put(0), (randn(6, 4, 5), ROWS, randn(6, 1, 5, seed=1))),  # values broadcast to the indexed shape
        (_put(0), (randn(6, 4, 5), ROWS, randn(5, seed=1))),
        (_put(None, 0), (randn(6, 4, 5), torch.tensor([[1, -1], [3, 3]]), randn(6, 2, 2, 5, seed=1))),
        (_put(0, 0), (randn(6, 4, 5), torch.tensor([[0], [5], [-1]]), torch.tensor([1, 3, 3, -4]), randn(3, 4, 5))),
        (_put(None, 0, 0), (randn(6, 4, 5), torch.tensor([0, 3, 3, -1]), torch.tensor([1, 4, 4, -5]), randn(6, 4))),
        (_put(0), (torch.randint(-9, 9, (6, 3), generator=generator()), ROWS, torch.randint(1, 9, (6, 3)))),
        (_put(0), (randn(6, 4), ROWS.int(), randn(6, 4, seed=1))),
    ],
    ids=[
        "rows",
        "2d-index",
        "broadcast-values",
        "trailing-values",
        "axis-1",
        "two-indices",
        "two-indices-inner",
        "integers",
        "int32-index",
    ],
)
def test_index_put_accumulate_is_one_index_add(fn: Callable[..., torch.Tensor], args: tuple[torch.Tensor, ...]) -> None:
    text = _compiled_matches_eager(fn, *args)
    assert text.count("fusion.index_add") == 1


def test_index_put_accumulate_in_place_and_as_a_method() -> None:
    def accumulate(x: torch.Tensor, i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y.index_put_((i,), v, accumulate=True)
        return y + x.index_put((i,), v * 2, accumulate=True)

    _compiled_matches_eager(accumulate, randn(6, 4), ROWS, randn(6, 4, seed=1))


def test_no_index_entries_leave_x_as_it_is() -> None:
    _compiled_matches_eager(_put(0), randn(6, 4), torch.zeros(0, dtype=torch.long), randn(0, 4))


@pytest.mark.parametrize(("dim", "alpha"), [(0, 1.0), (1, 0.5), (-1, -2.0)])
def test_index_add_with_alpha(dim: int, alpha: float) -> None:
    x = randn(6, 5, 4)
    extent = x.shape[dim]
    index = torch.tensor([extent - 1, 0, extent - 1, 1])
    source_shape = [4 if d == dim % 3 else n for d, n in enumerate(x.shape)]
    text = _compiled_matches_eager(
        lambda x, i, s: x.index_add(dim, i, s, alpha=alpha), x, index, randn(*source_shape, seed=1)
    )
    assert "fusion.index_add" in text
    assert "aten.index_put" not in text


def test_index_add_with_a_0d_index() -> None:
    _compiled_matches_eager(lambda x, i, s: x.index_add(0, i, s), randn(6, 4), torch.tensor(2), randn(1, 4, seed=1))


def test_an_assignment_of_one_value_at_repeated_indices() -> None:
    """`x[idx] = v` with one value: every named position takes it, however often it is named."""

    def assign(x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[i] = 1.5
        return y

    text = _compiled_matches_eager(assign, randn(6, 4), ROWS)
    assert "fusion.index_add" in text
    _compiled_matches_eager(lambda x, i: x.index_put((i,), torch.tensor(-3.0)), randn(6, 4), ROWS)


def test_an_assignment_of_several_values_at_integer_indices_keeps_the_last_writer() -> None:
    """Where indices repeat (ROWS names 0, 2 and 5 twice, with negatives), torch's CPU kernel keeps the last entry's."""

    def assign(x: torch.Tensor, i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[i] = v
        return y

    compiled = hir.compile(assign, (randn(6, 4), ROWS, randn(6, 4, seed=1)))
    args = (randn(6, 4, seed=2), ROWS, randn(6, 4, seed=3))
    torch.testing.assert_close(compiled(*args), assign(*args), rtol=0, atol=0)


def test_a_boolean_mask_with_accumulate_is_still_refused() -> None:
    def masked(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return x.index_put((x > 0,), v, accumulate=True)

    with pytest.raises(FrontendError, match="scatters values, which fusion does not have"):
        hir.import_torch(masked, (randn(6, 4), randn(())))


def test_index_tensors_on_axes_that_are_not_adjacent_put_their_axes_first() -> None:
    # torch moves the broadcast index axes to the front: the values are [2, 3] for a [4, 3, 5] x
    fn = _put(0, None, 0)
    args = (randn(4, 3, 5), torch.tensor([0, -1]), torch.tensor([2, 3]), randn(2, 3, seed=1))
    torch.testing.assert_close(hir.compile(fn, args)(*args), fn(*args))


def test_the_indexed_axis_streamed_is_an_error_at_the_users_line() -> None:
    def add_rows(x: torch.Tensor, i: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return x.index_add(0, i, s)  # along the streamed rows

    args = (randn(8, 4), torch.tensor([0, 7, 7]), randn(3, 4, seed=1))
    with pytest.raises(FrontendError, match=r"test_index_add.py:\d+: error: fusion.index_add drops the stream axis 0"):
        hir.compile(add_rows, args, in_layouts=["[stream, serial]", None, None])
    compiled = hir.compile(add_rows, args, in_layouts=["[serial, stream(2)]", None, "[serial, stream(2)]"])
    assert "hir.for" in str(compiled.module)
    torch.testing.assert_close(compiled(*args), add_rows(*args))


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_the_backward_of_interpolate(mode: str) -> None:
    """Its backward is an index_put(accumulate=True) of the output's gradient at two index tensors."""

    def upsample(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, size=(7, 9), mode=mode)

    x = randn(2, 3, 4, 5)
    compiled = hir.compile(upsample, (x,), training=True)
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    grad = randn(2, 3, 7, 9, seed=1)
    compiled(ours).backward(grad)
    upsample(theirs).backward(grad)
    torch.testing.assert_close(ours.grad, theirs.grad)
    (programs,) = compiled.graphs.values()
    assert "fusion.index_add" in programs["backward"].fusion_text


@GPU
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_index_put_accumulate_in_half_precision_on_a_gpu(dtype: torch.dtype) -> None:
    x, values = randn(64, 32, dtype=dtype).cuda(), randn(4, 16, 32, seed=1, dtype=dtype).cuda()
    index = torch.randint(-64, 64, (4, 16), generator=generator(2)).cuda()
    fn = _put(0)
    compiled = hir.compile(fn, (x, index, values))
    assert_close(compiled(x, index, values), fn(x, index, values))
