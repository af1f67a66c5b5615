"""
`fusion.index_copy` (dialects/fusion/indexing.py): slices written at the positions an index names,
each position taking its last entry's slice where the index repeats it, as torch's CPU kernel
writes them in order. Checked against that loop written out, at the fusion level and lowered,
through its `out=` kernel into a strided view, on the CPU and on a GPU (whose own index_copy_
writes repeated positions in any order); and as what the frontend makes of `cache[:, :, pos] = k`.
"""

from __future__ import annotations

import pytest
import torch
from device_under_test import execute_lowered

import hir
from hir.runtime.kernels import eager_kernel, out_kernel

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")],
    ),
]
INDEX = torch.tensor([3, 0, 7, 3, 0, 5, 0])  # 3 twice and 0 three times: their last entries win


def written_in_order(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """The reference: each entry's slice written in turn, so a later entry overwrites an earlier one."""
    out = x.clone()
    for j, position in enumerate(index.tolist()):
        out.select(dim, position).copy_(source.select(dim, j))
    return out


def module(x: str, index: str, source: str, dim: int) -> str:
    return f"""
func.func @main(%x: tensor<{x}>, %i: tensor<{index}>, %s: tensor<{source}>) -> tensor<{x}> {{
  %r = fusion.index_copy %x, %i, %s dim = {dim} : tensor<{x}>, tensor<{index}>, tensor<{source}> -> tensor<{x}>
  func.return %r : tensor<{x}>
}}
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_the_op_keeps_the_last_writer_at_the_fusion_level_and_lowered(dim: int, device: str) -> None:
    torch.manual_seed(dim)
    shape = [8, 8, 8]
    source_shape = [len(INDEX) if d == dim else n for d, n in enumerate(shape)]
    text = module("8x8x8xf32", f"{len(INDEX)}xi64", "x".join(map(str, source_shape)) + "xf32", dim)
    x, source = torch.randn(shape), torch.randn(source_shape)
    expected = written_in_order(x, dim, INDEX, source)
    inputs = [t.to(device) for t in (x, INDEX, source)]
    (fusion_level,) = hir.execute(hir.parse(text), inputs)
    torch.testing.assert_close(fusion_level.cpu(), expected, rtol=0, atol=0)
    lowered = hir.run_pipeline(hir.parse(text), "stream-lowering")
    given = [t.clone() for t in inputs]
    (out,) = execute_lowered(lowered, given, device_name=device)
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=0)
    assert torch.equal(given[0].cpu(), x)  # x is only read


def test_the_out_kernel_writes_a_strided_view() -> None:
    op = next(o for o in hir.parse(module("5x3xf32", "4xi32", "4x3xf32", 0)).walk() if o.name == "fusion.index_copy")
    x, source = torch.randn(5, 3), torch.randn(4, 3)
    index = torch.tensor([4, 1, 1, 0], dtype=torch.int32)
    expected = written_in_order(x, 0, index, source)
    torch.testing.assert_close(eager_kernel(op)(x, index, source), expected, rtol=0, atol=0)  # type: ignore[arg-type]
    base = torch.full((5, 6), 7.0)
    view = base[:, ::2]
    out_kernel(op)(view, x, index, source)  # type: ignore[arg-type]
    torch.testing.assert_close(view, expected, rtol=0, atol=0)
    torch.testing.assert_close(base[:, 1::2], torch.full((5, 3), 7.0))  # the other columns are untouched


def test_a_cache_written_at_positions_is_one_index_copy() -> None:
    """`cache[:, :, pos] = k`: no comparison of the entries, no pass of a where over the cache."""

    def write(cache: torch.Tensor, pos: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        cache = cache.clone()
        cache[:, :, pos] = k
        return cache

    args = (torch.randn(2, 4, 16, 8), torch.tensor([5, 9, 5]), torch.randn(2, 4, 3, 8))
    compiled = hir.compile(write, args)
    assert compiled.fusion_text.count("fusion.index_copy") == 1
    wheres = [line for line in compiled.fusion_text.splitlines() if "fusion.where" in line]
    assert not [line for line in wheres if "-> tensor<2x4x16x8xf32>" in line]  # only the negative indices' wrap
    for pos in (torch.tensor([5, 9, 5]), torch.tensor([0, 15, 1])):
        call = (torch.randn(2, 4, 16, 8), pos, torch.randn(2, 4, 3, 8))
        torch.testing.assert_close(compiled(*call), write(*call), rtol=0, atol=0)
