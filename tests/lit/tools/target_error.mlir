// An unknown output target fails with the list of targets (only mlir: the others print dialects
// a hir module never is in).
// RUN: not hir-opt %s -t llvm 2>&1 | filecheck %s
// RUN: not hir-opt %s -t mps 2>&1 | filecheck %s --check-prefix=MPS
// RUN: hir-opt %s -t mlir | filecheck %s --check-prefix=MLIR

// CHECK:     usage: hir-opt
// CHECK:     hir-opt: error: argument -t/--target: invalid choice: 'llvm' (choose from mlir)
// CHECK-NOT: Traceback
// MPS:       hir-opt: error: argument -t/--target: invalid choice: 'mps' (choose from mlir)
// MLIR:      func.func @f()
func.func @f() {
  func.return
}
