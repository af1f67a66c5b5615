// RUN: hir-opt %s --stream-lowering | filecheck %s

// A bare op reads each operand position through its own axis-map entry: `matmul %x, %x` streamed
// on M reads row i of %x as the left operand and the whole %x as the right one.

// CHECK-LABEL: func.func @matmul_square(
// CHECK:       %x_i = hir.alias_select %x[%{{.*}}] axis 0 : memref<4x4xf32> -> memref<4xf32, strided<[1], offset: ?>>
// CHECK:       hir.launch ins(%[[ROW:.*]] = %x_i, %[[WHOLE:.*]] = %x : memref<4xf32, strided<[1], offset: ?>>, memref<4x4xf32>)
// CHECK-NEXT:    fusion.matmul %[[ROW]], %[[WHOLE]] : tensor<4xf32>, tensor<4x4xf32> -> tensor<4xf32>
func.func @matmul_square(%x: tensor<4x4xf32>) -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>> {
  %c = fusion.matmul %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
  func.return %c : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
}
