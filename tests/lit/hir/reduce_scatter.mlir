// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.reduce_scatter: reduce, then device k keeps chunk k along `axis`.

// CHECK-LABEL: func.func @reduce_scatter(
func.func @reduce_scatter(%a: memref<8x16xf32>, %r: memref<4x16xf32>) -> !hir.work {
  // CHECK-NEXT: %w = hir.reduce_scatter sum %a into %r axis 0 mesh = [0, 1] : memref<8x16xf32>, memref<4x16xf32>
  %w = hir.reduce_scatter sum %a into %r axis 0 mesh = [0, 1] : memref<8x16xf32>, memref<4x16xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// CHECK-LABEL: func.func @reduce_scatter_inner(
func.func @reduce_scatter_inner(%a: memref<8x16xf32>, %r: memref<8x4xf32>) -> !hir.work {
  // CHECK-NEXT: %w = hir.reduce_scatter max %a into %r axis 1 mesh = [0, 1, 2, 3] : memref<8x16xf32>, memref<8x4xf32>
  %w = hir.reduce_scatter max %a into %r axis 1 mesh = [0, 1, 2, 3] : memref<8x16xf32>, memref<8x4xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}
