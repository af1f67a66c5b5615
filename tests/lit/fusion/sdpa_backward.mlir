// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.sdpa_backward: the gradients of fusion.sdpa with respect to q, k and v, stacked
// [3, ..., L, E], from the result's gradient; self-attention shapes; mask or causal; the scale.

// CHECK-LABEL: func.func @causal(
func.func @causal(%g: tensor<2x4x16x8xf32>, %q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<3x2x4x16x8xf32> {
  // CHECK-NEXT: %d = fusion.sdpa_backward %g, %q, %k, %v causal scale = 3.750000e-01 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<3x2x4x16x8xf32>
  %d = fusion.sdpa_backward %g, %q, %k, %v causal scale = 0.375 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<3x2x4x16x8xf32>
  // CHECK-NEXT: func.return %d : tensor<3x2x4x16x8xf32>
  func.return %d : tensor<3x2x4x16x8xf32>
}

// A boolean mask [L, L]; the heads sharded over a mesh and the batch streamed, as a TP layer's
// backward has them.
// CHECK-LABEL: func.func @mask_heads_sharded(
func.func @mask_heads_sharded(%g: tensor<2x4x16x8xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %q: tensor<2x4x16x8xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %k: tensor<2x4x16x8xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %v: tensor<2x4x16x8xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %m: tensor<16x16xi1>) -> tensor<3x2x4x16x8xbf16, #fusion.parallel<[serial, stream, didx, serial, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %d = fusion.sdpa_backward %g, %q, %k, %v mask %m scale = 1.250000e-01 : {{.*}}, tensor<16x16xi1> -> tensor<3x2x4x16x8xbf16, #fusion.parallel<[serial, stream, didx, serial, serial], mesh = [0, 1]>>
  %d = fusion.sdpa_backward %g, %q, %k, %v mask %m scale = 0.125 : tensor<2x4x16x8xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xbf16, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<16x16xi1> -> tensor<3x2x4x16x8xbf16, #fusion.parallel<[serial, stream, didx, serial, serial], mesh = [0, 1]>>
  func.return %d : tensor<3x2x4x16x8xbf16, #fusion.parallel<[serial, stream, didx, serial, serial], mesh = [0, 1]>>
}
