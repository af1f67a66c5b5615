// RUN: hir-opt %s --stream-lowering | filecheck %s

// The stream axis is axis 1 (nvFuser's SingleSetOpNonOutermost): the loop runs over the 8 columns
// and both views select axis 1, strided views (stride 8) of the row-major buffers.

// CHECK-LABEL: func.func @non_outermost(
// CHECK-NOT:     hir.for
// CHECK:         %y = hir.allocate() : memref<4x8xf32>
// CHECK-NEXT:    hir.for [[F:%[a-z0-9_]+]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:      [[FK:%[a-z0-9_]+]] = arith.remui [[F]], %num_streams : index
// CHECK-NEXT:      [[FS:%[a-z0-9_]+]] = hir.stream [[FK]]
// CHECK-NEXT:      hir.set_current_stream [[FS]]
// CHECK-NEXT:      hir.synchronize %main
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.for [[I:%[a-z0-9_]+]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:      [[K:%[a-z0-9_]+]] = arith.remui [[I]], %num_streams : index
// CHECK-NEXT:      [[S:%[a-z0-9_]+]] = hir.stream [[K]]
// CHECK-NEXT:      hir.set_current_stream [[S]]
// CHECK-NEXT:      %x_i = hir.alias_select %x{{\[}}[[I]]] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[8], offset: ?>>
// CHECK-NEXT:      %y_i = hir.alias_select %y{{\[}}[[I]]] axis 1 : memref<4x8xf32> -> memref<4xf32, strided<[8], offset: ?>>
// CHECK-NEXT:      hir.launch ins([[A:%[a-z0-9_]+]] = %x_i : memref<4xf32, strided<[8], offset: ?>>) outs(%y_i : memref<4xf32, strided<[8], offset: ?>>) {
// CHECK-NEXT:        [[R:%[a-z0-9_]+]] = fusion.set [[A]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:        hir.yield [[R]] : tensor<4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.set_current_stream %main
// CHECK-NEXT:      hir.synchronize [[S]]{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : memref<4x8xf32>
func.func @non_outermost(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  %y = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}
