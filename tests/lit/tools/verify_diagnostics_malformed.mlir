// An annotation that does not parse is an error, not a comment silently ignored: here an offset
// that is not a number and a missing `}}`. A bad regular expression in expected-error-re too.
// RUN: not hir-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

func.func @f(%a: tensor<4xf32>) {
  // expected-error@+one {{result shape 5}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @g(%a: tensor<4xf32>) {
  // expected-error@+1 {{result shape 5
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @h(%a: tensor<4xf32>) {
  // expected-error-re@+1 {{result shape {{[0-9}}}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// CHECK: verify_diagnostics_malformed.mlir:[[# @LINE - 21]]:6: error: malformed annotation, expected e.g. `expected-{{error}}@+1
// CHECK: verify_diagnostics_malformed.mlir:[[# @LINE - 21]]:3: error: unexpected error: 'fusion.neg' op result shape 5
// CHECK: verify_diagnostics_malformed.mlir:[[# @LINE - 15]]:6: error: malformed annotation
// CHECK: verify_diagnostics_malformed.mlir:[[# @LINE - 15]]:3: error: unexpected error: 'fusion.neg' op result shape 5
// CHECK: verify_diagnostics_malformed.mlir:[[# @LINE - 9]]:6: error: invalid regular expression in annotation
// CHECK: verify_diagnostics_malformed.mlir:[[# @LINE - 9]]:3: error: unexpected error: 'fusion.neg' op result shape 5
