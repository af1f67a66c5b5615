// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// The loops iterate different ranges (4 rows, then 2 rows of another buffer): not the same
// iteration space, so they stay apart even though they share no buffer.

// CHECK-LABEL: func.func @different_bounds(
// CHECK:         hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:         %buf2 = hir.allocate() : memref<2x8xf32>
// CHECK-NEXT:    hir.stream_for %j = %c0 to %c2 step %c1 streams(%s2) of %n from %main {
func.func @different_bounds(%arg0: memref<4x8xf32>, %arg1: memref<2x8xf32>) -> (memref<4x8xf32>, memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
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
  %buf2 = hir.allocate() : memref<2x8xf32>
  hir.stream_for %j = %c0 to %c2 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %arg1[%j] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf1, %buf2 : memref<4x8xf32>, memref<2x8xf32>
}

// Bounds given by distinct arith.constant ops of equal value, and num_streams read twice, are
// the same iteration space and the same stream mapping: fused. The in-between ops move above the
// loops (they are left for dce); the fused loop keeps the first loop's values.

// CHECK-LABEL: func.func @equal_constants(
// CHECK:         %buf1 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %c4b = arith.constant 4 : index
// CHECK-NEXT:    %n2 = hir.num_streams
// CHECK-NEXT:    %buf2 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.set
// CHECK:           %a2 = hir.alias_select %buf1[%i] axis 0
// CHECK:           fusion.relu
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @equal_constants(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
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
  %c4b = arith.constant 4 : index
  %n2 = hir.num_streams
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %j = %c0 to %c4b step %c1 streams(%s2) of %n2 from %main {
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf2 : memref<4x8xf32>
}
