// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Shape and element-type rules of the elementwise ops.

func.func @binary_shapes_differ(%a: tensor<4x8xf32>, %b: tensor<4x4xf32>) {
  // expected-error@+1 {{'fusion.add' op operands must have the same shape, got 4x8 and 4x4}}
  %0 = fusion.add %a, %b : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @binary_ranks_differ(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'fusion.mul' op operands must have the same shape, got 4x8 and 8}}
  %0 = fusion.mul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @binary_element_types_differ(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{'fusion.maximum' op operand #1 has element type f16, the result f32}}
  %0 = fusion.maximum %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  func.return
}

// -----

func.func @unary_element_type_changes(%x: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.neg' op operand #0 has element type f32, the result f16}}
  %0 = fusion.neg %x : tensor<4xf32> -> tensor<4xf16>
  func.return
}

// -----

func.func @result_shape(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.abs' op result shape 8x4 does not match the expected shape 4x8}}
  %0 = fusion.abs %x : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @binary_result_shape(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.sub' op result shape 5 does not match the expected shape 4}}
  %0 = fusion.sub %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @cast_shape(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.cast' op result shape 4x4 does not match the expected shape 4x8}}
  %0 = fusion.cast %x : tensor<4x8xf32> -> tensor<4x4xbf16>
  func.return
}

// -----

func.func @dynamic_matches_static(%a: tensor<?x8xf32>, %b: tensor<4x?xf32>) {
  // A `?` matches any extent, so only the static mismatch is reported.
  // expected-error@+1 {{'fusion.add' op result shape 4x9 does not match the expected shape ?x8}}
  %0 = fusion.add %a, %b : tensor<?x8xf32>, tensor<4x?xf32> -> tensor<4x9xf32>
  func.return
}
