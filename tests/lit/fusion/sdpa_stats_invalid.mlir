// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.sdpa_logsumexp's and fusion.sdpa_backward_stats's verifiers: the statistics' shape and
// element type, an attention result of another shape, the axes that cannot be split.

func.func @bf16_statistics(%q: tensor<2x16x8xbf16>) {
  // expected-error@+1 {{'fusion.sdpa_logsumexp' op the softmax statistics of bf16 attention are f32, got bf16}}
  %s = fusion.sdpa_logsumexp %q, %q, %q, %q scale = 1.0 : tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16> -> tensor<2x16xbf16>
  func.return
}

// -----

func.func @out_of_another_shape(%q: tensor<2x16x8xbf16>, %o: tensor<2x16x4xbf16>) {
  // expected-error@+1 {{'fusion.sdpa_logsumexp' op the attention 2x16x4 is not the attention's result shape 2x16x8}}
  %s = fusion.sdpa_logsumexp %q, %q, %q, %o scale = 1.0 : tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x4xbf16> -> tensor<2x16xf32>
  func.return
}

// -----

func.func @streamed_queries(%q: tensor<2x16x8xbf16>) {
  // expected-error@+1 {{'fusion.sdpa_logsumexp' op result axis 1 is stream: the statistics read the S and E axes whole, so only the batch and head axes can be split over streams or devices}}
  %s = fusion.sdpa_logsumexp %q, %q, %q, %q scale = 1.0 : tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16> -> tensor<2x16xf32, #fusion.parallel<[serial, stream]>>
  func.return
}

// -----

func.func @statistics_of_keys(%g: tensor<2x16x8xbf16>, %s: tensor<2x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa_backward_stats' op lse 2x8 must be [..., L] of 2x16x8}}
  %d = fusion.sdpa_backward_stats %g, %g, %g, %g, %g, %s scale = 1.0 : tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x8xf32> -> tensor<3x2x16x8xbf16>
  func.return
}

// -----

func.func @not_stacked(%g: tensor<2x16x8xbf16>, %s: tensor<2x16xf32>) {
  // expected-error@+1 {{'fusion.sdpa_backward_stats' op result shape 2x16x8 does not match the expected shape 3x2x16x8}}
  %d = fusion.sdpa_backward_stats %g, %g, %g, %g, %g, %s scale = 1.0 : tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16xf32> -> tensor<2x16x8xbf16>
  func.return
}
