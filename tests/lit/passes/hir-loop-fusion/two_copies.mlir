// RUN: hir-opt %s -p hir-loop-fusion | filecheck %s

// Two stream-parallel copies, each with its own hir.stream_for: the second loop reads slice i of
// %buf1, which the first wrote just before in iteration i on the same stream. They merge into one
// loop running both launches per iteration; %buf2's allocation moves above it.

// CHECK-LABEL: func.func @two_copies(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %main = hir.get_current_stream
// CHECK-NEXT:    %n = hir.num_streams
// CHECK-NEXT:    %buf1 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    %buf2 = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for %i = %c0 to %c4 step %c1 streams(%s) of %n from %main {
// CHECK-NEXT:      %a = hir.alias_select %arg0[%i] axis 0
// CHECK-NEXT:      %b = hir.alias_select %buf1[%i] axis 0
// CHECK-NEXT:      hir.launch ins(%x = %a : {{.*}}) outs(%b : {{.*}}) {
// CHECK-NEXT:        %y = fusion.set %x
// CHECK-NEXT:        hir.yield %y
// CHECK-NEXT:      }
// CHECK-NEXT:      %a2 = hir.alias_select %buf1[%i] axis 0
// CHECK-NEXT:      %b2 = hir.alias_select %buf2[%i] axis 0
// CHECK-NEXT:      hir.launch ins(%x = %a2 : {{.*}}) outs(%b2 : {{.*}}) {
// CHECK-NEXT:        %y = fusion.relu %x
// CHECK-NEXT:        hir.yield %y
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %buf2 : memref<4x8xf32>
// CHECK-NEXT:  }
func.func @two_copies(%arg0: memref<4x8xf32>) -> memref<4x8xf32> {
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
  func.return %buf2 : memref<4x8xf32>
}
