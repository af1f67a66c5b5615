// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.broadcast: every mesh device's output receives the input of mesh position `root`.

// CHECK-LABEL: func.func @broadcast(
func.func @broadcast(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %root: index) -> !hir.work {
  // CHECK-NEXT: %w = hir.broadcast %a into %b root %root mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
  %w = hir.broadcast %a into %b root %root mesh = [0, 1] : memref<4x8xf32>, memref<4x8xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// CHECK-LABEL: func.func @broadcast_in_place(
func.func @broadcast_in_place(%a: memref<16xi64>) -> !hir.work {
  // CHECK-NEXT: %c0 = arith.constant 0 : index
  %c0 = arith.constant 0 : index
  // CHECK-NEXT: %w = hir.broadcast %a into %a root %c0 mesh = [4, 5] : memref<16xi64>, memref<16xi64>
  %w = hir.broadcast %a into %a root %c0 mesh = [4, 5] : memref<16xi64>, memref<16xi64>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}
