// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// A launch that is not stream-parallel ends the fusion: it runs on the caller's stream between
// the loops and must see all of the first loops' iterations. The two loops before it fuse; the
// loop after it stays apart (its allocation is not hoisted across the launch either).

// CHECK-LABEL: func.func @launch_between(
// CHECK:         %buf1 = hir.allocate()
// CHECK-NEXT:    %buf2 = hir.allocate()
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK:           fusion.set
// CHECK:           fusion.relu
// CHECK:           hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    %t = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.launch ins(%x = %buf2 : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
// CHECK:         %buf3 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for %l = %c0 to %c4 step %c1 streams(%s3) of %n from %main {
// CHECK:           fusion.neg
// CHECK:         func.return %buf3
func.func @launch_between(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
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
    %a2 = hir.alias_select %buf1[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b2 = hir.alias_select %buf2[%j] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a2 : memref<8xf32, strided<[1], offset: ?>>) outs(%b2 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.relu %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  %t = hir.allocate() : memref<4x8xf32>
  hir.launch ins(%x = %buf2 : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
    %y = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
    hir.yield %y : tensor<4x8xf32>
  }
  %buf3 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %l = %c0 to %c4 step %c1 streams(%s3) of %n from %main {
    %a3 = hir.alias_select %t[%l] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b3 = hir.alias_select %buf3[%l] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a3 : memref<8xf32, strided<[1], offset: ?>>) outs(%b3 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf3 : memref<4x8xf32>
}
