// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// The first loop writes row i of %buf1, the second reads column i: iteration i of the second
// needs every row, so the loops stay apart.

// CHECK-LABEL: func.func @rows_then_columns(
// CHECK:         hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:         %buf2 = hir.allocate() : memref<4x4xf32>
// CHECK-NEXT:    hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
func.func @rows_then_columns(%arg0: memref<4x4xf32>) -> memref<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<4x4xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_select %arg0[%i] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
    %b = hir.alias_select %buf1[%i] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a : memref<4xf32, strided<[1], offset: ?>>) outs(%b : memref<4xf32, strided<[1], offset: ?>>) {
      %y = fusion.set %x : tensor<4xf32> -> tensor<4xf32>
      hir.yield %y : tensor<4xf32>
    }
  }
  %buf2 = hir.allocate() : memref<4x4xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %buf1[%j] axis 1 : memref<4x4xf32> -> memref<4xf32, strided<[4], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 1 : memref<4x4xf32> -> memref<4xf32, strided<[4], offset: ?>>
    hir.launch ins(%x = %a2 : memref<4xf32, strided<[4], offset: ?>>) outs(%b2 : memref<4xf32, strided<[4], offset: ?>>) {
      %y = fusion.relu %x : tensor<4xf32> -> tensor<4xf32>
      hir.yield %y : tensor<4xf32>
    }
  }
  func.return %buf2 : memref<4x4xf32>
}

// Both loops iterate axis 1 of %buf1 (a buffer not on axis 0 is fine as long as it is the same
// axis everywhere): fused.

// CHECK-LABEL: func.func @columns_then_columns(
// CHECK:         %buf2 = hir.allocate() : memref<4x4xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.set
// CHECK:           %a2 = hir.alias_select %buf1[%i] axis 1
// CHECK:           fusion.relu
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @columns_then_columns(%arg0: memref<4x4xf32>) -> memref<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %main = hir.get_current_stream
  %n = hir.num_streams
  %buf1 = hir.allocate() : memref<4x4xf32>
  hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
    %a = hir.alias_select %arg0[%i] axis 1 : memref<4x4xf32> -> memref<4xf32, strided<[4], offset: ?>>
    %b = hir.alias_select %buf1[%i] axis 1 : memref<4x4xf32> -> memref<4xf32, strided<[4], offset: ?>>
    hir.launch ins(%x = %a : memref<4xf32, strided<[4], offset: ?>>) outs(%b : memref<4xf32, strided<[4], offset: ?>>) {
      %y = fusion.set %x : tensor<4xf32> -> tensor<4xf32>
      hir.yield %y : tensor<4xf32>
    }
  }
  %buf2 = hir.allocate() : memref<4x4xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %a2 = hir.alias_select %buf1[%j] axis 1 : memref<4x4xf32> -> memref<4xf32, strided<[4], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 1 : memref<4x4xf32> -> memref<4xf32, strided<[4], offset: ?>>
    hir.launch ins(%x = %a2 : memref<4xf32, strided<[4], offset: ?>>) outs(%b2 : memref<4xf32, strided<[4], offset: ?>>) {
      %y = fusion.relu %x : tensor<4xf32> -> tensor<4xf32>
      hir.yield %y : tensor<4xf32>
    }
  }
  func.return %buf2 : memref<4x4xf32>
}
