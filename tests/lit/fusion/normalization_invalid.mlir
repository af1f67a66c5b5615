// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.softmax, fusion.layer_norm, fusion.rms_norm and fusion.mean.

func.func @softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.softmax' op dim entry 2 is out of range for rank 2}}
  %0 = fusion.softmax %x dim = 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @softmax_int(%x: tensor<4x8xi32>) {
  // expected-error@+1 {{'fusion.softmax' op fusion.softmax needs a floating-point element type, got i32}}
  %0 = fusion.softmax %x dim = 1 : tensor<4x8xi32> -> tensor<4x8xi32>
  func.return
}

// -----

func.func @norm_not_trailing(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.layer_norm' op dims [0] must be the trailing axes of the rank-2 operand, in order}}
  %0 = fusion.layer_norm %x dims = [0] eps = 1.000000e-05 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @norm_no_dims(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.rms_norm' op dims [] must be the trailing axes of the rank-2 operand, in order}}
  %0 = fusion.rms_norm %x dims = [] eps = 1.000000e-05 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @norm_eps(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.rms_norm' op eps must be finite and >= 0, got -1e-05}}
  %0 = fusion.rms_norm %x dims = [1] eps = -1.000000e-05 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @norm_weight_shape(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.layer_norm' op weight has shape 4, the normalized axes 8}}
  %0 = fusion.layer_norm %x, %w dims = [1] eps = 1.000000e-05 : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @norm_bias_shape(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.layer_norm' op bias has shape 4x8, the normalized axes 8}}
  %0 = fusion.layer_norm %x, %w, %b dims = [1] eps = 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @norm_weight_type(%x: tensor<4x8xf32>, %w: tensor<8xbf16>) {
  // expected-error@+1 {{'fusion.rms_norm' op operand #1 has element type bf16, the result f32}}
  %0 = fusion.rms_norm %x, %w dims = [1] eps = 1.000000e-05 : tensor<4x8xf32>, tensor<8xbf16> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @bias_without_weight(%x: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'fusion.layer_norm' op a bias needs a weight (pass a fusion.full of ones)}}
  %0 = "fusion.layer_norm"(%x, %b) <{dims = array<i64: 1>, eps = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @mean_int(%x: tensor<4x8xi32>) {
  // expected-error@+1 {{'fusion.mean' op fusion.mean needs a floating-point element type, got i32}}
  %0 = fusion.mean %x dims = [1] : tensor<4x8xi32> -> tensor<4xi32>
  func.return
}
