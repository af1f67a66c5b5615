// RUN: hir-opt %s --split-input-file --verify-diagnostics

// The activations' backward: float element types, gelu's approximation, one shape.

func.func @gelu_backward_int(%x: tensor<4xi32>) {
  // expected-error@+1 {{'fusion.gelu_backward' op fusion.gelu_backward needs a floating-point element type, got i32}}
  %0 = fusion.gelu_backward %x, %x approximate = none : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

func.func @gelu_backward_approximation(%x: tensor<4xf32>) {
  // expected-error@+1 {{approximate must be one of none, tanh, got sigmoid}}
  %0 = fusion.gelu_backward %x, %x approximate = sigmoid : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @silu_backward_shapes(%dy: tensor<4xf32>, %x: tensor<8xf32>) {
  // expected-error@+1 {{'fusion.silu_backward' op operands must have the same shape, got 4 and 8}}
  %0 = fusion.silu_backward %dy, %x : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32>
  func.return
}
