// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.full: a splat tensor of one number; a scalar is a 0-d one, broadcast where it is used.

// CHECK-LABEL: func.func @scalar(
func.func @scalar() -> tensor<f32> {
  // CHECK-NEXT: %r = fusion.full 5.000000e-01 : tensor<f32>
  %r = fusion.full 5.000000e-01 : tensor<f32>
  // CHECK-NEXT: func.return %r : tensor<f32>
  func.return %r : tensor<f32>
}

// CHECK-LABEL: func.func @splat_int(
func.func @splat_int() -> tensor<4x8xi32> {
  // CHECK-NEXT: %r = fusion.full -3 : tensor<4x8xi32>
  %r = fusion.full -3 : tensor<4x8xi32>
  // CHECK-NEXT: func.return %r : tensor<4x8xi32>
  func.return %r : tensor<4x8xi32>
}

// CHECK-LABEL: func.func @bool(
func.func @bool() -> tensor<4xi1> {
  // CHECK-NEXT: %r = fusion.full true : tensor<4xi1>
  %r = fusion.full true : tensor<4xi1>
  // CHECK-NEXT: func.return %r : tensor<4xi1>
  func.return %r : tensor<4xi1>
}

// CHECK-LABEL: func.func @special(
func.func @special() -> tensor<2xf32> {
  // CHECK-NEXT: %a = fusion.full -inf : tensor<2xf32>
  %a = fusion.full -inf : tensor<2xf32>
  // CHECK-NEXT: %b = fusion.full inf : tensor<2xf32>
  %b = fusion.full inf : tensor<2xf32>
  // CHECK-NEXT: %r = fusion.full nan : tensor<2xf32>
  %r = fusion.full nan : tensor<2xf32>
  // CHECK-NEXT: func.return %r : tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// CHECK-LABEL: func.func @scale(
func.func @scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %c = fusion.full 1.250000e-01 : tensor<f32>
  %c = fusion.full 1.250000e-01 : tensor<f32>
  // CHECK-NEXT: %b = fusion.broadcast %c dims = [0, 1] : tensor<f32> -> tensor<4x8xf32>
  %b = fusion.broadcast %c dims = [0, 1] : tensor<f32> -> tensor<4x8xf32>
  // CHECK-NEXT: %r = fusion.mul %x, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.mul %x, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @streamed(
func.func @streamed() -> tensor<4x8xbf16, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.full 2 : tensor<4x8xbf16, #fusion.parallel<[stream, serial]>>
  %r = fusion.full 2 : tensor<4x8xbf16, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xbf16, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xbf16, #fusion.parallel<[stream, serial]>>
}
