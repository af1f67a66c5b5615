// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s

// hir.device_index and hir.peer_view are pure (unused ones go, duplicates merge); hir.barrier is a
// synchronization and always stays.

// CHECK-LABEL: func.func @symmetric(
func.func @symmetric(%peer: index) -> (index, index, memref<4xf32>, memref<4xf32>) {
  // CHECK-NEXT: %buf = hir.allocate() symmetric : memref<4xf32>
  // CHECK-NEXT: %r = hir.device_index mesh = [0, 1]
  // CHECK-NEXT: %v = hir.peer_view %buf device %peer mesh = [0, 1]
  // CHECK-NEXT: hir.barrier mesh = [0, 1]
  // CHECK-NEXT: hir.barrier mesh = [0, 1]
  // CHECK-NEXT: func.return %r, %r, %v, %v
  %buf = hir.allocate() symmetric : memref<4xf32>
  %r = hir.device_index mesh = [0, 1]
  %r2 = hir.device_index mesh = [0, 1]
  %unused = hir.device_index mesh = [0, 1, 2]
  %v = hir.peer_view %buf device %peer mesh = [0, 1] : memref<4xf32>
  %v2 = hir.peer_view %buf device %peer mesh = [0, 1] : memref<4xf32>
  %unused_view = hir.peer_view %buf device %r mesh = [0, 1] : memref<4xf32>
  hir.barrier mesh = [0, 1]
  hir.barrier mesh = [0, 1]
  func.return %r, %r2, %v, %v2 : index, index, memref<4xf32>, memref<4xf32>
}
