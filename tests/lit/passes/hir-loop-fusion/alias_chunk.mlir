// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// stream(4) axes: both loops take chunk i of 4 of %buf1 along axis 0: fused.

// CHECK-LABEL: func.func @equal_chunks(
// CHECK:         %buf2 = hir.allocate() : memref<8x4xf32>
// CHECK-NEXT:    hir.for %f = %c0 to %c4 step %c1 {
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK:           %b = hir.alias_chunk %buf1[%i] axis 0 chunks 4
// CHECK:           fusion.set
// CHECK:           %a2 = hir.alias_chunk %buf1[%i] axis 0 chunks 4
// CHECK-NEXT:      %b2 = hir.alias_chunk %buf2[%i] axis 0 chunks 4
// CHECK:           fusion.exp
// CHECK:           hir.synchronize %s
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @equal_chunks(%arg0: memref<8x4xf32>) -> memref<8x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<8x4xf32>
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
    %a = hir.alias_chunk %arg0[%i] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    %b = hir.alias_chunk %buf1[%i] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    hir.launch ins(%x = %a : memref<2x4xf32, strided<[4, 1], offset: ?>>) outs(%b : memref<2x4xf32, strided<[4, 1], offset: ?>>) {
      %y = fusion.set %x : tensor<2x4xf32> -> tensor<2x4xf32>
      hir.yield %y : tensor<2x4xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s
  }
  %buf2 = hir.allocate() : memref<8x4xf32>
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
    %a2 = hir.alias_chunk %buf1[%j] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    %b2 = hir.alias_chunk %buf2[%j] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<2x4xf32, strided<[4, 1], offset: ?>>) outs(%b2 : memref<2x4xf32, strided<[4, 1], offset: ?>>) {
      %y = fusion.exp %x : tensor<2x4xf32> -> tensor<2x4xf32>
      hir.yield %y : tensor<2x4xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s2
  }
  func.return %buf2 : memref<8x4xf32>
}

// Over the same 2 iterations the first loop writes halves of %buf1 (2 chunks) and the second
// reads quarters (4 chunks): iteration 1 reads rows 2-3, written by iteration 0. Not fused.

// CHECK-LABEL: func.func @different_chunks(
// CHECK:         hir.for %f = %c0 to %c2 step %c1 {
// CHECK:         hir.for %i = %c0 to %c2 step %c1 {
// CHECK:         %buf2 = hir.allocate() : memref<2x4xf32>
// CHECK-NEXT:    hir.for %g = %c0 to %c2 step %c1 {
// CHECK:         hir.for %j = %c0 to %c2 step %c1 {
func.func @different_chunks(%arg0: memref<8x4xf32>) -> memref<2x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<8x4xf32>
  hir.for %f = %c0 to %c2 step %c1 {
    %fk = arith.remui %f, %n : index
    %fs = hir.stream %fk
    hir.set_current_stream %fs
    hir.synchronize %main
  }
  hir.for %i = %c0 to %c2 step %c1 {
    %k = arith.remui %i, %n : index
    %s = hir.stream %k
    hir.set_current_stream %s
    %a = hir.alias_chunk %arg0[%i] axis 0 chunks 2 : memref<8x4xf32> -> memref<4x4xf32, strided<[4, 1], offset: ?>>
    %b = hir.alias_chunk %buf1[%i] axis 0 chunks 2 : memref<8x4xf32> -> memref<4x4xf32, strided<[4, 1], offset: ?>>
    hir.launch ins(%x = %a : memref<4x4xf32, strided<[4, 1], offset: ?>>) outs(%b : memref<4x4xf32, strided<[4, 1], offset: ?>>) {
      %y = fusion.set %x : tensor<4x4xf32> -> tensor<4x4xf32>
      hir.yield %y : tensor<4x4xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s
  }
  %buf2 = hir.allocate() : memref<2x4xf32>
  hir.for %g = %c0 to %c2 step %c1 {
    %gk = arith.remui %g, %n : index
    %gs = hir.stream %gk
    hir.set_current_stream %gs
    hir.synchronize %main
  }
  hir.for %j = %c0 to %c2 step %c1 {
    %k2 = arith.remui %j, %n : index
    %s2 = hir.stream %k2
    hir.set_current_stream %s2
    %a2 = hir.alias_chunk %buf1[%j] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<2x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<2x4xf32, strided<[4, 1], offset: ?>>) outs(%b2 : memref<4xf32, strided<[1], offset: ?>>) {
      %y = fusion.sum %x dims = [0] : tensor<2x4xf32> -> tensor<4xf32>
      hir.yield %y : tensor<4xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s2
  }
  func.return %buf2 : memref<2x4xf32>
}
