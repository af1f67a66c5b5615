// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Ops torch has no bool form of are refused on i1 when verified (they failed only at run time).

func.func @neg_bool(%a: tensor<4xi1>) {
  // expected-error@+1 {{'fusion.neg' op fusion.neg needs a number type, not i1}}
  %0 = fusion.neg %a : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

func.func @abs_bool(%a: tensor<4xi1>) {
  // expected-error@+1 {{'fusion.abs' op fusion.abs needs a number type, not i1}}
  %0 = fusion.abs %a : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

func.func @relu_bool(%a: tensor<4xi1>) {
  // expected-error@+1 {{'fusion.relu' op fusion.relu needs a number type, not i1}}
  %0 = fusion.relu %a : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

func.func @sub_bool(%a: tensor<4xi1>, %b: tensor<4xi1>) {
  // expected-error@+1 {{'fusion.sub' op fusion.sub needs a number type, not i1}}
  %0 = fusion.sub %a, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  func.return
}
