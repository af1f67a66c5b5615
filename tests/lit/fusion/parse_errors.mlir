// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Syntax errors in the custom form `fusion.OP %a, %b [dims|perm = [..]] attr-dict : types -> type`.

func.func @missing_arrow(%x: tensor<4xf32>) {
  // expected-error@+1 {{Expected '->'}}
  %0 = fusion.neg %x : tensor<4xf32> tensor<4xf32>
  func.return
}

// -----

func.func @missing_dims(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{Expected 'dims'}}
  %0 = fusion.sum %x : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @perm_for_dims(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{Expected 'dims'}}
  %0 = fusion.sum %x perm = [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// A binary op takes one type per operand: the second is missing where `->` stands.
func.func @too_few_types(%a: tensor<4xf32>) {
  // expected-error@+1 {{Expected ','}}
  %0 = fusion.add %a, %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @operand_type_mismatch(%a: tensor<4xf32>) {
  // expected-error@+1 {{operand is used with type tensor<8xf32>, but has been previously used or defined with type tensor<4xf32>}}
  %0 = fusion.neg %a : tensor<8xf32> -> tensor<8xf32>
  func.return
}

// -----

func.func @dims_not_a_list(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'[' expected}}
  %0 = fusion.max %x dims = 1 : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

func.func @full_not_a_number() {
  // expected-error@+1 {{expected a number (an integer, a float, true, false, inf or nan)}}
  %0 = fusion.full one : tensor<4xf32>
  func.return
}

// -----

func.func @eps_not_a_number(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{expected a number (an integer, a float, true, false, inf or nan)}}
  %0 = fusion.rms_norm %x dims = [1] eps = small : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @compare_without_predicate(%x: tensor<4xf32>) {
  // expected-error@+1 {{identifier expected}}
  %0 = fusion.compare %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  func.return
}

// -----

func.func @full_integer_too_large() {
  // expected-error@+1 {{integer 99999999999999999999 does not fit in 64 bits}}
  %0 = fusion.full 99999999999999999999 : tensor<4xi64>
  func.return
}

// -----

func.func @full_float_literal_too_large() {
  // expected-error@+1 {{float literal out of range (write inf or -inf)}}
  %0 = fusion.full 1.0e999 : tensor<4xf32>
  func.return
}
