// RUN: hir-opt %s -p convert-fusion-to-hir | filecheck %s

// convert-fusion-to-hir alone: every stream-parallel unit gets its own allocation and its own
// hir.stream_for, in program order; merging them is hir-loop-fusion's job. The constants,
// num_streams and the caller's stream %main are made once, at the top. The second loop selects
// slice i of %y again (a view of its own).

// CHECK-LABEL: func.func @two_sets(%x: memref<4x8xf32> {fusion.type = tensor<4x8xf32>}) -> (memref<4x8xf32> {fusion.type = tensor<4x8xf32, #fusion.parallel<[stream, serial]>>}) {
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %num_streams = hir.num_streams
// CHECK-NEXT:    %main = hir.get_current_stream
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %y = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 streams({{%[a-z0-9_]+}}) of %num_streams from %main {
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %x_i : {{.*}}) outs(%y_i : {{.*}}) {
// CHECK-NEXT:        fusion.set
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    %z = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.stream_for [[J:%[a-z0-9_]+]] = %c0 to %c4 step %c1 streams({{%[a-z0-9_]+}}) of %num_streams from %main {
// CHECK-NEXT:      [[YJ:%[a-z0-9_]+]] = hir.alias_select %y{{\[}}[[J]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %z_i = hir.alias_select %z{{\[}}[[J]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = [[YJ]] : {{.*}}) outs(%z_i : {{.*}}) {
// CHECK-NEXT:        fusion.set
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %z : memref<4x8xf32>
func.func @two_sets(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %z = fusion.set %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %z : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
