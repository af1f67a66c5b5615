// RUN: hir-opt %s --stream-lowering | filecheck %s

// An add streamed on axis 0 (nvFuser's SingleBinaryOp): the elementwise axis map sends the stream
// axis to axis 0 of both inputs, so both are sliced although neither is stream-parallel itself.

// CHECK-LABEL: func.func @binary(
// CHECK-NOT:     hir.for
// CHECK:         %c = hir.allocate() : memref<4x4xf32>
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
// CHECK-NEXT:      %a_i = hir.alias_select %a{{\[}}[[I]]] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %b_i = hir.alias_select %b{{\[}}[[I]]] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_select %c{{\[}}[[I]]] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %a_i, [[B:%[a-z0-9_]+]] = %b_i : {{.*}}) outs(%c_i : memref<4xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.add [[A]], [[B]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c : memref<4x4xf32>
func.func @binary(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>> {
  %c = fusion.add %a, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  func.return %c : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
}
