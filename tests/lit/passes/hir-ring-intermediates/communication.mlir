// RUN: hir-opt %s -p hir-ring-intermediates | filecheck %s

// A gathered chunk (the all-gather + GEMM pipeline): the collective writes its slot on a stream
// of its own, which starts after the worker's earlier work, and `hir.wait` puts the worker
// after it before the GEMM. So the slot is free again when iteration i + num_streams gathers
// into it: a ring.

// CHECK-LABEL: func.func @waited(
// CHECK:         %g = hir.allocate(%slots) : memref<?x2x8xf32>
// CHECK:           %g_i = hir.alias_select %g[%slot] axis 0 : memref<?x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:      %w = hir.allgather %a_i into %g_i axis 0 mesh = [0, 1]
func.func @waited(%a: memref<4x1x8xf32>, %b: memref<8x8xf32>) -> memref<4x2x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %g = hir.allocate() : memref<4x2x8xf32>
  %out = hir.allocate() : memref<4x2x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a_i = hir.alias_select %a[%i] axis 0 : memref<4x1x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
    %g_i = hir.alias_select %g[%i] axis 0 : memref<4x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
    %w = hir.allgather %a_i into %g_i axis 0 mesh = [0, 1] : memref<1x8xf32, strided<[8, 1], offset: ?>>, memref<2x8xf32, strided<[8, 1], offset: ?>>
    hir.wait %w
    %out_i = hir.alias_select %out[%i] axis 0 : memref<4x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
    hir.launch ins(%x = %g_i, %y = %b : memref<2x8xf32, strided<[8, 1], offset: ?>>, memref<8x8xf32>) outs(%out_i : memref<2x8xf32, strided<[8, 1], offset: ?>>) {
      %z = fusion.matmul %x, %y : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
      hir.yield %z : tensor<2x8xf32>
    }
  }
  func.return %out : memref<4x2x8xf32>
}

// Without the hir.wait in the iteration, the gather into slot i mod n may still run when a later
// iteration reuses the slot: %g stays whole.

// CHECK-LABEL: func.func @not_waited(
// CHECK:         %g = hir.allocate() : memref<4x2x8xf32>
// CHECK-NOT:     %slot
// CHECK:         func.return
func.func @not_waited(%a: memref<4x1x8xf32>) -> memref<4x1x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %g = hir.allocate() : memref<4x2x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a_i = hir.alias_select %a[%i] axis 0 : memref<4x1x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
    %g_i = hir.alias_select %g[%i] axis 0 : memref<4x2x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
    %w = hir.allgather %a_i into %g_i axis 0 mesh = [0, 1] : memref<1x8xf32, strided<[8, 1], offset: ?>>, memref<2x8xf32, strided<[8, 1], offset: ?>>
  }
  func.return %a : memref<4x1x8xf32>
}
