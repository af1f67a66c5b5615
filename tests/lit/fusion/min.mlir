// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.min: reduces the axes `dims`, the result drops them.

// CHECK-LABEL: func.func @min(
func.func @min(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.min %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %r = fusion.min %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @min_two_dims(
func.func @min_two_dims(%x: tensor<2x4x8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.min %x dims = [0, 2] : tensor<2x4x8xf32> -> tensor<4xf32>
  %r = fusion.min %x dims = [0, 2] : tensor<2x4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @min_all(
func.func @min_all(%x: tensor<4x8xf32>) -> tensor<f32> {
  // CHECK-NEXT: %r = fusion.min %x dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %r = fusion.min %x dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  // CHECK-NEXT: func.return %r : tensor<f32>
  func.return %r : tensor<f32>
}

// CHECK-LABEL: func.func @min_stream(
func.func @min_stream(%x: tensor<4x8x2xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.min %x dims = [2] : tensor<4x8x2xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.min %x dims = [2] : tensor<4x8x2xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
