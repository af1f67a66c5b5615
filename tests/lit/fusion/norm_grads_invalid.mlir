// RUN: hir-opt %s --split-input-file --verify-diagnostics

// The norm gradients' verifier: one shape for the gradient and x, trailing dims, the weight's
// shape, eps, float element types.

func.func @shapes(%dy: tensor<4x8xf32>, %x: tensor<2x8xf32>) {
  // expected-error@+1 {{'fusion.layer_norm_backward' op the gradient 4x8 and x 2x8 must have one shape}}
  %dx = fusion.layer_norm_backward %dy, %x dims = [1] eps = 1.0e-05 : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @leading_dims(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.rms_norm_backward' op dims [0] must be the trailing axes of the rank-2 operand, in order}}
  %dx = fusion.rms_norm_backward %dy, %x dims = [0] eps = 1.0e-05 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @weight(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.layer_norm_backward' op weight has shape 4, the normalized axes 8}}
  %dx = fusion.layer_norm_backward %dy, %x, %w dims = [1] eps = 1.0e-05 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @eps(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.layer_norm_backward' op eps must be finite and >= 0, got -1.0}}
  %dx = fusion.layer_norm_backward %dy, %x dims = [1] eps = -1.0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @integers(%dy: tensor<4x8xi32>, %x: tensor<4x8xi32>) {
  // expected-error@+1 {{'fusion.rms_norm_backward' op fusion.rms_norm_backward needs a floating-point element type, got i32}}
  %dx = fusion.rms_norm_backward %dy, %x dims = [1] eps = 1.0e-05 : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi32>
  func.return
}
