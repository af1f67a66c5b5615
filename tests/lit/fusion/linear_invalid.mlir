// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.linear follows torch.nn.functional.linear: x[..., K], w[N, K] or w[K], bias[N] or a scalar.

func.func @scalar_input(%x: tensor<f32>, %w: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.linear' op linear input must have rank >= 1}}
  %0 = fusion.linear %x, %w : tensor<f32>, tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @weight_rank(%x: tensor<2x8xf32>, %w: tensor<2x4x8xf32>) {
  // expected-error@+1 {{'fusion.linear' op linear weight must have rank 1 or 2, got 2x4x8}}
  %0 = fusion.linear %x, %w : tensor<2x8xf32>, tensor<2x4x8xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @contraction(%x: tensor<2x8xf32>, %w: tensor<4x7xf32>) {
  // expected-error@+1 {{'fusion.linear' op linear contraction extents differ: input 2x8, weight 4x7}}
  %0 = fusion.linear %x, %w : tensor<2x8xf32>, tensor<4x7xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @vector_weight_bias(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.linear' op linear with a 1-D weight takes a scalar bias}}
  %0 = fusion.linear %x, %w, %b : tensor<2x8xf32>, tensor<8xf32>, tensor<4xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @bias_extent(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{'fusion.linear' op linear bias must be a scalar or have shape 4, got 5}}
  %0 = fusion.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<5xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @bias_rank(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error@+1 {{'fusion.linear' op linear bias must be a scalar or have shape 4, got 2x4}}
  %0 = fusion.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @result_shape(%x: tensor<2x3x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.linear' op result shape 2x4 does not match the expected shape 2x3x4}}
  %0 = fusion.linear %x, %w : tensor<2x3x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @element_types(%x: tensor<2x8xf32>, %w: tensor<4x8xf16>) {
  // expected-error@+1 {{'fusion.linear' op operand #1 has element type f16, the result f32}}
  %0 = fusion.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf16> -> tensor<2x4xf32>
  func.return
}
