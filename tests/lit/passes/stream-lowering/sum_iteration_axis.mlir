// RUN: hir-opt %s --stream-lowering | filecheck %s

// A sum streamed on one of its iteration (kept) axes (nvFuser's Reduction): the reduction's axis
// map skips the reduced dims, so result axis r is operand axis r plus the reduced dims before it.
// Inside the launch the operand lost the sliced axis, and `dims` is renumbered accordingly.

// Sum over dim 2, stream on result axis 0 = operand axis 0: dims [2] becomes [1].
// CHECK-LABEL: func.func @sum_inner(
// CHECK:         %y = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c4 step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 0 : memref<4x8x2xf32> -> memref<8x2xf32, strided<[2, 1], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 0 : memref<4x8xf32> -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %x_i : memref<8x2xf32, strided<[2, 1], offset: ?>>) outs(%y_i : memref<8xf32, strided<[1], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.sum [[A]] dims = [1] : tensor<8x2xf32> -> tensor<8xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y
func.func @sum_inner(%x: tensor<4x8x2xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  %y = fusion.sum %x dims = [2] : tensor<4x8x2xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// Sum over dim 0, stream on result axis 1 = operand axis 2 (a strided view): dims [0] stays [0].
// CHECK-LABEL: func.func @sum_outer(
// CHECK:         %y = hir.allocate() : memref<4x5xf32>
// CHECK-NEXT:    hir.for {{%[a-z0-9_]+}} = %c0 to %c5 step %c1 {
// CHECK-NEXT:      arith.remui
// CHECK-NEXT:      hir.stream
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c5 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 2 : memref<3x4x5xf32> -> memref<3x4xf32, strided<[20, 5], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 1 : memref<4x5xf32> -> memref<4xf32, strided<[5], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %x_i : {{.*}}) outs(%y_i : {{.*}}) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.sum [[A]] dims = [0] : tensor<3x4xf32> -> tensor<4xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<4xf32>
// CHECK-NEXT:      }
func.func @sum_outer(%x: tensor<3x4x5xf32>) -> tensor<4x5xf32, #fusion.parallel<[serial, stream]>> {
  %y = fusion.sum %x dims = [0] : tensor<3x4x5xf32> -> tensor<4x5xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x5xf32, #fusion.parallel<[serial, stream]>>
}
