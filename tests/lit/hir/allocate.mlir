// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.allocate: static, dynamic (one size operand per `?`), symmetric, with attributes.

// CHECK-LABEL: func.func @allocate_static(
func.func @allocate_static() -> memref<4x8xf32> {
  // CHECK-NEXT: %buf = hir.allocate() : memref<4x8xf32>
  %buf = hir.allocate() : memref<4x8xf32>
  // CHECK-NEXT: func.return %buf : memref<4x8xf32>
  func.return %buf : memref<4x8xf32>
}

// CHECK-LABEL: func.func @allocate_dynamic(
func.func @allocate_dynamic(%n: index, %m: index) -> (memref<?x8xf32>, memref<?x8x?xbf16>) {
  // CHECK-NEXT: %one = hir.allocate(%n) : memref<?x8xf32>
  %one = hir.allocate(%n) : memref<?x8xf32>
  // CHECK-NEXT: %two = hir.allocate(%n, %m) : memref<?x8x?xbf16>
  %two = hir.allocate(%n, %m) : memref<?x8x?xbf16>
  // CHECK-NEXT: func.return %one, %two : memref<?x8xf32>, memref<?x8x?xbf16>
  func.return %one, %two : memref<?x8xf32>, memref<?x8x?xbf16>
}

// CHECK-LABEL: func.func @allocate_symmetric(
func.func @allocate_symmetric(%n: index) -> (memref<2x64xf32>, memref<?xf32>) {
  // CHECK-NEXT: %sym = hir.allocate() symmetric : memref<2x64xf32>
  %sym = hir.allocate() symmetric : memref<2x64xf32>
  // CHECK-NEXT: %dyn = hir.allocate(%n) symmetric {tag = "gather"} : memref<?xf32>
  %dyn = hir.allocate(%n) symmetric {tag = "gather"} : memref<?xf32>
  // CHECK-NEXT: func.return %sym, %dyn : memref<2x64xf32>, memref<?xf32>
  func.return %sym, %dyn : memref<2x64xf32>, memref<?xf32>
}

// CHECK-LABEL: func.func @allocate_scalar(
func.func @allocate_scalar() -> memref<f32> {
  // CHECK-NEXT: %s = hir.allocate() : memref<f32>
  %s = hir.allocate() : memref<f32>
  // CHECK-NEXT: func.return %s : memref<f32>
  func.return %s : memref<f32>
}
