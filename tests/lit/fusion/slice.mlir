// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.slice: static offsets and strides per axis, the sizes from the result type.

// CHECK-LABEL: func.func @narrow(
func.func @narrow(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // CHECK-NEXT: %r = fusion.slice %x offsets = [0, 5] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32>
  %r = fusion.slice %x offsets = [0, 5] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32>
  // CHECK-NEXT: func.return %r : tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @strided(
func.func @strided(%x: tensor<4x8xi32>) -> tensor<2x4xi32> {
  // CHECK-NEXT: %r = fusion.slice %x offsets = [1, 0] strides = [2, 2] : tensor<4x8xi32> -> tensor<2x4xi32>
  %r = fusion.slice %x offsets = [1, 0] strides = [2, 2] : tensor<4x8xi32> -> tensor<2x4xi32>
  // CHECK-NEXT: func.return %r : tensor<2x4xi32>
  func.return %r : tensor<2x4xi32>
}

// CHECK-LABEL: func.func @empty(
func.func @empty(%x: tensor<4x8xf32>) -> tensor<0x8xf32> {
  // CHECK-NEXT: %r = fusion.slice %x offsets = [4, 0] strides = [1, 1] : tensor<4x8xf32> -> tensor<0x8xf32>
  %r = fusion.slice %x offsets = [4, 0] strides = [1, 1] : tensor<4x8xf32> -> tensor<0x8xf32>
  // CHECK-NEXT: func.return %r : tensor<0x8xf32>
  func.return %r : tensor<0x8xf32>
}

// CHECK-LABEL: func.func @dynamic_kept(
func.func @dynamic_kept(%x: tensor<?x8xf32>) -> tensor<?x2xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.slice %x offsets = [0, 6] strides = [1, 1] : tensor<?x8xf32> -> tensor<?x2xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.slice %x offsets = [0, 6] strides = [1, 1] : tensor<?x8xf32> -> tensor<?x2xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<?x2xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<?x2xf32, #fusion.parallel<[stream, serial]>>
}
