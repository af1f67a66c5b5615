// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// Float elementwise ops of models: sigmoid, silu, gelu (approximate = none | tanh), sqrt, rsqrt,
// reciprocal, and pow of two tensors.

// CHECK-LABEL: func.func @sigmoid(
func.func @sigmoid(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.sigmoid %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @silu(
func.func @silu(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.silu %x : tensor<4x8xbf16> -> tensor<4x8xbf16, #fusion.parallel<[stream, serial]>>
  %r = fusion.silu %x : tensor<4x8xbf16> -> tensor<4x8xbf16, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xbf16, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xbf16, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @gelu_exact(
func.func @gelu_exact(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // CHECK-NEXT: %r = fusion.gelu %x approximate = none : tensor<4x8xf16> -> tensor<4x8xf16>
  %r = fusion.gelu %x approximate = none : tensor<4x8xf16> -> tensor<4x8xf16>
  // CHECK-NEXT: func.return %r : tensor<4x8xf16>
  func.return %r : tensor<4x8xf16>
}

// CHECK-LABEL: func.func @gelu_tanh(
func.func @gelu_tanh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.gelu %x approximate = tanh : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.gelu %x approximate = tanh : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @sqrt_rsqrt_reciprocal(
func.func @sqrt_rsqrt_reciprocal(%x: tensor<8xf64>) -> tensor<8xf64> {
  // CHECK-NEXT: %a = fusion.sqrt %x : tensor<8xf64> -> tensor<8xf64>
  %a = fusion.sqrt %x : tensor<8xf64> -> tensor<8xf64>
  // CHECK-NEXT: %b = fusion.rsqrt %a : tensor<8xf64> -> tensor<8xf64>
  %b = fusion.rsqrt %a : tensor<8xf64> -> tensor<8xf64>
  // CHECK-NEXT: %c = fusion.reciprocal %b : tensor<8xf64> -> tensor<8xf64>
  %c = fusion.reciprocal %b : tensor<8xf64> -> tensor<8xf64>
  // CHECK-NEXT: func.return %c : tensor<8xf64>
  func.return %c : tensor<8xf64>
}

// CHECK-LABEL: func.func @pow(
func.func @pow(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.pow %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.pow %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
