// RUN: hir-opt %s --stream-lowering | filecheck %s

// A matmul streamed on N (nvFuser's Matmul_N): result axis 1 maps to axis 1 of %b only, so %a is
// passed whole and each iteration is a matrix-vector product with one (strided) column of %b,
// written into one (strided) column of %c.

// CHECK-LABEL: func.func @matmul_n(
// CHECK-NOT:     hir.for
// CHECK:         %c = hir.allocate() : memref<8x2xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c2 step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %b_i = hir.alias_select %b{{\[}}[[I]]] axis 1 : memref<4x2xf32> -> memref<4xf32, strided<[2], offset: ?>>
// CHECK-NEXT:      %c_i = hir.alias_select %c{{\[}}[[I]]] axis 1 : memref<8x2xf32> -> memref<8xf32, strided<[2], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %a, [[B:%[a-z0-9_]+]] = %b_i : memref<8x4xf32>, memref<4xf32, strided<[2], offset: ?>>) outs(%c_i : memref<8xf32, strided<[2], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.matmul [[A]], [[B]] : tensor<8x4xf32>, tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c : memref<8x2xf32>
func.func @matmul_n(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>) -> tensor<8x2xf32, #fusion.parallel<[serial, stream]>> {
  %c = fusion.matmul %a, %b : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32, #fusion.parallel<[serial, stream]>>
  func.return %c : tensor<8x2xf32, #fusion.parallel<[serial, stream]>>
}
