// A verifier error without --verify-diagnostics: exit 1, `file:line:col: error: 'op' op message`
// on stderr, no traceback, no module printed.
// RUN: not hir-opt %s 2>&1 | filecheck %s
// RUN: not hir-opt %s 2> %t.stderr > %t.stdout
// RUN: echo END >> %t.stdout
// RUN: filecheck %s --input-file %t.stderr
// RUN: filecheck %s --input-file %t.stdout --check-prefix=STDOUT

// CHECK-NOT: Traceback
// CHECK:     {{.*}}verify_error.mlir:[[# @LINE + 7]]:3: error: 'fusion.add' op operands must have the same shape, got 4 and 8
// CHECK-NOT: Traceback
// CHECK-NOT: builtin.module

// STDOUT-NOT: builtin.module
// STDOUT:     END
func.func @f(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  %0 = fusion.add %a, %b : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32>
  func.return
}
