// An unknown flag (usually a mistyped pass) fails with the list of available passes.
// RUN: not hir-opt %s --no-such-pass 2>&1 | filecheck %s

// CHECK:      usage: hir-opt
// CHECK:      hir-opt: error: unrecognized arguments: --no-such-pass
// CHECK-NEXT: available passes (as flags or in -p): canonicalize, cse, dce, {{.*}}stream-lowering
// CHECK-NOT:  Traceback
func.func @f() {
  func.return
}
