// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// Write after read: every iteration of the first loop reads all of %t, and the second loop
// overwrites row j of %t. Fused, iteration 1 of the first part would read row 0 already
// overwritten by iteration 0 of the second. Not fused.

// CHECK-LABEL: func.func @war_hazard(
// CHECK:         hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.sum
// CHECK:         hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
// CHECK:           fusion.neg
func.func @war_hazard(%arg0: memref<4x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%x = %arg0 : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
    %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  %buf1 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %b = hir.alias_select %buf1[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %t : memref<4x8xf32>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %arg0[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t2 = hir.alias_select %t[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%t2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf1, %t : memref<4x8xf32>, memref<4x8xf32>
}

// The same overwrite when the first loop reads only row i of %t: iteration i of the second
// part overwrites what iteration i of the first part has already read, on the same stream. Fused.

// CHECK-LABEL: func.func @war_same_slice(
// CHECK:         hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.exp
// CHECK:           %t2 = hir.alias_select %t[%i] axis 0
// CHECK:           fusion.neg
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @war_same_slice(%arg0: memref<4x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %t = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%x = %arg0 : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
    %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  %buf1 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_select %t[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf1[%i] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<8xf32, strided<[1], offset: ?>>) outs(%b : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.exp %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %arg0[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %t2 = hir.alias_select %t[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%t2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf1, %t : memref<4x8xf32>, memref<4x8xf32>
}
