"""
Result adoption (runtime/result_adoption.py): a launch into a fresh buffer takes its kernel's
result as the buffer instead of a copy, and copies wherever that would not be the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

import hir
from hir.runtime import executor

SOFTMAX = """
func.func @main(%x: memref<4x8xf32>) -> memref<4x8xf32> {
  %y = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%a = %x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
    %r = fusion.softmax %a dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %r : tensor<4x8xf32>
  }
  func.return %y : memref<4x8xf32>
}
"""

# A segment that yields a fresh result and a view of its input: only the first may be adopted.
SEGMENT = """
func.func @main(%x: memref<4x8xf32>) -> (memref<4x8xf32>, memref<8x4xf32>) {
  %y = hir.allocate() : memref<4x8xf32>
  %z = hir.allocate() : memref<8x4xf32>
  hir.launch ins(%a = %x : memref<4x8xf32>) outs(%y, %z : memref<4x8xf32>, memref<8x4xf32>) {
    %e = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32>
    %r = fusion.add %e, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %v = fusion.reshape %a : tensor<4x8xf32> -> tensor<8x4xf32>
    hir.yield %r, %v : tensor<4x8xf32>, tensor<8x4xf32>
  }
  func.return %y, %z : memref<4x8xf32>, memref<8x4xf32>
}
"""

# The buffer is seen before the launch (a view of it is taken): it is not fresh.
SEEN = """
func.func @main(%x: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %y = hir.allocate() : memref<4x8xf32>
  %row = hir.alias_select %y[%c0] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  hir.launch ins(%a = %x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
    %r = fusion.softmax %a dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %r : tensor<4x8xf32>
  }
  func.return %y : memref<4x8xf32>
}
"""

# A stream switch between the allocation and the launch: the result would be made on another stream.
SWITCHED = """
func.func @main(%x: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %main = hir.get_current_stream
  %y = hir.allocate() : memref<4x8xf32>
  %s = hir.stream %c0
  hir.set_current_stream %s
  hir.synchronize %main
  hir.launch ins(%a = %x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
    %r = fusion.softmax %a dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %r : tensor<4x8xf32>
  }
  hir.set_current_stream %main
  hir.synchronize %s
  func.return %y : memref<4x8xf32>
}
"""


# A stream loop from another stream between the allocation and the launch: that stream is current after it.
LOOP_FROM_ANOTHER_STREAM = """
func.func @main(%x: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = hir.num_streams
  %main = hir.get_current_stream
  %y = hir.allocate() : memref<4x8xf32>
  %other = hir.stream %c0
  hir.set_current_stream %other
  hir.synchronize %main
  hir.set_current_stream %main
  hir.stream_for %i = %c0 to %c2 step %c1 streams(%s) of %n from %other {
  }
  hir.launch ins(%a = %x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
    %r = fusion.softmax %a dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %r : tensor<4x8xf32>
  }
  hir.set_current_stream %main
  hir.synchronize %other
  func.return %y : memref<4x8xf32>
}
"""

# The same loop from the caller's stream: the caller's stream is current after it, as before it.
LOOP_FROM_THE_CALLERS_STREAM = LOOP_FROM_ANOTHER_STREAM.replace("of %n from %other", "of %n from %main")


# The launch runs on the caller's stream again, as the allocation did; its out drops a unit axis.
SWITCHED_BACK = """
func.func @main(%x: memref<4x8xf32>) -> memref<1x4x8xf32> {
  %c0 = arith.constant 0 : index
  %main = hir.get_current_stream
  %y = hir.allocate() : memref<1x4x8xf32>
  %s = hir.stream %c0
  hir.set_current_stream %s
  hir.synchronize %main
  hir.set_current_stream %main
  hir.synchronize %s
  %y_0 = hir.alias_select %y[%c0] axis 0 : memref<1x4x8xf32> -> memref<4x8xf32, strided<[8, 1], offset: ?>>
  hir.launch ins(%a = %x : memref<4x8xf32>) outs(%y_0 : memref<4x8xf32, strided<[8, 1], offset: ?>>) {
    %r = fusion.softmax %a dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %r : tensor<4x8xf32>
  }
  func.return %y : memref<1x4x8xf32>
}
"""


# A view ends the launch: the kernel's result laid out transposed, viewed back (attention's merged heads).
VIEWED_BACK = """
func.func @main(%x: memref<4x8xf32>) -> memref<4x8xf32> {
  %y = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%a = %x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
    %t = fusion.permute %a perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    %e = fusion.exp %t : tensor<8x4xf32> -> tensor<8x4xf32>
    %r = fusion.permute %e perm = [1, 0] : tensor<8x4xf32> -> tensor<4x8xf32>
    hir.yield %r : tensor<4x8xf32>
  }
  func.return %y : memref<4x8xf32>
}
"""


@contextmanager
def counted_copies() -> Iterator[list[tuple[int, ...]]]:
    """The shapes of the `Tensor.copy_` calls made meanwhile."""
    shapes: list[tuple[int, ...]] = []
    original = torch.Tensor.copy_

    def copy_(self: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        shapes.append(tuple(self.shape))
        return original(self, src, non_blocking)

    torch.Tensor.copy_ = copy_  # type: ignore[method-assign]
    try:
        yield shapes
    finally:
        torch.Tensor.copy_ = original  # type: ignore[method-assign]


def program(text: str, race_check: bool = False) -> executor.Program:
    return hir.compile_program(hir.parse(text), race_check=race_check)


def test_a_fresh_buffer_takes_the_kernels_result() -> None:
    x = torch.randn(4, 8)
    run = program(SOFTMAX)
    with counted_copies() as copies:
        (y,) = run([x])
    torch.testing.assert_close(y, torch.softmax(x, 1))
    assert copies == []


def test_a_preallocated_output_still_receives_the_result() -> None:
    x = torch.randn(4, 8)
    out = torch.full((4, 8), float("nan"))
    with counted_copies() as copies:
        (y,) = program(SOFTMAX)([x], outputs=[out])
    assert y is out
    torch.testing.assert_close(out, torch.softmax(x, 1))
    assert copies == [(4, 8)]


@pytest.mark.parametrize(
    "text", [SEEN, SWITCHED, LOOP_FROM_ANOTHER_STREAM], ids=["seen-before", "stream-switch", "loop-from-another-stream"]
)
def test_a_buffer_that_is_not_fresh_gets_a_copy(text: str) -> None:
    x = torch.randn(4, 8)
    with counted_copies() as copies:
        (y,) = program(text)([x], num_streams=1)
    torch.testing.assert_close(y, torch.softmax(x, 1))
    assert copies == [(4, 8)]


def test_a_view_of_an_input_is_copied_and_a_fresh_result_adopted() -> None:
    x = torch.randn(4, 8)
    with counted_copies() as copies:
        y, z = program(SEGMENT)([x])
    torch.testing.assert_close(y, torch.exp(x) + x)
    torch.testing.assert_close(z, x.reshape(8, 4))
    assert copies == [(8, 4)]  # the view of %x only
    assert z.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    x.zero_()  # the outputs are memory of their own
    assert z.abs().sum() > 0
    assert y.abs().sum() > 0


def test_the_race_checker_runs_without_adoption() -> None:
    x = torch.randn(4, 8)
    with counted_copies() as copies:
        (y,) = program(SOFTMAX, race_check=True)([x])
    torch.testing.assert_close(y, torch.softmax(x, 1))
    assert copies == [(4, 8)]


def test_back_on_the_allocations_stream_a_whole_buffer_view_takes_the_result() -> None:
    x = torch.randn(4, 8)
    with counted_copies() as copies:
        (y,) = program(SWITCHED_BACK)([x], num_streams=1)
    torch.testing.assert_close(y, torch.softmax(x, 1).unsqueeze(0))
    assert copies == []


def test_a_contiguous_view_of_a_fresh_result_is_adopted() -> None:
    x = torch.randn(4, 8)
    with counted_copies() as copies:
        (y,) = program(VIEWED_BACK)([x])
    torch.testing.assert_close(y, torch.exp(x))
    assert copies == []


def test_after_a_stream_loop_from_the_callers_stream_the_buffer_is_still_fresh() -> None:
    x = torch.randn(4, 8)
    with counted_copies() as copies:
        (y,) = program(LOOP_FROM_THE_CALLERS_STREAM)([x], num_streams=2)
    torch.testing.assert_close(y, torch.softmax(x, 1))
    assert copies == []
