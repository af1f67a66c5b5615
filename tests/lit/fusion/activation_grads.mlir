// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// The backward of activations as one op: gelu_backward (approximate = none | tanh), silu_backward.

// CHECK-LABEL: func.func @gelu_backward_exact(
func.func @gelu_backward_exact(%dy: tensor<4x8xbf16>, %x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK-NEXT: %r = fusion.gelu_backward %dy, %x approximate = none : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  %r = fusion.gelu_backward %dy, %x approximate = none : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  // CHECK-NEXT: func.return %r : tensor<4x8xbf16>
  func.return %r : tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @gelu_backward_tanh(
func.func @gelu_backward_tanh(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.gelu_backward %dy, %x approximate = tanh : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.gelu_backward %dy, %x approximate = tanh : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @silu_backward(
func.func @silu_backward(%dy: tensor<4x8xf16>, %x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // CHECK-NEXT: %r = fusion.silu_backward %dy, %x : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %r = fusion.silu_backward %dy, %x : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  // CHECK-NEXT: func.return %r : tensor<4x8xf16>
  func.return %r : tensor<4x8xf16>
}
