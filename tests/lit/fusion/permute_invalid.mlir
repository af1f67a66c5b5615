// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.permute: `perm` is a permutation of the operand axes; the result shape follows it.

func.func @not_a_permutation(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.permute' op perm [0, 0] is not a permutation of the 2 operand axes}}
  %0 = fusion.permute %x perm = [0, 0] : tensor<4x8xf32> -> tensor<4x4xf32>
  func.return
}

// -----

func.func @too_short(%x: tensor<4x8x2xf32>) {
  // expected-error@+1 {{'fusion.permute' op perm [1, 0] is not a permutation of the 3 operand axes}}
  %0 = fusion.permute %x perm = [1, 0] : tensor<4x8x2xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @out_of_range(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.permute' op perm [2, 0] is not a permutation of the 2 operand axes}}
  %0 = fusion.permute %x perm = [2, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @result_shape(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.permute' op result shape 4x8 does not match the expected shape 8x4}}
  %0 = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}
