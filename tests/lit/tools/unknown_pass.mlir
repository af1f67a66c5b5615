// An unknown pass in -p, or an unknown pass option, fails with a one-line error and the passes.
// RUN: not hir-opt %s -p cse,no-such-pass 2>&1 | filecheck %s
// RUN: not hir-opt %s -p 'cse{bogus=1}' 2>&1 | filecheck %s --check-prefix=OPTION

// CHECK-NOT:  Traceback
// CHECK:      hir-opt: error: Unrecognized passes: ['no-such-pass']
// CHECK-NEXT: available passes: canonicalize, cse, dce
// CHECK-NOT:  Traceback

// OPTION-NOT:  Traceback
// OPTION:      hir-opt: error: {{.*}}bogus
// OPTION-NEXT: available passes: canonicalize, cse, dce
func.func @f() {
  func.return
}
