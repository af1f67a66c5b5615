// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.sdpa_backward's verifier: one shape for the four tensors, the stacked result, the mask,
// the element types, and the axes that cannot be split.

func.func @cross_attention(%g: tensor<2x16x8xf32>, %q: tensor<2x16x8xf32>, %k: tensor<2x12x8xf32>, %v: tensor<2x12x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa_backward' op the gradient, query, key and value must have one shape [..., L, E], got 2x16x8, 2x16x8, 2x12x8 and 2x12x8}}
  %d = fusion.sdpa_backward %g, %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32> -> tensor<3x2x16x8xf32>
  func.return
}

// -----

func.func @not_stacked(%g: tensor<2x16x8xf32>, %q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa_backward' op result shape 2x16x8 does not match the expected shape 3x2x16x8}}
  %d = fusion.sdpa_backward %g, %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @mask_and_causal(%g: tensor<2x16x8xf32>, %q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>, %m: tensor<16x16xi1>) {
  // expected-error@+1 {{'fusion.sdpa_backward' op a mask and causal exclude each other (torch refuses both): fold the mask into one}}
  %d = fusion.sdpa_backward %g, %q, %k, %v mask %m causal scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<16x16xi1> -> tensor<3x2x16x8xf32>
  func.return
}

// -----

func.func @mask_shape(%g: tensor<2x16x8xf32>, %q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>, %m: tensor<12x16xi1>) {
  // expected-error@+1 {{'fusion.sdpa_backward' op mask 12x16 does not broadcast to the scores 2x16x16}}
  %d = fusion.sdpa_backward %g, %q, %k, %v mask %m scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<12x16xi1> -> tensor<3x2x16x8xf32>
  func.return
}

// -----

func.func @integers(%g: tensor<2x16x8xi32>, %q: tensor<2x16x8xi32>, %k: tensor<2x16x8xi32>, %v: tensor<2x16x8xi32>) {
  // expected-error@+1 {{'fusion.sdpa_backward' op fusion.sdpa_backward needs a floating-point element type, got i32}}
  %d = fusion.sdpa_backward %g, %q, %k, %v scale = 1.0 : tensor<2x16x8xi32>, tensor<2x16x8xi32>, tensor<2x16x8xi32>, tensor<2x16x8xi32> -> tensor<3x2x16x8xi32>
  func.return
}

// -----

func.func @stacked_axis_streamed(%g: tensor<2x16x8xf32>, %q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa_backward' op result axis 0 is stream: only the batch and head axes can be split over streams or devices}}
  %d = fusion.sdpa_backward %g, %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<3x2x16x8xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return
}

// -----

func.func @queries_streamed(%g: tensor<2x16x8xf32>, %q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error@+1 {{'fusion.sdpa_backward' op result axis 2 is stream: only the batch and head axes can be split over streams or devices}}
  %d = fusion.sdpa_backward %g, %q, %k, %v scale = 1.0 : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<3x2x16x8xf32, #fusion.parallel<[serial, serial, stream, serial]>>
  func.return
}
