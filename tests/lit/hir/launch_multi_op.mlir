// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.launch running a whole segment: several fusion ops in one region.

// CHECK-LABEL: func.func @launch_segment(
func.func @launch_segment(%x: memref<4x8xf32>, %w: memref<16x8xf32>, %bias: memref<16xf32>, %out: memref<16x4xbf16>) {
  // CHECK-NEXT: hir.launch ins(%xt = %x, %wt = %w, %bt = %bias : memref<4x8xf32>, memref<16x8xf32>, memref<16xf32>) outs(%out : memref<16x4xbf16>) {
  hir.launch ins(%xt = %x, %wt = %w, %bt = %bias : memref<4x8xf32>, memref<16x8xf32>, memref<16xf32>) outs(%out : memref<16x4xbf16>) {
    // CHECK-NEXT: %0 = fusion.linear %xt, %wt, %bt : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
    %0 = fusion.linear %xt, %wt, %bt : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
    // CHECK-NEXT: %1 = fusion.tanh %0 : tensor<4x16xf32> -> tensor<4x16xf32>
    %1 = fusion.tanh %0 : tensor<4x16xf32> -> tensor<4x16xf32>
    // CHECK-NEXT: %2 = fusion.permute %1 perm = [1, 0] : tensor<4x16xf32> -> tensor<16x4xf32>
    %2 = fusion.permute %1 perm = [1, 0] : tensor<4x16xf32> -> tensor<16x4xf32>
    // CHECK-NEXT: %3 = fusion.cast %2 : tensor<16x4xf32> -> tensor<16x4xbf16>
    %3 = fusion.cast %2 : tensor<16x4xf32> -> tensor<16x4xbf16>
    // CHECK-NEXT: hir.yield %3 : tensor<16x4xbf16>
    hir.yield %3 : tensor<16x4xbf16>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}
