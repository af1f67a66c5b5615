// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.wait: the current stream waits for a communication's !hir.work.

// CHECK-LABEL: func.func @wait(
func.func @wait(%w: !hir.work) {
  // CHECK-NEXT: hir.wait %w
  hir.wait %w
  // CHECK-NEXT: func.return
  func.return
}

// CHECK-LABEL: func.func @wait_allgather(
func.func @wait_allgather(%a: memref<1x8xf32>, %g: memref<2x8xf32>) {
  // CHECK-NEXT: %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf32>
  %w = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<1x8xf32>, memref<2x8xf32>
  // CHECK-NEXT: hir.wait %w {tag}
  hir.wait %w {tag}
  // CHECK-NEXT: func.return
  func.return
}
