// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.reduce: the mesh devices' inputs reduced into the output of mesh position `root`.

// CHECK-LABEL: func.func @reduce(
func.func @reduce(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %root: index) -> !hir.work {
  // CHECK-NEXT: %w = hir.reduce sum %a into %b root %root mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
  %w = hir.reduce sum %a into %b root %root mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// CHECK-LABEL: func.func @reduce_max_in_place(
func.func @reduce_max_in_place(%a: memref<16xbf16>) -> !hir.work {
  // CHECK-NEXT: %c2 = arith.constant 2 : index
  %c2 = arith.constant 2 : index
  // CHECK-NEXT: %w = hir.reduce max %a into %a root %c2 mesh = [4, 5, 6, 7] : memref<16xbf16>, memref<16xbf16>
  %w = hir.reduce max %a into %a root %c2 mesh = [4, 5, 6, 7] : memref<16xbf16>, memref<16xbf16>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// A contiguous view (the chunk of a stream loop) is a valid buffer.
// CHECK-LABEL: func.func @reduce_view(
func.func @reduce_view(%p: memref<2x8x4xf32>, %c: memref<8x4xf32>, %i: index) -> !hir.work {
  // CHECK-NEXT: %v = hir.alias_select %p[%i] axis 0 : memref<2x8x4xf32> -> memref<8x4xf32, strided<[4, 1], offset: ?>>
  %v = hir.alias_select %p[%i] axis 0 : memref<2x8x4xf32> -> memref<8x4xf32, strided<[4, 1], offset: ?>>
  // CHECK-NEXT: %w = hir.reduce sum %v into %c root %i mesh = [0, 1] : memref<8x4xf32, strided<[4, 1], offset: ?>>, memref<8x4xf32>
  %w = hir.reduce sum %v into %c root %i mesh = [0, 1] : memref<8x4xf32, strided<[4, 1], offset: ?>>, memref<8x4xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}
