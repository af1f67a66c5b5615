// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// Ops between two loops move above the first loop, in order, when that cannot change what they
// compute: constants, pure index arithmetic, num_streams, allocations (here one sized by the
// arithmetic before it), and get_current_stream when the stream before the first loop is the
// caller's stream, which the first loop returns to.

// CHECK-LABEL: func.func @hoisted(
// CHECK:         %n = hir.num_streams
// CHECK-NEXT:    %buf1 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %c2 = arith.constant 2 : index
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %rows = arith.divui %c8, %c2 : index
// CHECK-NEXT:    %n2 = hir.num_streams
// CHECK-NEXT:    %again = hir.get_current_stream
// CHECK-NEXT:    %buf2 = hir.allocate(%rows) : memref<?x8xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.set
// CHECK:           fusion.relu
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @hoisted(%arg0: memref<4x8xf32>) -> memref<?x8xf32> {
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
      %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %rows = arith.divui %c8, %c2 : index
  %n2 = hir.num_streams
  %again = hir.get_current_stream
  %buf2 = hir.allocate(%rows) : memref<?x8xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n2 from %main {
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<?x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf2 : memref<?x8xf32>
}

// A deallocation between the loops has an effect on memory: it stays where it is, and so do
// the loops.

// CHECK-LABEL: func.func @dealloc_between(
// CHECK:         hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:         hir.deallocate %tmp
// CHECK-NEXT:    hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
func.func @dealloc_between(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %tmp = hir.allocate() : memref<4x8xf32>
  %buf1 = hir.allocate() : memref<4x8xf32>
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_select %arg0[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf1[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  hir.deallocate %tmp : memref<4x8xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf2 : memref<4x8xf32>
}

// Before the first loop the current stream is %other, not the caller's stream the first loop
// returns to: moving %again above the first loop would change the stream it reads. Not fused.

// CHECK-LABEL: func.func @stream_read_between(
// CHECK:         hir.set_current_stream %other
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:         %again = hir.get_current_stream
// CHECK-NEXT:    hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
func.func @stream_read_between(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %other = hir.stream %c7
  %buf1 = hir.allocate() : memref<4x8xf32>
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.set_current_stream %other
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_select %arg0[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf1[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  %again = hir.get_current_stream
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf2 : memref<4x8xf32>
}

// The stream read between the second and third loops is hoisted: before the second loop the
// current stream is the caller's again, since the first loop returns to it and the launch does
// not change it. The first loop stays apart (the launch reads all of %buf1).

// CHECK-LABEL: func.func @stream_read_after_loops(
// CHECK:         hir.stream_for %h = %c0 to %c4 step %c1 streams(%s0) of %n from %main {
// CHECK:         hir.launch ins(%x = %buf1 : memref<4x8xf32>) outs(%t : memref<4x8xf32>)
// CHECK:         %again = hir.get_current_stream
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.exp
// CHECK:           fusion.relu
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @stream_read_after_loops(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<4x8xf32>
  %t = hir.allocate() : memref<4x8xf32>
  %buf2 = hir.allocate() : memref<4x8xf32>
  %buf3 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %h = %c0 to %c4 step %c1 streams(%s0) of %n from %main {
    %a0 = hir.alias_select %arg0[%h] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b0 = hir.alias_select %buf1[%h] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a0 : memref<8xf32, strided<[1], offset: ?>>) outs(%b0 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  hir.launch ins(%x = %buf1 : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
    %y = fusion.neg %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf2[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  %again = hir.get_current_stream
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf3[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf3 : memref<4x8xf32>
}
