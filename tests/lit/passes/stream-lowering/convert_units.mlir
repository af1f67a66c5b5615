// RUN: hir-opt %s -p convert-fusion-to-hir | filecheck %s

// convert-fusion-to-hir alone on bare ops and segments (no fusion-segment first):
// - a unit whose results are not stream-parallel is one launch on whole buffers, and a function
//   without stream-parallel units gets no loops, constants or streams at all;
// - a fusion.segment is one launch whose region holds the segment's ops.

// CHECK-LABEL: func.func @no_stream(%x: memref<4x8xf32> {fusion.type = tensor<4x8xf32>}) -> (memref<4x8xf32> {fusion.type = tensor<4x8xf32>}) {
// CHECK-NEXT:    %e = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.launch ins([[X:%[a-z0-9_]+]] = %x : memref<4x8xf32>) outs(%e : memref<4x8xf32>) {
// CHECK-NEXT:      [[E:%[a-z0-9_]+]] = fusion.exp [[X]] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      hir.yield [[E]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %n = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.launch ins([[E2:%[a-z0-9_]+]] = %e : memref<4x8xf32>) outs(%n : memref<4x8xf32>) {
// CHECK-NEXT:      [[N:%[a-z0-9_]+]] = fusion.neg [[E2]] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      hir.yield [[N]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %n : memref<4x8xf32>
// CHECK-NEXT:  }
func.func @no_stream(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %n : tensor<4x8xf32>
}

// A segment that is not stream-parallel and one that is, reading the first's result sliced.

// CHECK-LABEL: func.func @segments(
// CHECK:         %t = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.launch ins(%a = %x, %b = %y : memref<4x8xf32>, memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
// CHECK-NEXT:      %m = fusion.maximum %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      [[T:%[a-z0-9_]+]] = fusion.tanh %m : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      hir.yield [[T]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 streams({{%[a-z0-9_]+}}) of %num_streams from %main {
// CHECK-NEXT:      %t_i = hir.alias_select %t{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %r_i = hir.alias_select %r{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins(%c = %t_i : memref<8xf32, strided<[1], offset: ?>>) outs(%r_i : memref<8xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        %d = fusion.abs %c : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.relu %d : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r : memref<4x8xf32>
func.func @segments(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %t = fusion.segment ins(%a = %x, %b = %y : tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    %m = fusion.maximum %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %t = fusion.tanh %m : tensor<4x8xf32> -> tensor<4x8xf32>
    fusion.yield %t : tensor<4x8xf32>
  }
  %r = fusion.segment ins(%c = %t : tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
    %d = fusion.abs %c : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    %r = fusion.relu %d : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    fusion.yield %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  }
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
