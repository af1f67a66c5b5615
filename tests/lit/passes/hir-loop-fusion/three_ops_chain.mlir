// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// Three stream-parallel ops in a chain (set, relu, neg): the loops fuse greedily, left to right,
// into one loop running the three launches in program order.

// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %main = hir.get_current_stream
// CHECK-NEXT:    %n = hir.num_streams
// CHECK-NEXT:    %buf1 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %buf2 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %buf3 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK-NEXT:      %a = hir.alias_select %arg0[%i] axis 0
// CHECK-NEXT:      %b = hir.alias_select %buf1[%i] axis 0
// CHECK-NEXT:      hir.launch ins(%x = %a : {{.*}}) outs(%b : {{.*}}) {
// CHECK-NEXT:        fusion.set
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %a2 = hir.alias_select %buf1[%i] axis 0
// CHECK-NEXT:      %b2 = hir.alias_select %buf2[%i] axis 0
// CHECK-NEXT:      hir.launch ins(%x = %a2 : {{.*}}) outs(%b2 : {{.*}}) {
// CHECK-NEXT:        fusion.relu
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %a3 = hir.alias_select %buf2[%i] axis 0
// CHECK-NEXT:      %b3 = hir.alias_select %buf3[%i] axis 0
// CHECK-NEXT:      hir.launch ins(%x = %a3 : {{.*}}) outs(%b3 : {{.*}}) {
// CHECK-NEXT:        fusion.neg
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %buf3 : memref<4x8xf32>
// CHECK-NEXT:  }
func.func @chain(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
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
  %buf3 = hir.allocate() : memref<4x8xf32>
  hir.stream_for %l = %c0 to %c4 step %c1 streams(%s3) of %n from %main {
    %a3 = hir.alias_select %buf2[%l] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b3 = hir.alias_select %buf3[%l] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a3 : memref<8xf32, strided<[1], offset: ?>>) outs(%b3 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
  }
  func.return %buf3 : memref<4x8xf32>
}
