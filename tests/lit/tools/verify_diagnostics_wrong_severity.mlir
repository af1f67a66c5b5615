// The checker fails when the message matches but the severity does not, in mlir-opt's words.
// RUN: not hir-opt %s --verify-diagnostics 2>&1 | filecheck %s

func.func @f(%a: tensor<4xf32>) {
  // expected-warning@+1 {{result shape 5}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// CHECK: verify_diagnostics_wrong_severity.mlir:[[# @LINE - 5]]:6: error: 'error' diagnostic emitted when expecting a 'warning'
// CHECK: verify_diagnostics_wrong_severity.mlir:[[# @LINE - 6]]:6: error: expected warning "result shape 5" was not produced
