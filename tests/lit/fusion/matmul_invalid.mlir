// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.matmul follows torch.matmul: rank >= 1, matching contraction extents, broadcastable batches.

func.func @scalar_operand(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.matmul' op matmul operands must have rank >= 1}}
  %0 = fusion.matmul %a, %b : tensor<f32>, tensor<4xf32> -> tensor<f32>
  func.return
}

// -----

func.func @contraction_2d(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.matmul' op matmul contraction extents differ: 4x8 and 4x8}}
  %0 = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @contraction_vector(%a: tensor<4x8xf32>, %b: tensor<7xf32>) {
  // expected-error@+1 {{'fusion.matmul' op matmul contraction extents differ: 4x8 and 7}}
  %0 = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<7xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @batch_not_broadcastable(%a: tensor<3x4x8xf32>, %b: tensor<2x8x5xf32>) {
  // expected-error@+1 {{'fusion.matmul' op batch extents 3 and 2 do not broadcast}}
  %0 = fusion.matmul %a, %b : tensor<3x4x8xf32>, tensor<2x8x5xf32> -> tensor<3x4x5xf32>
  func.return
}

// -----

func.func @result_shape(%a: tensor<3x4x8xf32>, %b: tensor<8x5xf32>) {
  // expected-error@+1 {{'fusion.matmul' op result shape 3x4x6 does not match the expected shape 3x4x5}}
  %0 = fusion.matmul %a, %b : tensor<3x4x8xf32>, tensor<8x5xf32> -> tensor<3x4x6xf32>
  func.return
}

// -----

func.func @broadcast_batch_result(%a: tensor<1x4x8xf32>, %b: tensor<6x8x5xf32>) {
  // A batch extent 1 broadcasts against 6: the result batch is 6, not 1.
  // expected-error@+1 {{'fusion.matmul' op result shape 1x4x5 does not match the expected shape 6x4x5}}
  %0 = fusion.matmul %a, %b : tensor<1x4x8xf32>, tensor<6x8x5xf32> -> tensor<1x4x5xf32>
  func.return
}

// -----

func.func @vector_vector_result(%a: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'fusion.matmul' op result shape 1 does not match the expected shape scalar}}
  %0 = fusion.matmul %a, %b : tensor<8xf32>, tensor<8xf32> -> tensor<1xf32>
  func.return
}

// -----

func.func @element_types(%a: tensor<4x8xf32>, %b: tensor<8x5xbf16>) {
  // expected-error@+1 {{'fusion.matmul' op operand #1 has element type bf16, the result f32}}
  %0 = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<8x5xbf16> -> tensor<4x5xf32>
  func.return
}
