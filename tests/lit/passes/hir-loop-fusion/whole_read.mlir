// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// The second loop reads all of %buf1 in every iteration (a reduction over the stream axis):
// iteration i needs every iteration of the first loop, so the loops stay apart.

// CHECK-LABEL: func.func @whole_read_of_written(
// CHECK:         hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.set
// CHECK:         %buf2 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
// CHECK:           fusion.sum
func.func @whole_read_of_written(%arg0: memref<4x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>) {
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
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %buf1 : memref<4x8xf32>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf1, %buf2 : memref<4x8xf32>, memref<4x8xf32>
}

// A whole read of a buffer neither loop writes (the function argument) is no hazard: fused.

// CHECK-LABEL: func.func @whole_read_of_input(
// CHECK:         %buf2 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.set
// CHECK:           hir.launch ins(%x = %arg0 : memref<4x8xf32>) outs(%b2 : {{.*}})
// CHECK:           fusion.sum
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @whole_read_of_input(%arg0: memref<4x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>) {
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
  %buf2 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %j = %c0 to %c4 step %c1 streams(%s2) of %n from %main {
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %arg0 : memref<4x8xf32>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf1, %buf2 : memref<4x8xf32>, memref<4x8xf32>
}
