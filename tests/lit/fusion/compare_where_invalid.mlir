// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.compare: a known predicate, one operand element type, an i1 result; fusion.where: an i1 condition.

func.func @predicate(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.compare' op predicate must be one of eq, ne, lt, le, gt, ge, got slt}}
  %0 = fusion.compare slt, %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  func.return
}

// -----

func.func @result_type(%a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.compare' op the result must have element type i1, got f32}}
  %0 = fusion.compare lt, %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @operand_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{'fusion.compare' op operands have element types f32 and f16}}
  %0 = fusion.compare lt, %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xi1>
  func.return
}

// -----

func.func @compare_shapes(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{'fusion.compare' op operands must have the same shape, got 4 and 5}}
  %0 = fusion.compare eq, %a, %b : tensor<4xf32>, tensor<5xf32> -> tensor<4xi1>
  func.return
}

// -----

func.func @condition_type(%m: tensor<4xi32>, %a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.where' op the condition must have element type i1, got i32}}
  %0 = fusion.where %m, %a, %a : tensor<4xi32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @where_types(%m: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{'fusion.where' op rhs has element type f16, the result f32}}
  %0 = fusion.where %m, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  func.return
}

// -----

func.func @where_shapes(%m: tensor<1xi1>, %a: tensor<4xf32>) {
  // expected-error@+1 {{'fusion.where' op operands must have one shape, got 1, 4, 4}}
  %0 = fusion.where %m, %a, %a : tensor<1xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}
