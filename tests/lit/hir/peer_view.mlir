// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// hir.peer_view: the copy of a symmetric buffer held by another mesh position, with the
// buffer's own type.

// CHECK-LABEL: func.func @peer_view(
func.func @peer_view(%peer: index) -> memref<2x8xf32> {
  // CHECK-NEXT: %buf = hir.allocate() symmetric : memref<2x8xf32>
  %buf = hir.allocate() symmetric : memref<2x8xf32>
  // CHECK-NEXT: %v = hir.peer_view %buf device %peer mesh = [0, 1] : memref<2x8xf32>
  %v = hir.peer_view %buf device %peer mesh = [0, 1] : memref<2x8xf32>
  // CHECK-NEXT: func.return %v : memref<2x8xf32>
  func.return %v : memref<2x8xf32>
}

// A buffer that does not come from an hir.allocate (a function argument) is taken on trust.
// CHECK-LABEL: func.func @peer_view_arg(
func.func @peer_view_arg(%buf: memref<?xbf16>, %peer: index) -> memref<?xbf16> {
  // CHECK-NEXT: %v = hir.peer_view %buf device %peer mesh = [0, 1, 2, 3] : memref<?xbf16>
  %v = hir.peer_view %buf device %peer mesh = [0, 1, 2, 3] : memref<?xbf16>
  // CHECK-NEXT: func.return %v : memref<?xbf16>
  func.return %v : memref<?xbf16>
}
