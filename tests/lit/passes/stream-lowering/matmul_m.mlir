// RUN: hir-opt %s --stream-lowering | filecheck %s

// A matmul streamed on M (nvFuser's Matmul_M): result axis 0 maps to axis 0 of %a only, so each
// iteration multiplies one row of %a (a vector) by the whole weight %b.

// CHECK-LABEL: func.func @matmul_m(
// CHECK-NOT:     hir.for
// CHECK:         %c = hir.allocate() : memref<8x2xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c8 step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %a_i = hir.alias_select %a{{\[}}[[I]]] axis 0 : memref<8x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
// CHECK-NOT:       %b_i
// CHECK-NEXT:      %c_i = hir.alias_select %c{{\[}}[[I]]] axis 0 : memref<8x2xf32> -> memref<2xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %a_i, [[B:%[a-z0-9_]+]] = %b : memref<4xf32, strided<[1], offset: ?>>, memref<4x2xf32>) outs(%c_i : memref<2xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.matmul [[A]], [[B]] : tensor<4xf32>, tensor<4x2xf32> -> tensor<2xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<2xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c : memref<8x2xf32>
func.func @matmul_m(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>) -> tensor<8x2xf32, #fusion.parallel<[stream, serial]>> {
  %c = fusion.matmul %a, %b : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32, #fusion.parallel<[stream, serial]>>
  func.return %c : tensor<8x2xf32, #fusion.parallel<[stream, serial]>>
}
