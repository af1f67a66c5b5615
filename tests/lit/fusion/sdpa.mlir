// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.sdpa: queries [..., L, E], keys [..., S, E], values [..., S, Ev] -> [..., L, Ev]; an
// optional mask (i1 or the element type) that broadcasts to [..., L, S], or causal; the scale.

// CHECK-LABEL: func.func @causal(
func.func @causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK-NEXT: %o = fusion.sdpa %q, %k, %v causal scale = 3.750000e-01 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  %o = fusion.sdpa %q, %k, %v causal scale = 0.375 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  // CHECK-NEXT: func.return %o : tensor<2x4x16x8xf32>
  func.return %o : tensor<2x4x16x8xf32>
}

// CHECK-LABEL: func.func @bool_mask(
func.func @bool_mask(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x12x8xbf16>, %v: tensor<2x4x12x6xbf16>, %m: tensor<16x12xi1>) -> tensor<2x4x16x6xbf16> {
  // CHECK-NEXT: %o = fusion.sdpa %q, %k, %v mask %m scale = 1.000000e+00 : tensor<2x4x16x8xbf16>, tensor<2x4x12x8xbf16>, tensor<2x4x12x6xbf16>, tensor<16x12xi1> -> tensor<2x4x16x6xbf16>
  %o = fusion.sdpa %q, %k, %v mask %m scale = 1.0 : tensor<2x4x16x8xbf16>, tensor<2x4x12x8xbf16>, tensor<2x4x12x6xbf16>, tensor<16x12xi1> -> tensor<2x4x16x6xbf16>
  func.return %o : tensor<2x4x16x6xbf16>
}

// A float mask is added to the scores; it broadcasts over the heads. Heads sharded over a mesh.
// CHECK-LABEL: func.func @float_mask_heads_sharded(
func.func @float_mask_heads_sharded(%q: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %k: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %v: tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %m: tensor<2x1x16x16xf32>) -> tensor<2x4x16x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %o = fusion.sdpa %q, %k, %v mask %m scale = 1.250000e-01 : {{.*}}, tensor<2x1x16x16xf32> -> tensor<2x4x16x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  %o = fusion.sdpa %q, %k, %v mask %m scale = 0.125 : tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x1x16x16xf32> -> tensor<2x4x16x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %o : tensor<2x4x16x8xf32, #fusion.parallel<[stream, didx, serial, serial], mesh = [0, 1]>>
}

// Any number of batch axes, dynamic extents.
// CHECK-LABEL: func.func @rank3_dynamic(
func.func @rank3_dynamic(%q: tensor<?x16x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x4xf32>) -> tensor<?x16x4xf32> {
  // CHECK-NEXT: %o = fusion.sdpa %q, %k, %v scale = 5.000000e-01 : tensor<?x16x8xf32>, tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<?x16x4xf32>
  %o = fusion.sdpa %q, %k, %v scale = 0.5 : tensor<?x16x8xf32>, tensor<?x?x8xf32>, tensor<?x?x4xf32> -> tensor<?x16x4xf32>
  func.return %o : tensor<?x16x4xf32>
}
