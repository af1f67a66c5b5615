// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.linear: x[..., K], w[N, K] or w[K], optional bias.

// CHECK-LABEL: func.func @linear(
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // CHECK-NEXT: %r = fusion.linear %x, %w : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %r = fusion.linear %x, %w : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  // CHECK-NEXT: func.return %r : tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @linear_bias(
func.func @linear_bias(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  // CHECK-NEXT: %r = fusion.linear %x, %w, %b : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<2x4x16xf32>
  %r = fusion.linear %x, %w, %b : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<2x4x16xf32>
  // CHECK-NEXT: func.return %r : tensor<2x4x16xf32>
  func.return %r : tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @linear_scalar_bias(
func.func @linear_scalar_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<f32>) -> tensor<4x16xf32> {
  // CHECK-NEXT: %r = fusion.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<f32> -> tensor<4x16xf32>
  %r = fusion.linear %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<f32> -> tensor<4x16xf32>
  // CHECK-NEXT: func.return %r : tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @linear_vector_weight(
func.func @linear_vector_weight(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.linear %x, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  %r = fusion.linear %x, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @linear_stream(
func.func @linear_stream(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32, #fusion.parallel<[stream(2), serial]>> {
  // CHECK-NEXT: %r = fusion.linear %x, %w : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32, #fusion.parallel<[stream(2), serial]>>
  %r = fusion.linear %x, %w : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32, #fusion.parallel<[stream(2), serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x16xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %r : tensor<4x16xf32, #fusion.parallel<[stream(2), serial]>>
}
