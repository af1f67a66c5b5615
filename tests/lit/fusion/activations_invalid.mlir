// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Float-only elementwise ops, and gelu's approximation.

func.func @sigmoid_int(%x: tensor<4xi32>) {
  // expected-error@+1 {{'fusion.sigmoid' op fusion.sigmoid needs a floating-point element type, got i32}}
  %0 = fusion.sigmoid %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

func.func @rsqrt_int(%x: tensor<4xi64>) {
  // expected-error@+1 {{'fusion.rsqrt' op fusion.rsqrt needs a floating-point element type, got i64}}
  %0 = fusion.rsqrt %x : tensor<4xi64> -> tensor<4xi64>
  func.return
}

// -----

func.func @pow_int(%x: tensor<4xi32>) {
  // expected-error@+1 {{'fusion.pow' op fusion.pow needs a floating-point element type, got i32}}
  %0 = fusion.pow %x, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

func.func @pow_shapes(%x: tensor<4xf32>, %y: tensor<f32>) {
  // expected-error@+1 {{'fusion.pow' op operands must have the same shape, got 4 and scalar}}
  %0 = fusion.pow %x, %y : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  func.return
}

// -----

func.func @gelu_approximation(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.gelu' op approximate must be one of none, tanh, got erf}}
  %0 = fusion.gelu %x approximate = erf : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @silu_result_type(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.silu' op operand #0 has element type f32, the result bf16}}
  %0 = fusion.silu %x : tensor<4xf32> -> tensor<4xbf16>
  func.return
}
