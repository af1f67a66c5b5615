// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// Three stream-parallel ops in a chain (set, relu, neg): the pairs fuse greedily, left to right,
// into one fork loop and one main loop running the three launches in program order.

// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %main = hir.get_current_stream
// CHECK-NEXT:    %n = hir.num_streams
// CHECK-NEXT:    %buf1 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %buf2 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %buf3 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for %f = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %fk = arith.remui %f, %n : index
// CHECK-NEXT:      %fs = hir.stream %fk
// CHECK-NEXT:      hir.set_current_stream %fs
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %k = arith.remui %i, %n : index
// CHECK-NEXT:      %s = hir.stream %k
// CHECK-NEXT:      hir.set_current_stream %s
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
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize %s
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
  %buf2 = hir.allocate() : memref<4x8xf32>
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
  %buf3 = hir.allocate() : memref<4x8xf32>
  hir.for %h = %c0 to %c4 step %c1 {
    %hk = arith.remui %h, %n : index
    %hs = hir.stream %hk
    hir.set_current_stream %hs
    hir.synchronize %main
  }
  hir.for %l = %c0 to %c4 step %c1 {
    %k3 = arith.remui %l, %n : index
    %s3 = hir.stream %k3
    hir.set_current_stream %s3
    %a3 = hir.alias_select %buf2[%l] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    %b3 = hir.alias_select %buf3[%l] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
    hir.launch ins(%x = %a3 : memref<8xf32, strided<[1], offset: ?>>) outs(%b3 : memref<8xf32, strided<[1], offset: ?>>) {
      %y = fusion.neg %x : tensor<8xf32> -> tensor<8xf32>
      hir.yield %y : tensor<8xf32>
    }
    hir.set_current_stream %main
    hir.synchronize %s3
  }
  func.return %buf3 : memref<4x8xf32>
}
