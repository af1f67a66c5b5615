// RUN: hir-opt %s --split-input-file -p hir-loop-fusion | filecheck %s

// stream(4) axes: both loops take chunk i of 4 of %buf1 along axis 0: fused.

// CHECK-LABEL: func.func @equal_chunks(
// CHECK:         %buf2 = hir.allocate() : memref<8x4xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           %b = hir.alias_chunk %buf1[%i] axis 0 chunks 4
// CHECK:           fusion.set
// CHECK:           %a2 = hir.alias_chunk %buf1[%i] axis 0 chunks 4
// CHECK-NEXT:      %b2 = hir.alias_chunk %buf2[%i] axis 0 chunks 4
// CHECK:           fusion.exp
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @equal_chunks(%arg0: memref<8x4xf32>) -> memref<8x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<8x4xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_chunk %arg0[%i] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    %b = hir.alias_chunk %buf1[%i] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    hir.launch ins(%x = %a : memref<2x4xf32, strided<[4, 1], offset: ?>>) outs(%b : memref<2x4xf32, strided<[4, 1], offset: ?>>) {
      %y = fusion.set %x : tensor<2x4xf32> -> tensor<2x4xf32>
      hir.yield %y : tensor<2x4xf32>
    }
  }
  %buf2 = hir.allocate() : memref<8x4xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_chunk %buf1[%j] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    %b2 = hir.alias_chunk %buf2[%j] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<2x4xf32, strided<[4, 1], offset: ?>>) outs(%b2 : memref<2x4xf32, strided<[4, 1], offset: ?>>) {
      %y = fusion.exp %x : tensor<2x4xf32> -> tensor<2x4xf32>
      hir.yield %y : tensor<2x4xf32>
    }
  }
  func.return %buf2 : memref<8x4xf32>
}

// Over the same 2 iterations the first loop writes halves of %buf1 (2 chunks) and the second
// reads quarters (4 chunks): iteration 1 reads rows 2-3, written by iteration 0. Not fused.

// CHECK-LABEL: func.func @different_chunks(
// CHECK:         hir.stream_for %i = %c0 to %c2 step %c1 streams(%s) of %n from %main {
// CHECK:         %buf2 = hir.allocate() : memref<2x4xf32>
// CHECK-NEXT:    hir.stream_for %j = %c0 to %c2 step %c1 streams(%s2) of %n from %main {
func.func @different_chunks(%arg0: memref<8x4xf32>) -> memref<2x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<8x4xf32>
  hir.stream_for %i = %c0 to %c2 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_chunk %arg0[%i] axis 0 chunks 2 : memref<8x4xf32> -> memref<4x4xf32, strided<[4, 1], offset: ?>>
    %b = hir.alias_chunk %buf1[%i] axis 0 chunks 2 : memref<8x4xf32> -> memref<4x4xf32, strided<[4, 1], offset: ?>>
    hir.launch ins(%x = %a : memref<4x4xf32, strided<[4, 1], offset: ?>>) outs(%b : memref<4x4xf32, strided<[4, 1], offset: ?>>) {
      %y = fusion.set %x : tensor<4x4xf32> -> tensor<4x4xf32>
      hir.yield %y : tensor<4x4xf32>
    }
  }
  %buf2 = hir.allocate() : memref<2x4xf32>
  hir.stream_for %j = %c0 to %c2 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_chunk %buf1[%j] axis 0 chunks 4 : memref<8x4xf32> -> memref<2x4xf32, strided<[4, 1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<2x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<2x4xf32, strided<[4, 1], offset: ?>>) outs(%b2 : memref<4xf32, strided<[1], offset: ?>>) {
      %y = fusion.sum %x dims = [0] : tensor<2x4xf32> -> tensor<4xf32>
      hir.yield %y : tensor<4xf32>
    }
  }
  func.return %buf2 : memref<2x4xf32>
}

// -----

// Index i of %buf1 (extent 4) and chunk i of its 4 chunks along the same axis are the same rows:
// the consumer that reads by chunks (after a merging reshape) fuses with the producer.

// CHECK-LABEL: func.func @select_then_one_index_chunks(
// CHECK:         hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           %b = hir.alias_select %buf1[%i] axis 0
// CHECK:           %a2 = hir.alias_chunk %buf1[%i] axis 0 chunks 4
// CHECK-NOT:     hir.stream_for
// CHECK:         func.return
func.func @select_then_one_index_chunks(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_select %arg0[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf1[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_chunk %buf1[%j] axis 0 chunks 4 : memref<4x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
    %b2 = hir.alias_chunk %buf2[%j] axis 0 chunks 4 : memref<4x8xf32> -> memref<1x8xf32, strided<[8, 1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<1x8xf32, strided<[8, 1], offset: ?>>) outs(%b2 : memref<1x8xf32, strided<[8, 1], offset: ?>>) {
      %y = fusion.neg %x : tensor<1x8xf32> -> tensor<1x8xf32>
      hir.yield %y : tensor<1x8xf32>
    }
  }
  func.return %buf2 : memref<4x8xf32>
}

// -----

// Chunk i of 2 along an axis of extent 4 is rows 2i and 2i + 1, not index i: iteration 1 of the
// second loop reads row 1, which iteration 0 of the first writes. Not fused.

// CHECK-LABEL: func.func @two_index_chunks_then_select(
// CHECK:         hir.stream_for %i = %c0 to %c2 step %c1
// CHECK:         hir.stream_for %j = %c0 to %c2 step %c1
func.func @two_index_chunks_then_select(%arg0: memref<4x8xf32>) -> memref<2x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c2 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_chunk %arg0[%i] axis 0 chunks 2 : memref<4x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
    %b = hir.alias_chunk %buf1[%i] axis 0 chunks 2 : memref<4x8xf32> -> memref<2x8xf32, strided<[8, 1], offset: ?>>
    hir.launch ins(%x = %a : memref<2x8xf32, strided<[8, 1], offset: ?>>) outs(%b : memref<2x8xf32, strided<[8, 1], offset: ?>>) {
      %y = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
      hir.yield %y : tensor<2x8xf32>
    }
  }
  %buf2 = hir.allocate() : memref<2x8xf32>
  hir.stream_for %j = %c0 to %c2 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf2 : memref<2x8xf32>
}
