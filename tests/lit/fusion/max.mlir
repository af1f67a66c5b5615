// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.max: reduces the axes `dims`, the result drops them.

// CHECK-LABEL: func.func @max(
func.func @max(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.max %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %r = fusion.max %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @max_two_dims(
func.func @max_two_dims(%x: tensor<2x4x8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.max %x dims = [0, 2] : tensor<2x4x8xf32> -> tensor<4xf32>
  %r = fusion.max %x dims = [0, 2] : tensor<2x4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @max_all(
func.func @max_all(%x: tensor<4x8xf32>) -> tensor<f32> {
  // CHECK-NEXT: %r = fusion.max %x dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %r = fusion.max %x dims = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  // CHECK-NEXT: func.return %r : tensor<f32>
  func.return %r : tensor<f32>
}

// CHECK-LABEL: func.func @max_stream(
func.func @max_stream(%x: tensor<4x8x2xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.max %x dims = [2] : tensor<4x8x2xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.max %x dims = [2] : tensor<4x8x2xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
