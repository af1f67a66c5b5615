// The checker fails when an annotation names the wrong line (@+2 for an error one line below), or
// expects a located error at an unknown location.
// RUN: not hir-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

func.func @two_lines_off(%a: tensor<4xf32>) {
  // expected-error@+2 {{result shape 5 does not match the expected shape 4}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @unknown_instead_of_located(%a: tensor<4xf32>) {
  // expected-error@unknown {{result shape 5 does not match the expected shape 4}}
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// CHECK:     verify_diagnostics_wrong_line.mlir:[[# @LINE - 12]]:3: error: unexpected error: 'fusion.neg' op result shape 5
// CHECK:     verify_diagnostics_wrong_line.mlir:[[# @LINE - 14]]:6: error: expected error "result shape 5 does not match the expected shape 4" was not produced
// CHECK:     verify_diagnostics_wrong_line.mlir:[[# @LINE - 6]]:3: error: unexpected error: 'fusion.neg' op result shape 5
// CHECK:     verify_diagnostics_wrong_line.mlir:[[# @LINE - 8]]:6: error: expected error "result shape 5 does not match the expected shape 4" was not produced
// CHECK-NOT: error:
