// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.all_to_all: chunk k along `split_axis` goes to device k; the received chunks are
// concatenated along `concat_axis` in mesh order (the same axis: the same shape).

// CHECK-LABEL: func.func @all_to_all(
func.func @all_to_all(%a: memref<1x4x16xf32>, %b: memref<4x1x16xf32>) -> !hir.work {
  // CHECK-NEXT: %w = hir.all_to_all %a into %b split_axis 1 concat_axis 0 mesh = [0, 1, 2, 3] : memref<1x4x16xf32>, memref<4x1x16xf32>
  %w = hir.all_to_all %a into %b split_axis 1 concat_axis 0 mesh = [0, 1, 2, 3] : memref<1x4x16xf32>, memref<4x1x16xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// CHECK-LABEL: func.func @same_axis(
func.func @same_axis(%a: memref<4x8xbf16>, %b: memref<4x8xbf16>) -> !hir.work {
  // CHECK-NEXT: %w = hir.all_to_all %a into %b split_axis 0 concat_axis 0 mesh = [0, 1] : memref<4x8xbf16>, memref<4x8xbf16>
  %w = hir.all_to_all %a into %b split_axis 0 concat_axis 0 mesh = [0, 1] : memref<4x8xbf16>, memref<4x8xbf16>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}
