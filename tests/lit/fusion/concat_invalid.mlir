// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.concat: one rank, equal extents off `dim`, the extents along `dim` add up.

func.func @dim_range(%a: tensor<4x2xf32>) {
  // expected-error@+1 {{'fusion.concat' op concat dim 2 is out of range for rank 2}}
  %0 = fusion.concat %a, %a dim = 2 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  func.return
}

// -----

func.func @rank(%a: tensor<4x2xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'fusion.concat' op concat operand #1 has rank 1, operand #0 rank 2}}
  %0 = fusion.concat %a, %b dim = 0 : tensor<4x2xf32>, tensor<8xf32> -> tensor<12x2xf32>
  func.return
}

// -----

func.func @off_dim(%a: tensor<4x2xf32>, %b: tensor<3x2xf32>) {
  // expected-error@+1 {{'fusion.concat' op concat operand #1 has shape 3x2, operand #0 4x2: they differ off the concat dim 1}}
  %0 = fusion.concat %a, %b dim = 1 : tensor<4x2xf32>, tensor<3x2xf32> -> tensor<4x4xf32>
  func.return
}

// -----

func.func @sum(%a: tensor<4x2xf32>) {
  // expected-error@+1 {{'fusion.concat' op result shape 4x5 does not match the expected shape 4x4}}
  %0 = fusion.concat %a, %a dim = 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x5xf32>
  func.return
}

// -----

func.func @element_type(%a: tensor<4x2xf32>, %b: tensor<4x2xi32>) {
  // expected-error@+1 {{'fusion.concat' op operand #1 has element type i32, the result f32}}
  %0 = fusion.concat %a, %b dim = 1 : tensor<4x2xf32>, tensor<4x2xi32> -> tensor<4x4xf32>
  func.return
}
