// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.deallocate releases a buffer, static or dynamic.

// CHECK-LABEL: func.func @deallocate(
func.func @deallocate(%n: index) {
  // CHECK-NEXT: %a = hir.allocate() : memref<4x8xf32>
  %a = hir.allocate() : memref<4x8xf32>
  // CHECK-NEXT: %b = hir.allocate(%n) : memref<?xi32>
  %b = hir.allocate(%n) : memref<?xi32>
  // CHECK-NEXT: hir.deallocate %a : memref<4x8xf32>
  hir.deallocate %a : memref<4x8xf32>
  // CHECK-NEXT: hir.deallocate %b : memref<?xi32>
  hir.deallocate %b : memref<?xi32>
  // CHECK-NEXT: func.return
  func.return
}
