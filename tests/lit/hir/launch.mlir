// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.launch with one ins buffer and one outs buffer: the region sees the buffer as a tensor.

// CHECK-LABEL: func.func @launch(
func.func @launch(%a: memref<8xf32>, %c: memref<8xf32>) {
  // CHECK-NEXT: hir.launch ins(%x = %a : memref<8xf32>) outs(%c : memref<8xf32>) {
  hir.launch ins(%x = %a : memref<8xf32>) outs(%c : memref<8xf32>) {
    // CHECK-NEXT: %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
    %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
    // CHECK-NEXT: hir.yield %y : tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// Views as ins/outs; the region tensor has the view's shape, the yielded tensor may carry an encoding.
// CHECK-LABEL: func.func @launch_views(
func.func @launch_views(%a: memref<4x8xf32>, %c: memref<4x8xf32>, %i: index) {
  // CHECK-NEXT: %in = hir.alias_select %a[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  %in = hir.alias_select %a[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  // CHECK-NEXT: %out = hir.alias_select %c[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  %out = hir.alias_select %c[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
  // CHECK-NEXT: hir.launch ins(%x = %in : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
  hir.launch ins(%x = %in : memref<8xf32, strided<[1], offset: ?>>) outs(%out : memref<8xf32, strided<[1], offset: ?>>) {
    // CHECK-NEXT: %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32, #fusion.parallel<[serial]>>
    %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32, #fusion.parallel<[serial]>>
    // CHECK-NEXT: hir.yield %y : tensor<8xf32, #fusion.parallel<[serial]>>
    hir.yield %y : tensor<8xf32, #fusion.parallel<[serial]>>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @launch_attributes(
func.func @launch_attributes(%a: memref<8xf32>, %c: memref<8xf32>) {
  // CHECK-NEXT: hir.launch ins(%x = %a : memref<8xf32>) outs(%c : memref<8xf32>) attributes {segment = 3 : i64} {
  hir.launch ins(%x = %a : memref<8xf32>) outs(%c : memref<8xf32>) attributes {segment = 3 : i64} {
    // CHECK-NEXT: %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
    %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
    // CHECK-NEXT: hir.yield %y : tensor<8xf32>
    hir.yield %y : tensor<8xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: func.return
  func.return
}
