// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.layer_norm_backward and fusion.rms_norm_backward: the input gradient of a norm over the
// trailing axes `dims`, from the result's gradient, the norm's input and its optional weight.

// CHECK-LABEL: func.func @layer_norm(
func.func @layer_norm(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %dx = fusion.layer_norm_backward %dy, %x, %w dims = [1] eps = 1.000000e-05 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %dx = fusion.layer_norm_backward %dy, %x, %w dims = [1] eps = 1.0e-05 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %dx : tensor<4x8xf32>
  func.return %dx : tensor<4x8xf32>
}

// No weight; two normalized axes; rows streamed and sharded, as a TP layer's backward has them.
// CHECK-LABEL: func.func @rms_norm(
func.func @rms_norm(%dy: tensor<2x2x4x8xbf16, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>, %x: tensor<2x2x4x8xbf16, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x4x8xbf16, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %dx = fusion.rms_norm_backward %dy, %x dims = [2, 3] eps = 1.000000e-06 : {{.*}} -> tensor<2x2x4x8xbf16, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %dx = fusion.rms_norm_backward %dy, %x dims = [2, 3] eps = 1.0e-06 : tensor<2x2x4x8xbf16, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>, tensor<2x2x4x8xbf16, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x4x8xbf16, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %dx : tensor<2x2x4x8xbf16, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}
