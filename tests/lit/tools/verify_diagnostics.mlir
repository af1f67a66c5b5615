// With --verify-diagnostics an expected verifier error goes to stdout and the exit status is 0;
// chunks of --split-input-file are independent and keep the file's line numbers.
// RUN: hir-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @valid() {
func.func @valid() {
  func.return
}

// -----

// CHECK:      // {{-+}}
// CHECK-NEXT: {{.*}}verify_diagnostics.mlir:[[# @LINE + 2]]:3: error: 'fusion.neg' op result shape 5 does not match the expected shape 4
func.func @invalid(%a: tensor<4xf32>) {
  %0 = fusion.neg %a : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

// CHECK:      // {{-+}}
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @valid_again() {
func.func @valid_again() {
  func.return
}
