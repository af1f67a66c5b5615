// RUN: hir-opt %s --split-input-file --verify-diagnostics

// Every collective and P2P op needs a mesh of distinct, non-negative device ids.

func.func @allgather_empty_mesh(%a: memref<1x8xf32>, %g: memref<1x8xf32>) {
  // expected-error@+1 {{'hir.allgather' op mesh must list distinct non-negative device ids, got []}}
  %w = hir.allgather %a into %g axis 0 mesh = [] : memref<1x8xf32>, memref<1x8xf32>
  func.return
}

// -----

func.func @allreduce_duplicate_ids(%a: memref<8xf32>) {
  // expected-error@+1 {{'hir.allreduce' op mesh must list distinct non-negative device ids, got [0, 0]}}
  %w = hir.allreduce sum %a into %a mesh = [0, 0] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @reduce_scatter_negative_id(%a: memref<2x8xf32>, %r: memref<1x8xf32>) {
  // expected-error@+1 {{'hir.reduce_scatter' op mesh must list distinct non-negative device ids, got [0, -1]}}
  %w = hir.reduce_scatter sum %a into %r axis 0 mesh = [0, -1] : memref<2x8xf32>, memref<1x8xf32>
  func.return
}

// -----

func.func @broadcast_empty_mesh(%a: memref<8xf32>, %root: index) {
  // expected-error@+1 {{'hir.broadcast' op mesh must list distinct non-negative device ids, got []}}
  %w = hir.broadcast %a into %a root %root mesh = [] : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @send_empty_mesh(%a: memref<8xf32>, %peer: index) {
  // expected-error@+1 {{'hir.send' op mesh must list distinct non-negative device ids, got []}}
  %w = hir.send %a to %peer mesh = [] : memref<8xf32>
  func.return
}

// -----

func.func @recv_duplicate_ids(%a: memref<8xf32>, %peer: index) {
  // expected-error@+1 {{'hir.recv' op mesh must list distinct non-negative device ids, got [3, 3]}}
  %w = hir.recv %a from %peer mesh = [3, 3] : memref<8xf32>
  func.return
}
