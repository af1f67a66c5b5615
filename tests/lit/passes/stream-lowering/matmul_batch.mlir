// RUN: hir-opt %s --stream-lowering | filecheck %s

// A batched matmul streamed on its batch axis (nvFuser's BatchedMatmul): the batch axis maps to
// axis 0 of %a; the 2-D weight has no batch axis and is passed whole.

// CHECK-LABEL: func.func @batched(
// CHECK-NOT:     hir.for
// CHECK:         %c = hir.allocate() : memref<16x8x2xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c16 step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c16 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %a_i = hir.alias_select %a{{\[}}[[I]]] axis 0 : memref<16x8x4xf32> -> memref<8x4xf32, strided<[4, 1], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_select %c{{\[}}[[I]]] axis 0 : memref<16x8x2xf32> -> memref<8x2xf32, strided<[2, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %a_i, [[B:%[a-z0-9_]+]] = %b : memref<8x4xf32, strided<[4, 1], offset: ?>>, memref<4x2xf32>) outs(%c_i : memref<8x2xf32, strided<[2, 1], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.matmul [[A]], [[B]] : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<8x2xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c : memref<16x8x2xf32>
func.func @batched(%a: tensor<16x8x4xf32>, %b: tensor<4x2xf32>) -> tensor<16x8x2xf32, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<16x8x4xf32>, tensor<4x2xf32> -> tensor<16x8x2xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<16x8x2xf32, #fusion.parallel<[stream, serial, serial]>>
}

// A broadcast batch operand (extent 1 under the batch extent 6): the batch axis map still lists
// it as a source, and every iteration reads its index 0 (a constant, not the loop index).

// CHECK-LABEL: func.func @broadcast_batch(
// CHECK:           hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c6 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %a_i = hir.alias_select %a{{\[}}[[I]]] axis 0 : memref<6x8x4xf32> -> memref<8x4xf32, strided<[4, 1], offset: ?>>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%c0] axis 0 : memref<1x4x2xf32> -> memref<4x2xf32, strided<[2, 1], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_select %c{{\[}}[[I]]] axis 0 : memref<6x8x2xf32> -> memref<8x2xf32, strided<[2, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %a_i, [[B:%[a-z0-9_]+]] = %b_i : {{.*}}) outs(%c_i : {{.*}}) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.matmul [[A]], [[B]] : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
func.func @broadcast_batch(%a: tensor<6x8x4xf32>, %b: tensor<1x4x2xf32>) -> tensor<6x8x2xf32, #fusion.parallel<[stream, serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<6x8x4xf32>, tensor<1x4x2xf32> -> tensor<6x8x2xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %c : tensor<6x8x2xf32, #fusion.parallel<[stream, serial, serial]>>
}

// With stream(3) chunks the broadcast operand keeps its extent-1 axis: it is passed whole, and
// the chunk of the batch axis broadcasts against it inside the launch.

// CHECK-LABEL: func.func @broadcast_batch_chunks(
// CHECK:           hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %a_i = hir.alias_chunk %a{{\[}}[[I]]] axis 0 chunks 3 : memref<6x8x4xf32> -> memref<2x8x4xf32, strided<[32, 4, 1], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_chunk %c{{\[}}[[I]]] axis 0 chunks 3 : memref<6x8x2xf32> -> memref<2x8x2xf32, strided<[16, 2, 1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %a_i, [[B:%[a-z0-9_]+]] = %b : {{.*}}, memref<1x4x2xf32>) outs(%c_i : {{.*}}) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.matmul [[A]], [[B]] : tensor<2x8x4xf32>, tensor<1x4x2xf32> -> tensor<2x8x2xf32>
func.func @broadcast_batch_chunks(%a: tensor<6x8x4xf32>, %b: tensor<1x4x2xf32>) -> tensor<6x8x2xf32, #fusion.parallel<[stream(3), serial, serial]>> {
  %c = fusion.matmul %a, %b : tensor<6x8x4xf32>, tensor<1x4x2xf32> -> tensor<6x8x2xf32, #fusion.parallel<[stream(3), serial, serial]>>
  func.return %c : tensor<6x8x2xf32, #fusion.parallel<[stream(3), serial, serial]>>
}
