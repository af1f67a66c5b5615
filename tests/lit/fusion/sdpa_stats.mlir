// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.sdpa_logsumexp: the softmax statistics [..., L] (f32; f64 for f64 tensors) of an
// unmasked fusion.sdpa's result; fusion.sdpa_backward_stats: the three gradients stacked, from
// the result's gradient, the forward's result and its statistics.

// CHECK-LABEL: func.func @causal(
func.func @causal(%g: tensor<2x4x16x8xf32>, %q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<3x2x4x16x8xf32> {
  // CHECK-NEXT: %o = fusion.sdpa %q, %k, %v causal scale = 3.750000e-01 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  %o = fusion.sdpa %q, %k, %v causal scale = 0.375 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  // CHECK-NEXT: %s = fusion.sdpa_logsumexp %q, %k, %v, %o causal scale = 3.750000e-01 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16xf32>
  %s = fusion.sdpa_logsumexp %q, %k, %v, %o causal scale = 0.375 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16xf32>
  // CHECK-NEXT: %d = fusion.sdpa_backward_stats %g, %q, %k, %v, %o, %s causal scale = 3.750000e-01 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16xf32> -> tensor<3x2x4x16x8xf32>
  %d = fusion.sdpa_backward_stats %g, %q, %k, %v, %o, %s causal scale = 0.375 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16xf32> -> tensor<3x2x4x16x8xf32>
  // CHECK-NEXT: func.return %d : tensor<3x2x4x16x8xf32>
  func.return %d : tensor<3x2x4x16x8xf32>
}

// The heads sharded over a mesh, f64 statistics of f64 tensors, no causal mask.
// CHECK-LABEL: func.func @heads_sharded_f64(
func.func @heads_sharded_f64(%q: tensor<2x4x16x8xf64, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %o: tensor<2x4x16x8xf64, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x4x16xf64, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %s = fusion.sdpa_logsumexp %q, %q, %q, %o scale = 1.250000e-01 : {{.*}} -> tensor<2x4x16xf64, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  %s = fusion.sdpa_logsumexp %q, %q, %q, %o scale = 0.125 : tensor<2x4x16x8xf64, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf64, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf64, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<2x4x16x8xf64, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>> -> tensor<2x4x16xf64, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
  func.return %s : tensor<2x4x16xf64, #fusion.parallel<[serial, didx, serial], mesh = [0, 1]>>
}
