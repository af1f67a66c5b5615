// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.log, fusion.sin, fusion.cos, fusion.erf: elementwise unary on floats; plain,
// stream-parallel result and bf16.

// CHECK-LABEL: func.func @transcendental(
func.func @transcendental(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: %l = fusion.log %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %s = fusion.sin %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %c = fusion.cos %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %e = fusion.erf %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %l = fusion.log %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = fusion.sin %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %c = fusion.cos %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %e = fusion.erf %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %l, %s, %c, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  func.return %l, %s, %c, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @log_stream(
func.func @log_stream(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.log %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.log %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @erf_bf16(
func.func @erf_bf16(%x: tensor<2x16xbf16>) -> tensor<2x16xbf16> {
  // CHECK-NEXT: %r = fusion.erf %x : tensor<2x16xbf16> -> tensor<2x16xbf16>
  %r = fusion.erf %x : tensor<2x16xbf16> -> tensor<2x16xbf16>
  // CHECK-NEXT: func.return %r : tensor<2x16xbf16>
  func.return %r : tensor<2x16xbf16>
}
