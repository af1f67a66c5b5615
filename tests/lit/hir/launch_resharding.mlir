// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// A resharding hir.launch: the region sees the global, #fusion.parallel-encoded tensor
// (`memref<..> as tensor<..>`) whose local shape is the buffer's; a plain view prints no `as`.

// CHECK-LABEL: func.func @launch_resharding(
func.func @launch_resharding(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  // CHECK-NEXT: hir.launch ins(%x = %a : memref<1x8xf32> as tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) outs(%g : memref<2x8xf32>) {
  hir.launch ins(%x = %a : memref<1x8xf32> as tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) outs(%g : memref<2x8xf32>) {
    // CHECK-NEXT: %y = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
    %y = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
    // CHECK-NEXT: hir.yield %y : tensor<2x8xf32>
    hir.yield %y : tensor<2x8xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @launch_resharding_mixed(
func.func @launch_resharding_mixed(%a: memref<1x8xf32>, %b: memref<4xf32>, %g: memref<4x8xf32>) {
  // CHECK-NEXT: hir.launch ins(%x = %a, %y = %b : memref<1x8xf32> as tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>, memref<4xf32>) outs(%g : memref<4x8xf32>) {
  hir.launch ins(%x = %a, %y = %b : memref<1x8xf32> as tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>, memref<4xf32>) outs(%g : memref<4x8xf32>) {
    // CHECK-NEXT: %z = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x8xf32>
    %z = fusion.set %x : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x8xf32>
    // CHECK-NEXT: hir.yield %z : tensor<4x8xf32>
    hir.yield %z : tensor<4x8xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}
