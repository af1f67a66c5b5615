// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.send: send a buffer to a mesh position.

// CHECK-LABEL: func.func @send(
func.func @send(%a: memref<4x8xf32>, %peer: index) -> !hir.work {
  // CHECK-NEXT: %w = hir.send %a to %peer mesh = [0, 1] : memref<4x8xf32>
  %w = hir.send %a to %peer mesh = [0, 1] : memref<4x8xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}
