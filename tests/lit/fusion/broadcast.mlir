// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.broadcast: `dims` are the new axes of the result.

// CHECK-LABEL: func.func @broadcast_leading(
func.func @broadcast_leading(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.broadcast %x dims = [0] : tensor<8xf32> -> tensor<4x8xf32>
  %r = fusion.broadcast %x dims = [0] : tensor<8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @broadcast_two(
func.func @broadcast_two(%x: tensor<8xf32>) -> tensor<2x8x3xf32> {
  // CHECK-NEXT: %r = fusion.broadcast %x dims = [0, 2] : tensor<8xf32> -> tensor<2x8x3xf32>
  %r = fusion.broadcast %x dims = [0, 2] : tensor<8xf32> -> tensor<2x8x3xf32>
  // CHECK-NEXT: func.return %r : tensor<2x8x3xf32>
  func.return %r : tensor<2x8x3xf32>
}

// CHECK-LABEL: func.func @broadcast_stream(
func.func @broadcast_stream(%x: tensor<8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.broadcast %x dims = [0] : tensor<8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.broadcast %x dims = [0] : tensor<8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
