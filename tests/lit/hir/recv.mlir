// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.recv: receive into a buffer from a mesh position.

// CHECK-LABEL: func.func @recv(
func.func @recv(%a: memref<4x8xf32>, %peer: index) -> !hir.work {
  // CHECK-NEXT: %w = hir.recv %a from %peer mesh = [0, 1] : memref<4x8xf32>
  %w = hir.recv %a from %peer mesh = [0, 1] : memref<4x8xf32>
  // CHECK-NEXT: func.return %w : !hir.work
  func.return %w : !hir.work
}

// A ring step: send to the next device, receive from the previous one, wait for both.
// CHECK-LABEL: func.func @ring_step(
func.func @ring_step(%out: memref<8xf32>, %in: memref<8xf32>, %next: index, %prev: index) {
  // CHECK-NEXT: %ws = hir.send %out to %next mesh = [0, 1, 2, 3] : memref<8xf32>
  %ws = hir.send %out to %next mesh = [0, 1, 2, 3] : memref<8xf32>
  // CHECK-NEXT: %wr = hir.recv %in from %prev mesh = [0, 1, 2, 3] : memref<8xf32>
  %wr = hir.recv %in from %prev mesh = [0, 1, 2, 3] : memref<8xf32>
  // CHECK-NEXT: hir.wait %ws
  hir.wait %ws
  // CHECK-NEXT: hir.wait %wr
  hir.wait %wr
  // CHECK-NEXT: func.return
  func.return
}
