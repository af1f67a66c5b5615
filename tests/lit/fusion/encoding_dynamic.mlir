// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// Dynamic `?` extents with every parallel type (a dynamic didx extent is not checked).

// CHECK-LABEL: func.func @dynamic_stream(
func.func @dynamic_stream(%x: tensor<?x8xf32>) -> tensor<?x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<?x8xf32> -> tensor<?x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.set %x : tensor<?x8xf32> -> tensor<?x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<?x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<?x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @dynamic_didx(
func.func @dynamic_didx(%x: tensor<?x?xf32>) -> tensor<?x?xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %r = fusion.set %x : tensor<?x?xf32> -> tensor<?x?xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  // CHECK-NEXT: func.return %r : tensor<?x?xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %r : tensor<?x?xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// CHECK-LABEL: func.func @dynamic_all(
func.func @dynamic_all(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32, #fusion.parallel<[serial, stream(2), didx], mesh = [0, 1]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<?x?x?xf32> -> tensor<?x?x?xf32, #fusion.parallel<[serial, stream(2), didx], mesh = [0, 1]>>
  %r = fusion.set %x : tensor<?x?x?xf32> -> tensor<?x?x?xf32, #fusion.parallel<[serial, stream(2), didx], mesh = [0, 1]>>
  // CHECK-NEXT: func.return %r : tensor<?x?x?xf32, #fusion.parallel<[serial, stream(2), didx], mesh = [0, 1]>>
  func.return %r : tensor<?x?x?xf32, #fusion.parallel<[serial, stream(2), didx], mesh = [0, 1]>>
}
