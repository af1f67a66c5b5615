// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.launch with two ins and several outs: one yielded value per outs buffer, in order.

// CHECK-LABEL: func.func @launch_two_ins(
func.func @launch_two_ins(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>, %d: memref<4x8xf32>, %e: memref<4xf32>) {
  // CHECK-NEXT: hir.launch ins(%x = %a, %y = %b : memref<4x8xf32>, memref<4x8xf32>) outs(%c, %d, %e : memref<4x8xf32>, memref<4x8xf32>, memref<4xf32>) {
  hir.launch ins(%x = %a, %y = %b : memref<4x8xf32>, memref<4x8xf32>) outs(%c, %d, %e : memref<4x8xf32>, memref<4x8xf32>, memref<4xf32>) {
    // CHECK-NEXT: %s = fusion.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %s = fusion.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    // CHECK-NEXT: %p = fusion.mul %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %p = fusion.mul %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    // CHECK-NEXT: %r = fusion.sum %s dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
    %r = fusion.sum %s dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
    // CHECK-NEXT: hir.yield %s, %p, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
    hir.yield %s, %p, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// The same buffer may be read and written.
// CHECK-LABEL: func.func @launch_in_place(
func.func @launch_in_place(%a: memref<8xf32>) {
  // CHECK-NEXT: hir.launch ins(%x = %a : memref<8xf32>) outs(%a : memref<8xf32>) {
  hir.launch ins(%x = %a : memref<8xf32>) outs(%a : memref<8xf32>) {
    // CHECK-NEXT: %y = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
    %y = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
    // CHECK-NEXT: hir.yield %y : tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}
