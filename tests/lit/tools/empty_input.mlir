// Input with nothing but comments (or nothing at all) is an empty module, as in mlir-opt; hir-run
// then says there is no @main.
// RUN: hir-opt %s | filecheck %s
// RUN: hir-opt %s --stream-lowering | filecheck %s
// RUN: printf '' | hir-opt - | filecheck %s
// RUN: not hir-run %s 2>&1 | filecheck %s --check-prefix=NOMAIN

// CHECK:      builtin.module {
// CHECK-NEXT: }
// NOMAIN:     {{.*}}empty_input.mlir:1:1: error: 'builtin.module' op no function @main to run (functions: none)
