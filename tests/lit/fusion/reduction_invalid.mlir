// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.sum/max/min: `dims` are distinct, in range, non-empty; the result drops them.

func.func @empty_dims(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.sum' op dims must name at least one axis to reduce}}
  %0 = fusion.sum %x dims = [] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @dim_too_large(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.max' op dims entry 2 is out of range for rank 2}}
  %0 = fusion.max %x dims = [2] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @negative_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.min' op dims entry -1 is out of range for rank 2}}
  %0 = fusion.min %x dims = [-1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @duplicate_dims(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.sum' op dims [0, 0] has duplicates}}
  %0 = fusion.sum %x dims = [0, 0] : tensor<4x8xf32> -> tensor<8xf32>
  func.return
}

// -----

func.func @keeps_reduced_axis(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.sum' op result shape 4x1 does not match the expected shape 4}}
  %0 = fusion.sum %x dims = [1] : tensor<4x8xf32> -> tensor<4x1xf32>
  func.return
}

// -----

func.func @element_type(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.max' op operand #0 has element type f32, the result f64}}
  %0 = fusion.max %x dims = [1] : tensor<4x8xf32> -> tensor<4xf64>
  func.return
}
