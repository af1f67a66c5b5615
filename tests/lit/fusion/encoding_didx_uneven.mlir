// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// A didx axis of extent L on a mesh of D devices need not be D: device p holds the indices
// [p*c, min((p+1)*c, L)) with c = ceil(L/D) (torch's Shard(dim)); the verifier accepts any L >= 1.

// CHECK-LABEL: func.func @five_over_two(
func.func @five_over_two(%x: tensor<5x8xf32>) -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %r = fusion.set %x : tensor<5x8xf32> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %r = fusion.set %x : tensor<5x8xf32> -> tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %r : tensor<5x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// Fewer indices than devices (3 over 4: the last device holds none), and one index.
// CHECK-LABEL: func.func @fewer_than_devices(
func.func @fewer_than_devices(%x: tensor<4x3xbf16, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>, %y: tensor<1x2xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4x3xbf16, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> {
  // CHECK-NEXT: %r = fusion.neg %x : tensor<4x3xbf16, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<4x3xbf16, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
  %r = fusion.neg %x : tensor<4x3xbf16, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<4x3xbf16, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
  func.return %r : tensor<4x3xbf16, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
}

// A multiple of the mesh size other than it: each device holds L/D indices.
// CHECK-LABEL: func.func @eight_over_four(
func.func @eight_over_four(%x: tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>) -> tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> {
  // CHECK-NEXT: %r = fusion.relu %x : tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
  %r = fusion.relu %x : tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>> -> tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
  func.return %r : tensor<2x8xf32, #fusion.parallel<[serial, didx], mesh = [0, 1, 2, 3]>>
}
