// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.permute: result axis i is operand axis perm[i].

// CHECK-LABEL: func.func @permute(
func.func @permute(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // CHECK-NEXT: %r = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %r = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK-NEXT: func.return %r : tensor<8x4xf32>
  func.return %r : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @permute_3d(
func.func @permute_3d(%x: tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial]>>) -> tensor<4x2x3xf32, #fusion.parallel<[serial, stream, serial]>> {
  // CHECK-NEXT: %r = fusion.permute %x perm = [2, 0, 1] : tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial]>> -> tensor<4x2x3xf32, #fusion.parallel<[serial, stream, serial]>>
  %r = fusion.permute %x perm = [2, 0, 1] : tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial]>> -> tensor<4x2x3xf32, #fusion.parallel<[serial, stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x2x3xf32, #fusion.parallel<[serial, stream, serial]>>
  func.return %r : tensor<4x2x3xf32, #fusion.parallel<[serial, stream, serial]>>
}
