// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s

// Ops that enqueue work or change the current stream are never removed, even when their results
// are unused, and identical ones never merge: hir.launch, hir.set_current_stream,
// hir.synchronize, the collectives and P2P ops, hir.wait.

// CHECK-LABEL: func.func @kept(
func.func @kept(%a: memref<2x8xf32>, %g: memref<4x8xf32>, %k: index, %w: !hir.work) {
  // CHECK-COUNT-2: hir.launch ins(%x = %a
  hir.launch ins(%x = %a : memref<2x8xf32>) outs(%a : memref<2x8xf32>) {
    %y = fusion.relu %x : tensor<2x8xf32> -> tensor<2x8xf32>
    hir.yield %y : tensor<2x8xf32>
  }
  hir.launch ins(%x = %a : memref<2x8xf32>) outs(%a : memref<2x8xf32>) {
    %y = fusion.relu %x : tensor<2x8xf32> -> tensor<2x8xf32>
    hir.yield %y : tensor<2x8xf32>
  }
  // CHECK:      %s = hir.stream %k
  // CHECK-NEXT: hir.set_current_stream %s
  // CHECK-NEXT: hir.set_current_stream %s
  // CHECK-NEXT: hir.synchronize %s
  // CHECK-NEXT: hir.synchronize %s
  %s = hir.stream %k
  hir.set_current_stream %s
  hir.set_current_stream %s
  hir.synchronize %s
  hir.synchronize %s
  // CHECK-NEXT: hir.allgather %a into %g
  // CHECK-NEXT: hir.allgather %a into %g
  // CHECK-NEXT: hir.allreduce sum %a into %a
  // CHECK-NEXT: hir.reduce_scatter sum %g into %a
  // CHECK-NEXT: hir.broadcast %a into %a
  // CHECK-NEXT: hir.send %a to %k
  // CHECK-NEXT: hir.recv %a from %k
  %w0 = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<2x8xf32>, memref<4x8xf32>
  %w1 = hir.allgather %a into %g axis 0 mesh = [0, 1] : memref<2x8xf32>, memref<4x8xf32>
  %w2 = hir.allreduce sum %a into %a mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  %w3 = hir.reduce_scatter sum %g into %a axis 0 mesh = [0, 1] : memref<4x8xf32>, memref<2x8xf32>
  %w4 = hir.broadcast %a into %a root %k mesh = [0, 1] : memref<2x8xf32>, memref<2x8xf32>
  %w5 = hir.send %a to %k mesh = [0, 1] : memref<2x8xf32>
  %w6 = hir.recv %a from %k mesh = [0, 1] : memref<2x8xf32>
  // CHECK-NEXT: hir.wait %w
  // CHECK-NEXT: hir.wait %w
  // CHECK-NEXT: func.return
  hir.wait %w
  hir.wait %w
  func.return
}

// A loop whose body has effects stays; one whose body is pure goes.
// CHECK-LABEL: func.func @loops(
func.func @loops(%c0: index, %c4: index, %c1: index) {
  // CHECK-NEXT: %main = hir.get_current_stream
  // CHECK-NEXT: hir.for %i = %c0 to %c4 step %c1 {
  // CHECK-NEXT:   %s = hir.stream %i
  // CHECK-NEXT:   hir.set_current_stream %s
  // CHECK-NEXT:   hir.synchronize %main
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return
  %main = hir.get_current_stream
  hir.for %i = %c0 to %c4 step %c1 {
    %s = hir.stream %i
    hir.set_current_stream %s
    hir.synchronize %main
  }
  hir.for %j = %c0 to %c4 step %c1 {
    %s = hir.stream %j
    %n = hir.num_streams
  }
  func.return
}
