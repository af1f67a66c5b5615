// The checker fails when an annotated error never fires, here in the third chunk of a split file:
// the message names that annotation's line in the file; the other chunks pass.
// RUN: not hir-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

func.func @first(%a: tensor<4xf32>) {
  // expected-error@+1 {{result shape 5}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @second() {
  func.return
}

// -----

func.func @valid(%a: tensor<4xf32>) {
  // expected-error@+1 {{result shape 4 does not match}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// CHECK-NOT: unexpected
// CHECK:     verify_diagnostics_not_produced.mlir:[[# @LINE - 6]]:6: error: expected error "result shape 4 does not match" was not produced
// CHECK-NOT: error:
