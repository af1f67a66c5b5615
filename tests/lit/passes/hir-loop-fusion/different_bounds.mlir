// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// The loops iterate different ranges (4 rows, then 2 rows of another buffer): not the same
// iteration space, so they stay apart even though they share no buffer.

// CHECK-LABEL: func.func @different_bounds(
// CHECK:         hir.for %f = %c0 to %c4 step %c1 {
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK:         %buf2 = hir.allocate() : memref<2x8xf32>
// CHECK-NEXT:    hir.for %g = %c0 to %c2 step %c1 {
// CHECK:         hir.for %j = %c0 to %c2 step %c1 {
func.func @different_bounds(%arg0: memref<4x8xf32>, %arg1: memref<2x8xf32>) -> (memref<4x8xf32>, memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
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
  %buf2 = hir.allocate() : memref<2x8xf32>
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
    %a2 = hir.alias_select %arg1[%j] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<2x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s2
  }
  func.return %buf1, %buf2 : memref<4x8xf32>, memref<2x8xf32>
}

// Bounds given by distinct arith.constant ops of equal value, and num_streams read twice, are
// the same iteration space and the same stream mapping: fused. The in-between ops move above the
// loops (they are left for dce); the fused loop keeps the first pair's values.

// CHECK-LABEL: func.func @equal_constants(
// CHECK:         %buf1 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %c4b = arith.constant 4 : index
// CHECK-NEXT:    %n2 = hir.num_streams
// CHECK-NEXT:    %buf2 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for %f = %c0 to %c4 step %c1 {
// CHECK:         hir.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k = arith.remui %i, %n : index
// CHECK:           fusion.set
// CHECK:           %a2 = hir.alias_select %buf1[%i] axis 0
// CHECK:           fusion.relu
// CHECK:           hir.synchronize %s
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @equal_constants(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
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
  %c4b = arith.constant 4 : index
  %n2 = hir.num_streams
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.for %g = %c0 to %c4b step %c1 {
    %gk = arith.remui %g, %n2 : index
    %gs = hir.stream %gk
    hir.set_current_stream %gs
    hir.synchronize %main
  }
  hir.for %j = %c0 to %c4b step %c1 {
    %k2 = arith.remui %j, %n2 : index
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
