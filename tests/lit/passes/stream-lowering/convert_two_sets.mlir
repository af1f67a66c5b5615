// RUN: hir-opt %s -p convert-fusion-to-hir | filecheck %s

// convert-fusion-to-hir alone: every stream-parallel unit gets its own allocation and its own
// (fork, main) pair of loops, in program order; merging them is hir-loop-fusion's job. The
// constants, num_streams and the caller's stream %main are made once, at the top. The second main
// loop selects slice i of %y again (a view of its own).

// CHECK-LABEL: func.func @two_sets(%x: memref<4x8xf32> {fusion.type = tensor<4x8xf32>}) -> (memref<4x8xf32> {fusion.type = tensor<4x8xf32, #fusion.parallel<[stream, serial]>>}) {
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %num_streams = hir.num_streams
// CHECK-NEXT:    %main = hir.get_current_stream
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %y = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for [[F:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[FK:%[a-z0-9_]+]] = arith.remui [[F]], %num_streams : index
// CHECK-NEXT:      [[FS:%[a-z0-9_]+]] = hir.stream [[FK]]
// CHECK-NEXT:      hir.set_current_stream [[FS]]
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %x_i : {{.*}}) outs(%y_i : {{.*}}) {
// CHECK-NEXT:        fusion.set
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    %z = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for [[F2:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[FK2:%[a-z0-9_]+]] = arith.remui [[F2]], %num_streams : index
// CHECK-NEXT:      [[FS2:%[a-z0-9_]+]] = hir.stream [[FK2]]
// CHECK-NEXT:      hir.set_current_stream [[FS2]]
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[J:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[K2:%[a-z0-9_]+]] = arith.remui [[J]], %num_streams : index
// CHECK-NEXT:      [[S2:%[a-z0-9_]+]] = hir.stream [[K2]]
// CHECK-NEXT:      hir.set_current_stream [[S2]]
// CHECK-NEXT:      [[YJ:%[a-z0-9_]+]] = hir.alias_select %y{{\[}}[[J]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %z_i = hir.alias_select %z{{\[}}[[J]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = [[YJ]] : {{.*}}) outs(%z_i : {{.*}}) {
// CHECK-NEXT:        fusion.set
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S2]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %z : memref<4x8xf32>
func.func @two_sets(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %z = fusion.set %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %z : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
