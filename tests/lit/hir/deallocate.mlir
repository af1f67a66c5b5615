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

// -----

// A buffer allocated and released in each iteration of a loop, used in between.

// CHECK-LABEL: func.func @per_iteration(
func.func @per_iteration(%a: memref<4x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  hir.for %i = %c0 to %n step %c1 {
    // CHECK: %buf = hir.allocate() : memref<4x8xf32>
    %buf = hir.allocate() : memref<4x8xf32>
    hir.launch ins(%x = %a : memref<4x8xf32>) outs(%buf : memref<4x8xf32>) {
      %y = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
      hir.yield %y : tensor<4x8xf32>
    }
    // CHECK: hir.deallocate %buf : memref<4x8xf32>
    hir.deallocate %buf : memref<4x8xf32>
  }
  func.return
}
