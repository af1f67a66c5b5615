// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// Ops between two pairs move above the first pair, in order, when that cannot change what they
// compute: constants, pure index arithmetic, num_streams, allocations (here one sized by the
// arithmetic before it), and get_current_stream when the stream before the first pair is the
// caller's stream, which the first pair returns to.

// CHECK-LABEL: func.func @hoisted(
// CHECK:         %n = hir.num_streams
// CHECK-NEXT:    %buf1 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %c2 = arith.constant 2 : index
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %rows = arith.divui %c8, %c2 : index
// CHECK-NEXT:    %n2 = hir.num_streams
// CHECK-NEXT:    %again = hir.get_current_stream
// CHECK-NEXT:    %buf2 = hir.allocate(%rows) : memref<?x8xf32>
// CHECK-NEXT:    hir.for %f = %c0 to %c4 step %c1 {
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK:           fusion.set
// CHECK:           fusion.relu
// CHECK:           hir.synchronize %s
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @hoisted(%arg0: memref<4x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<4x8xf32>
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
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %rows = arith.divui %c8, %c2 : index
  %n2 = hir.num_streams
  %again = hir.get_current_stream
  %buf2 = hir.allocate(%rows) : memref<?x8xf32>
  hir.for %g = %c0 to %c4 step %c1 {
    %gk = arith.remui %g, %n2 : index
    %gs = hir.stream %gk
    hir.set_current_stream %gs
    hir.synchronize %main
  }
  hir.for %j = %c0 to %c4 step %c1 {
    %k2 = arith.remui %j, %n2 : index
    %s2 = hir.stream %k2
    hir.set_current_stream %s2
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<?x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s2
  }
  func.return %buf2 : memref<?x8xf32>
}

// A deallocation between the pairs has an effect on memory: it stays where it is, and so do
// the loops.

// CHECK-LABEL: func.func @dealloc_between(
// CHECK:         hir.for %f = %c0 to %c4 step %c1 {
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK:         hir.deallocate %tmp
// CHECK-NEXT:    hir.for %g = %c0 to %c4 step %c1 {
// CHECK:         hir.for %j = %c0 to %c4 step %c1 {
func.func @dealloc_between(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %tmp = hir.allocate() : memref<4x8xf32>
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
  hir.deallocate %tmp : memref<4x8xf32>
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

// Before the first pair the current stream is %other, not the caller's stream the first pair
// returns to: moving %again above the first pair would change the stream it reads. Not fused.

// CHECK-LABEL: func.func @stream_read_between(
// CHECK:         hir.set_current_stream %other
// CHECK-NEXT:    hir.for %f = %c0 to %c4 step %c1 {
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK:         %again = hir.get_current_stream
// CHECK-NEXT:    hir.for %g = %c0 to %c4 step %c1 {
// CHECK:         hir.for %j = %c0 to %c4 step %c1 {
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
  %again = hir.get_current_stream
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

// The stream read between the second and third pairs is hoisted: before the second pair the
// current stream is the caller's again, since the first pair returns to it and the launch does
// not change it. The first pair stays apart (the launch reads all of %buf1).

// CHECK-LABEL: func.func @stream_read_after_pairs(
// CHECK:         hir.for %e = %c0 to %c4 step %c1 {
// CHECK:         hir.for %h = %c0 to %c4 step %c1 {
// CHECK:         hir.launch ins(%x = %buf1 : memref<4x8xf32>) outs(%t : memref<4x8xf32>)
// CHECK:         %again = hir.get_current_stream
// CHECK-NEXT:    hir.for %f = %c0 to %c4 step %c1 {
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK:           fusion.exp
// CHECK:           fusion.relu
// CHECK:           hir.synchronize %s
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @stream_read_after_pairs(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<4x8xf32>
  %t = hir.allocate() : memref<4x8xf32>
  %buf2 = hir.allocate() : memref<4x8xf32>
  %buf3 = hir.allocate() : memref<4x8xf32>
  hir.for %e = %c0 to %c4 step %c1 {
    %ek = arith.remui %e, %n : index
    %es = hir.stream %ek
    hir.set_current_stream %es
    hir.synchronize %main
  }
  hir.for %h = %c0 to %c4 step %c1 {
    %k0 = arith.remui %h, %n : index
    %s0 = hir.stream %k0
    hir.set_current_stream %s0
    %a0 = hir.alias_select %arg0[%h] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b0 = hir.alias_select %buf1[%h] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a0 : memref<8xf32, strided<[1], offset: ?>>) outs(%b0 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.set %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s0
  }
  hir.launch ins(%x = %buf1 : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
    %y = fusion.neg %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
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
    %a = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf2[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s
  }
  %again = hir.get_current_stream
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
    %a2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf3[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s2
  }
  func.return %buf3 : memref<4x8xf32>
}
