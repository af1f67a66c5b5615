// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.exp: elementwise unary; plain, stream-parallel result and bf16.

// CHECK-LABEL: func.func @exp(
func.func @exp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @exp_stream(
func.func @exp_stream(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @exp_bf16(
func.func @exp_bf16(%x: tensor<2x16xbf16>) -> tensor<2x16xbf16> {
  // CHECK-NEXT: %r = fusion.exp %x : tensor<2x16xbf16> -> tensor<2x16xbf16>
  %r = fusion.exp %x : tensor<2x16xbf16> -> tensor<2x16xbf16>
  // CHECK-NEXT: func.return %r : tensor<2x16xbf16>
  func.return %r : tensor<2x16xbf16>
}
