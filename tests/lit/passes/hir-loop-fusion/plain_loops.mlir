// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// Only hir.stream_for loops fuse: plain hir.for loops are left alone, even where fusing them
// would look harmless, and so are hand-written fork and main loops of explicit stream ops (what
// hir-expand-stream-loops makes of a hir.stream_for): the pass does not recognize op patterns.

// Fork and main loops written out: not fused.
// CHECK-LABEL: func.func @expanded_loops(
// CHECK:         hir.for %f = %c0 to %c4 step %c1 {
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK:           fusion.set
// CHECK:         hir.for %g = %c0 to %c4 step %c1 {
// CHECK:         hir.for %j = %c0 to %c4 step %c1 {
// CHECK:           fusion.relu
func.func @expanded_loops(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<4x8xf32>
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.for %f = %c0 to %c4 step %c1 {
    %fk = arith.remui %f, %n : index
    %fs = hir.stream %fk
    hir.set_current_stream %fs
    hir.synchronize %main
  }
  hir.for %i = %c0 to %c4 step %c1 {
    %k = arith.remui %i, %n : index
    %s = hir.stream %k
    hir.set_current_stream %s
    %a = hir.alias_select %arg0[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf1[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s
  }
  hir.for %g = %c0 to %c4 step %c1 {
    %gk = arith.remui %g, %n : index
    %gs = hir.stream %gk
    hir.set_current_stream %gs
    hir.synchronize %main
  }
  hir.for %j = %c0 to %c4 step %c1 {
    %k2 = arith.remui %j, %n : index
    %s2 = hir.stream %k2
    hir.set_current_stream %s2
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s2
  }
  func.return %buf2 : memref<4x8xf32>
}

// Serial host loops (no streams at all).
// CHECK-LABEL: func.func @serial_loops(
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK:           fusion.set
// CHECK:         hir.for %j = %c0 to %c4 step %c1 {
// CHECK:           fusion.relu
func.func @serial_loops(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %buf1 = hir.allocate() : memref<4x8xf32>
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.for %i = %c0 to %c4 step %c1 {
    %a = hir.alias_select %arg0[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf1[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  hir.for %j = %c0 to %c4 step %c1 {
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf2 : memref<4x8xf32>
}
