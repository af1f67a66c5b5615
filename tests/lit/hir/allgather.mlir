// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.allgather: the inputs of the mesh devices concatenated along `axis` into `output`, whose
// extent on that axis is the mesh size times the input's.

// CHECK-LABEL: func.func @allgather(
func.func @allgather(%a: memref<1x64x256xf32>, %g: memref<2x64x256xf32>) -> !hir.work {
  // CHECK-NEXT: %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x64x256xf32>, memref<2x64x256xf32>
  %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x64x256xf32>, memref<2x64x256xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// CHECK-LABEL: func.func @allgather_inner(
func.func @allgather_inner(%a: memref<4x8xbf16>, %g: memref<4x32xbf16>) -> !hir.work {
  // CHECK-NEXT: %w = hir.allgather %a into %g axis 1 mesh = [3, 2, 1, 0] : memref<4x8xbf16>, memref<4x32xbf16>
  %w = hir.allgather %a into %g axis 1 mesh = [3, 2, 1, 0] : memref<4x8xbf16>, memref<4x32xbf16>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// A contiguous view (selected along the outermost axis) and dynamic extents are accepted.
// CHECK-LABEL: func.func @allgather_view(
func.func @allgather_view(%a: memref<4x1x8xf32>, %g: memref<?x8xf32>, %i: index) -> !hir.work {
  // CHECK-NEXT: %v = hir.alias_select %a[%i] axis 0 : memref<4x1x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
  %v = hir.alias_select %a[%i] axis 0 : memref<4x1x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
  // CHECK-NEXT: %w = hir.allgather %v into %g axis 0 mesh = [0, 1] : memref<1x8xf32, strided<[8, 1], offset: ?>>, memref<?x8xf32>
  %w = hir.allgather %v into %g axis 0 mesh = [0, 1] : memref<1x8xf32, strided<[8, 1], offset: ?>>, memref<?x8xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}
