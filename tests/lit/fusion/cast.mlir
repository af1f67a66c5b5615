// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.cast: the result element type says what to convert to; the encoding may change too.

// CHECK-LABEL: func.func @cast_bf16(
func.func @cast_bf16(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // CHECK-NEXT: %r = fusion.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  %r = fusion.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK-NEXT: func.return %r : tensor<4x8xbf16>
  func.return %r : tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @cast_int(
func.func @cast_int(%x: tensor<4x8xi32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.cast %x : tensor<4x8xi32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.cast %x : tensor<4x8xi32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
