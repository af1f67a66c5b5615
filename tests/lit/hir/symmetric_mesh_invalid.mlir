// RUN: hir-opt %s --split-input-file --verify-diagnostics

func.func @device_index_duplicate_ids() {
  %r = hir.device_index mesh = [0, 0]
  func.return
}
// expected-error@-3 {{'hir.device_index' op mesh must list distinct non-negative device ids, got [0, 0]}}

// -----

func.func @barrier_empty_mesh() {
  hir.barrier mesh = []
  func.return
}
// expected-error@-3 {{'hir.barrier' op mesh must list distinct non-negative device ids, got []}}

// -----

func.func @peer_view_negative_id(%i: index) {
  %b = hir.allocate() symmetric : memref<4xf32>
  %p = hir.peer_view %b device %i mesh = [0, -1] : memref<4xf32>
  func.return
}
// expected-error@-3 {{'hir.peer_view' op mesh must list distinct non-negative device ids, got [0, -1]}}
