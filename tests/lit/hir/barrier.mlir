// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.barrier: every device of the mesh reaches this point of its current stream.

// CHECK-LABEL: func.func @barrier(
func.func @barrier() {
  // CHECK-NEXT: hir.barrier mesh = [0, 1]
  hir.barrier mesh = [0, 1]
  // CHECK-NEXT: hir.barrier mesh = [0, 1, 2, 3] {tag}
  hir.barrier mesh = [0, 1, 2, 3] {tag}
  // CHECK-NEXT: func.return
  func.return
}
