// RUN: hir-opt %s --split-input-file --verify-diagnostics

// hir.peer_view needs a symmetric buffer and has the buffer's type.

func.func @not_symmetric(%peer: index) {
  %buf = hir.allocate() : memref<2x8xf32>
  // expected-error@+1 {{'hir.peer_view' op hir.peer_view needs a buffer from `hir.allocate symmetric`}}
  %v = hir.peer_view %buf device %peer mesh = [0, 1] : memref<2x8xf32>
  func.return
}

// -----

func.func @other_type(%buf: memref<2x8xf32>, %peer: index) {
  // expected-error@+1 {{'hir.peer_view' op result 'result' at position 0 does not verify:}}
  %v = "hir.peer_view"(%buf, %peer) <{mesh = array<i64: 0, 1>}> : (memref<2x8xf32>, index) -> memref<8xf32>
  func.return
}
