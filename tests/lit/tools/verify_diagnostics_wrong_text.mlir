// The checker fails when an annotation's text is not in the message: the annotation "was not
// produced" and the error is "unexpected", each at its own location; the exit status is 1.
// RUN: not hir-opt %s --verify-diagnostics 2>&1 | filecheck %s

func.func @f(%a: tensor<4xf32>) {
  // expected-error@+1 {{result shape 6 does not match}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// CHECK:      verify_diagnostics_wrong_text.mlir:[[# @LINE - 4]]:3: error: unexpected error: 'fusion.neg' op result shape 5 does not match the expected shape 4
// CHECK-NEXT:   %0 = fusion.neg
// CHECK-NEXT:   ^
// CHECK-NEXT: verify_diagnostics_wrong_text.mlir:[[# @LINE - 8]]:6: error: expected error "result shape 6 does not match" was not produced
// CHECK-NEXT:   // expected-{{error}}@+1
// CHECK-NEXT:      ^
// CHECK-NOT:  Traceback
