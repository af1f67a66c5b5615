// RUN: hir-opt %s -p hir-ring-intermediates | filecheck %s

// A buffer freed after its loop becomes a ring all the same, and its hir.deallocate frees the
// ring. %u is freed in another block (the body of a hir.for): whether that free comes after the
// loop is not decided here, so %u stays whole.

// CHECK-LABEL: func.func @freed(
// CHECK:         %slots = arith.minui %n, %c64 : index
// CHECK-NEXT:    %t = hir.allocate(%slots) : memref<?x32xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c64 step %c1 streams(%s) of %n from %main {
// CHECK-NEXT:      %slot = arith.remui %i, %n : index
// CHECK:           %t_i = hir.alias_select %t[%slot] axis 0 : memref<?x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
// CHECK:           %u_i = hir.alias_select %u[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
// CHECK:             fusion.exp
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.deallocate %t : memref<?x32xf32>
// CHECK-NEXT:    hir.for %j = %c0 to %c1 step %c1 {
// CHECK-NEXT:      hir.deallocate %u : memref<64x32xf32>
// CHECK-NEXT:    }
func.func @freed(%x: memref<64x32xf32>) -> memref<64x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<64x32xf32>
  %u = hir.allocate() : memref<64x32xf32>
  %out = hir.allocate() : memref<64x32xf32>
  hir.stream_for %i = %c0 to %c64 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
    %t_i = hir.alias_select %t[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<32xf32, strided<[1], offset: ?>>) outs(%t_i : memref<32xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<32xf32> -> tensor<32xf32>
      hir.yield %r : tensor<32xf32>
    }
    %u_i = hir.alias_select %u[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_i : memref<32xf32, strided<[1], offset: ?>>) outs(%u_i : memref<32xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<32xf32> -> tensor<32xf32>
      hir.yield %m : tensor<32xf32>
    }
    %out_i = hir.alias_select %out[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
    hir.launch ins(%c = %u_i : memref<32xf32, strided<[1], offset: ?>>) outs(%out_i : memref<32xf32, strided<[1], offset: ?>>) {
      %e = fusion.exp %c : tensor<32xf32> -> tensor<32xf32>
      hir.yield %e : tensor<32xf32>
    }
  }
  hir.deallocate %t : memref<64x32xf32>
  hir.for %j = %c0 to %c1 step %c1 {
    hir.deallocate %u : memref<64x32xf32>
  }
  func.return %out : memref<64x32xf32>
}
