"""
uint8 tensors (MLIR's `ui8`): inputs, outputs, casts, comparisons and wrapping arithmetic as
eager torch computes them, on random values over the whole range 0..255.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import hir
from hir.frontend.errors import FrontendError


def _pixels(*shape: int) -> torch.Tensor:
    return torch.randint(0, 256, shape, dtype=torch.uint8)


def _int8(*shape: int) -> torch.Tensor:
    return torch.randint(-128, 128, shape, dtype=torch.int8)


def _ids(*shape: int) -> torch.Tensor:
    return torch.randint(-1000, 1000, shape)


def _check(fn: Callable[..., object], makers: list[Callable[..., torch.Tensor]], shapes: list[tuple[int, ...]]) -> None:
    """`fn` compiled matches eager on random arguments, and on fresh ones of the same shapes."""
    args, fresh = ([make(*shape) for make, shape in zip(makers, shapes, strict=True)] for _ in range(2))
    compiled = hir.compile(fn, tuple(args))
    for call in (args, fresh):
        expected, got = fn(*call), compiled(*call)
        for g, x in zip(got, expected, strict=True):
            assert g.dtype == x.dtype
            torch.testing.assert_close(g, x)


def subsequent_mask(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The Annotated Transformer's causal mask, then `mask == 0`, beside the padding of `x`."""
    size = x.shape[1]
    mask = torch.triu(torch.ones(1, size, size), diagonal=1).type(torch.uint8)
    return mask == 0, (mask == 0) & (x[:, None, :] > 0), mask


def image_preprocessing(img: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """HWC uint8 pixels to normalized CHW floats, a threshold, and the inverted image back as uint8."""
    x = (img.permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.25
    return x, img / 255, img > 128, (255 - img.float()).to(torch.uint8), img.half() * 2


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Round, clamp to 0..255 and cast: the cast truncates toward zero (in range, as eager)."""
    q = torch.clamp(torch.round(x / 0.05) + 128, 0, 255).to(torch.uint8)
    truncated = (x.abs() * 40).clamp(max=255).to(torch.uint8)
    return q, truncated, (q.float() - 128) * 0.05


def wrapping(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """uint8 with uint8 stays uint8, wrapping modulo 256; an int scalar is wrapped into uint8 as torch does."""
    return a + b, a - b, a * b, -a, a + 300, a - 1, 1 - a, a * -3, a // (b // 2 + 1), a % 7, a // 300, a**2


def promotion(a: torch.Tensor, ids: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """uint8 with int64 is int64, with floats float; a float scalar makes floats."""
    return a + ids, a * x, a * 0.5, a / 3, a.long() * 1000, a.sum(1), a.to(torch.int8), a.bool()


def signed_scalars(i: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """An int8 tensor with Python integers it cannot hold: wrapped into int8 as torch does."""
    return i + 300, i * 200, i > 200, i.to(torch.uint8) + 1


def scans(a: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """cummax / cummin start from their dtype's own extreme; `~x` of integers is `-1 - x` (`255 - x` of uint8)."""
    return (*torch.cummax(a, 1), torch.cummin(i, 1).values, ~a, ~i)


def pooling(img: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Max pooling of uint8 images, padded (the padding never wins) and with its indices."""
    return F.max_pool2d(img, 3, 2, 1, ceil_mode=True), *F.max_pool2d(img, 2, return_indices=True)


def comparisons(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Unsigned comparisons (200 > 100), and scalars wrapped as torch wraps them (`a > -1` compares with 255)."""
    return a < b, a >= b, a == b, a > 200, a > -1, a != 256, torch.maximum(a, b), a.amax(1), a.argmax(1)


def selection(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """An old-style byte mask used as a boolean one, where and cat of uint8 tensors, clamp, cumsum."""
    keep = a % 2
    masked = x.masked_fill(keep.bool(), -1e9)
    return masked, torch.where(a > b, a, b), torch.cat([a, b], 0).t(), a.clamp(10, 200), torch.cumsum(a, 1)


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [
        (subsequent_mask, [(2, 5)]),
        (image_preprocessing, [(2, 4, 4, 3)]),
        (quantize, [(3, 8)]),
        (wrapping, [(3, 8), (3, 8)]),
        (promotion, [(3, 8), (3, 8), (3, 8)]),
        (comparisons, [(3, 8), (3, 8)]),
        (signed_scalars, [(3, 8)]),
        (scans, [(3, 8), (3, 8)]),
        (pooling, [(2, 3, 5, 5)]),
        (selection, [(3, 8), (3, 8), (3, 8)]),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_uint8_matches_eager(fn: Callable[..., tuple[torch.Tensor, ...]], shapes: list[tuple[int, ...]]) -> None:
    torch.manual_seed(0)
    kinds = {
        subsequent_mask: [torch.randn],
        quantize: [torch.randn],
        promotion: [_pixels, _ids, torch.randn],
        selection: [_pixels, _pixels, torch.randn],
        signed_scalars: [_int8],
        scans: [_pixels, _int8],
    }.get(fn, [_pixels] * len(shapes))
    _check(fn, kinds, shapes)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
def test_max_pool_indices_skip_the_padding_where_the_input_holds_its_least_value(dtype: torch.dtype) -> None:
    img = torch.full((1, 1, 4, 4), torch.iinfo(dtype).min, dtype=dtype)
    img[0, 0, 0, 0] = 5  # the other windows hold only the least value, and padding before it
    pool = lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)  # noqa: E731
    for got, expected in zip(hir.compile(pool, (img,))(img), pool(img), strict=True):
        torch.testing.assert_close(got, expected)


def test_uint8_fusion_ir_runs_lowered_as_the_reference() -> None:
    text = """
    func.func @main(%x: tensor<4x8xui8>, %y: tensor<4x8xui8>) -> (tensor<4x8xui8>, tensor<4x8xi1>, tensor<4x8xf32>) {
      %c = fusion.full 200 : tensor<ui8>
      %b = fusion.broadcast %c dims = [0, 1] : tensor<ui8> -> tensor<4x8xui8>
      %s = fusion.add %x, %y : tensor<4x8xui8>, tensor<4x8xui8> -> tensor<4x8xui8>
      %m = fusion.compare gt, %x, %b : tensor<4x8xui8>, tensor<4x8xui8> -> tensor<4x8xi1>
      %f = fusion.cast %s : tensor<4x8xui8> -> tensor<4x8xf32>
      func.return %s, %m, %f : tensor<4x8xui8>, tensor<4x8xi1>, tensor<4x8xf32>
    }
    """
    x, y = _pixels(4, 8), _pixels(4, 8)
    reference = hir.execute(hir.parse(text), [x, y])
    s, m, f = hir.execute(hir.run_pipeline(hir.parse(text), "stream-lowering"), [x, y])
    for got, expected in zip((s, m, f), reference, strict=True):
        torch.testing.assert_close(got, expected)
    torch.testing.assert_close(s, x + y)
    torch.testing.assert_close(m, x > 200)
    torch.testing.assert_close(f, (x + y).float())


def test_a_uint8_index_is_a_located_error() -> None:
    table = torch.randn(256, 4)
    with pytest.raises(FrontendError, match=r"test_uint8.py:\d+: error: .*Expected dtype int32/int64 for index"):
        hir.compile(lambda t, i: torch.gather(t, 0, i[:, None].expand(-1, 4)), (table, _pixels(5)))
