// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// `didx` with `mesh = [..]`: the didx extent equals the mesh size.

// CHECK-LABEL: func.func @didx(
func.func @didx(%x: tensor<2x8xf32>) -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %r = fusion.set %x : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  // CHECK-NEXT: func.return %r : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %r : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// CHECK-LABEL: func.func @didx_inner(
func.func @didx_inner(%x: tensor<4x2x64xbf16>) -> tensor<4x2x64xbf16, #fusion.parallel<[serial, didx, serial], mesh = [3, 1]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<4x2x64xbf16> -> tensor<4x2x64xbf16, #fusion.parallel<[serial, didx, serial], mesh = [3, 1]>>
  %r = fusion.set %x : tensor<4x2x64xbf16> -> tensor<4x2x64xbf16, #fusion.parallel<[serial, didx, serial], mesh = [3, 1]>>
  // CHECK-NEXT: func.return %r : tensor<4x2x64xbf16, #fusion.parallel<[serial, didx, serial], mesh = [3, 1]>>
  func.return %r : tensor<4x2x64xbf16, #fusion.parallel<[serial, didx, serial], mesh = [3, 1]>>
}

// CHECK-LABEL: func.func @didx_and_stream(
func.func @didx_and_stream(%x: tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>) -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
  %r = fusion.set %x : tensor<4x2x8xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> -> tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
  // CHECK-NEXT: func.return %r : tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
  func.return %r : tensor<4x2x8xf32, #fusion.parallel<[stream, didx, serial], mesh = [0, 1]>>
}

// CHECK-LABEL: func.func @mesh_without_didx(
func.func @mesh_without_didx(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
  %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1, 2, 3]>>
}
