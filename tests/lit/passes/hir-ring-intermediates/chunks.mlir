// RUN: hir-opt %s -p hir-ring-intermediates | filecheck %s

// stream(N) views: a chunk of rows, and a chunk along an inner axis (strided in the whole
// buffer). Each slot of the ring is one chunk, contiguous: the views take the slot with
// hir.alias_select on the ring's leading axis, so their layout becomes the chunk's own.

// CHECK-LABEL: func.func @inner_axis_chunks(
// CHECK:         %slots = arith.minui %n, %c4 : index
// CHECK-NEXT:    %t = hir.allocate(%slots) : memref<?x8x2xf32>
// CHECK:           %slot = arith.remui %i, %n : index
// CHECK:           %t_i = hir.alias_select %t[%slot] axis 0 : memref<?x8x2xf32> -> memref<8x2xf32, strided<[2, 1], offset: ?>>
// CHECK:           %t_j = hir.alias_select %t[%slot] axis 0 : memref<?x8x2xf32> -> memref<8x2xf32, strided<[2, 1], offset: ?>>
func.func @inner_axis_chunks(%x: memref<8x8xf32>) -> memref<8x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<8x8xf32>
  %out = hir.allocate() : memref<8x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_chunk %x[%i] axis 1 chunks 4 : memref<8x8xf32> -> memref<8x2xf32, strided<[8, 1], offset: ?>>
    %t_i = hir.alias_chunk %t[%i] axis 1 chunks 4 : memref<8x8xf32> -> memref<8x2xf32, strided<[8, 1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<8x2xf32, strided<[8, 1], offset: ?>>) outs(%t_i : memref<8x2xf32, strided<[8, 1], offset: ?>>) {
      %r = fusion.exp %a : tensor<8x2xf32> -> tensor<8x2xf32>
      hir.yield %r : tensor<8x2xf32>
    }
    %t_j = hir.alias_chunk %t[%i] axis 1 chunks 4 : memref<8x8xf32> -> memref<8x2xf32, strided<[8, 1], offset: ?>>
    %out_i = hir.alias_chunk %out[%i] axis 1 chunks 4 : memref<8x8xf32> -> memref<8x2xf32, strided<[8, 1], offset: ?>>
    hir.launch ins(%b = %t_j : memref<8x2xf32, strided<[8, 1], offset: ?>>) outs(%out_i : memref<8x2xf32, strided<[8, 1], offset: ?>>) {
      %m = fusion.tanh %b : tensor<8x2xf32> -> tensor<8x2xf32>
      hir.yield %m : tensor<8x2xf32>
    }
  }
  func.return %out : memref<8x8xf32>
}
