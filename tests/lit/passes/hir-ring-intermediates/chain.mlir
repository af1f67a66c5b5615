// RUN: hir-opt %s -p hir-ring-intermediates | filecheck %s
// RUN: hir-opt %s -p hir-ring-intermediates,hir-ring-intermediates | filecheck %s

// A relu -> neg chain over 64 rows: %t is written and read by iteration i only, so it becomes a
// ring of min(num_streams, 64) rows, slot i mod num_streams. The returned %out stays whole. The
// pass is idempotent: a ring is indexed by the slot, not the induction variable, so it is not
// a candidate again.

// CHECK-LABEL: func.func @chain(
// CHECK:         %out = hir.allocate() : memref<64x32xf32>
// CHECK-NEXT:    %slots = arith.minui %n, %c64 : index
// CHECK-NEXT:    %t = hir.allocate(%slots) : memref<?x32xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c64 step %c1 streams(%s) of %n from %main {
// CHECK-NEXT:      %slot = arith.remui %i, %n : index
// CHECK-NEXT:      %x_i = hir.alias_select %x[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %t_w = hir.alias_select %t[%slot] axis 0 : memref<?x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%a = %x_i : {{.*}}) outs(%t_w : memref<32xf32, strided<[1], offset: ?>>) {
// CHECK:           %t_r = hir.alias_select %t[%slot] axis 0 : memref<?x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %out_i = hir.alias_select %out[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%b = %t_r : memref<32xf32, strided<[1], offset: ?>>) outs(%out_i : {{.*}}) {
// CHECK:         func.return %out : memref<64x32xf32>
func.func @chain(%x: memref<64x32xf32>) -> memref<64x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<64x32xf32>
  %out = hir.allocate() : memref<64x32xf32>
  hir.stream_for %i = %c0 to %c64 step %c1 streams(%s) of %n from %main {
    %x_i = hir.alias_select %x[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
    %t_w = hir.alias_select %t[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
    hir.launch ins(%a = %x_i : memref<32xf32, strided<[1], offset: ?>>) outs(%t_w : memref<32xf32, strided<[1], offset: ?>>) {
      %r = fusion.relu %a : tensor<32xf32> -> tensor<32xf32>
      hir.yield %r : tensor<32xf32>
    }
    %t_r = hir.alias_select %t[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
    %out_i = hir.alias_select %out[%i] axis 0 : memref<64x32xf32> -> memref<32xf32, strided<[1], offset: ?>>
    hir.launch ins(%b = %t_r : memref<32xf32, strided<[1], offset: ?>>) outs(%out_i : memref<32xf32, strided<[1], offset: ?>>) {
      %m = fusion.neg %b : tensor<32xf32> -> tensor<32xf32>
      hir.yield %m : tensor<32xf32>
    }
  }
  func.return %out : memref<64x32xf32>
}
