// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// #fusion.parallel with serial axes only: an explicit encoding is kept, not dropped.

// CHECK-LABEL: func.func @serial_explicit(
func.func @serial_explicit(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, serial]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, serial]>>
  %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[serial, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[serial, serial]>>
}

// CHECK-LABEL: func.func @serial_rank1(
func.func @serial_rank1(%x: tensor<4xf32, #fusion.parallel<[serial]>>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<4xf32, #fusion.parallel<[serial]>> -> tensor<4xf32>
  %r = fusion.set %x : tensor<4xf32, #fusion.parallel<[serial]>> -> tensor<4xf32>
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
