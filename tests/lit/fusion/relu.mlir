// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.relu: elementwise unary; plain, stream-parallel result and bf16.

// CHECK-LABEL: func.func @relu(
func.func @relu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @relu_stream(
func.func @relu_stream(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @relu_bf16(
func.func @relu_bf16(%x: tensor<2x16xbf16>) -> tensor<2x16xbf16> {
  // CHECK-NEXT: %r = fusion.relu %x : tensor<2x16xbf16> -> tensor<2x16xbf16>
  %r = fusion.relu %x : tensor<2x16xbf16> -> tensor<2x16xbf16>
  // CHECK-NEXT: func.return %r : tensor<2x16xbf16>
  func.return %r : tensor<2x16xbf16>
}
