// RUN: hir-opt %s --stream-lowering | filecheck %s

// A linear with bias streamed on N: result axis 1 maps to axis 0 of the weight and axis 0 of the
// bias, so each iteration takes one row of %w (a 1-D weight), one element of %bias (a scalar,
// rank-0 view) and the whole input %x, and writes one (strided) column of %y.

// CHECK-LABEL: func.func @linear_n(
// CHECK-NOT:     hir.for
// CHECK:         %y = hir.allocate() : memref<8x6xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c6 step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c6 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %w_i = hir.alias_select %w{{\[}}[[I]]] axis 0 : memref<6x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      %bias_i = hir.alias_select %bias{{\[}}[[I]]] axis 0 : memref<6xf32> -> memref<f32, strided<[], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 1 : memref<8x6xf32> -> memref<8xf32, strided<[6], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[X:%[a-z0-9_]+]] = %x, [[W:%[a-z0-9_]+]] = %w_i, [[BIAS:%[a-z0-9_]+]] = %bias_i : memref<8x4xf32>, memref<4xf32, strided<[1], offset: ?>>, memref<f32, strided<[], offset: ?>>) outs(%y_i : memref<8xf32, strided<[6], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.linear [[X]], [[W]], [[BIAS]] : tensor<8x4xf32>, tensor<4xf32>, tensor<f32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : memref<8x6xf32>
func.func @linear_n(%x: tensor<8x4xf32>, %w: tensor<6x4xf32>, %bias: tensor<6xf32>) -> tensor<8x6xf32, #fusion.parallel<[serial, stream]>> {
  %y = fusion.linear %x, %w, %bias : tensor<8x4xf32>, tensor<6x4xf32>, tensor<6xf32> -> tensor<8x6xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<8x6xf32, #fusion.parallel<[serial, stream]>>
}
