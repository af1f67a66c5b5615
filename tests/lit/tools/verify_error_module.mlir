// An error on the implicit module (a duplicate symbol) is located at the module's first op.
// RUN: not hir-opt %s 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK:     {{.*}}verify_error_module.mlir:[[# @LINE + 2]]:1: error: 'builtin.module' op Redefinition of symbol "f"
// CHECK-NOT: Traceback
func.func @f() {
  func.return
}
func.func @f() {
  func.return
}
