// RUN: hir-opt %s --stream-lowering | filecheck %s

// Three sets where only the first and the last are stream-parallel (nvFuser's
// ThreeSetOpsWithDisjointsForLoops): the middle one is a top-level launch on whole buffers that
// needs all of %y, so it ends the first pair of loops, and a second pair follows it. Each pair
// allocates its output right before its fork loop.

// CHECK-LABEL: func.func @three_sets(
// CHECK-NOT:     hir.for
// CHECK:         %y = hir.allocate() : memref<4x8xf32>
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
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %x_i : {{.*}}) outs(%y_i : {{.*}}) {
// CHECK-NEXT:        fusion.set
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    %z = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.launch ins([[A:%[a-z0-9_]+]] = %y : memref<4x8xf32>) outs(%z : memref<4x8xf32>) {
// CHECK-NEXT:      [[R:%[a-z0-9_]+]] = fusion.set [[A]] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:      hir.yield [[R]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %w = hir.allocate() : memref<4x8xf32>
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
// CHECK-NEXT:      %z_i = hir.alias_select %z{{\[}}[[J]]] axis 0
// CHECK-NEXT:      %w_i = hir.alias_select %w{{\[}}[[J]]] axis 0
// CHECK-NEXT:      hir.launch ins({{%[a-z0-9_]+}} = %z_i : {{.*}}) outs(%w_i : {{.*}}) {
// CHECK-NEXT:        fusion.set
// CHECK-NEXT:        hir.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S2]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %w : memref<4x8xf32>
func.func @three_sets(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %z = fusion.set %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<4x8xf32>
  %w = fusion.set %z : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %w : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
