// RUN: hir-opt %s --stream-lowering | filecheck %s

// A sum over the didx axis whose result lists the same devices in another order is no mesh
// change: the sum adds every device's partial whatever its source position, and the result's
// mesh order places the reduce-scatter's pieces (refused before as "a reduction and a mesh
// change"; passes/lower_communication.py).
// CHECK-LABEL: func.func @sum_onto_reordered_mesh
// CHECK:         %0 = hir.allreduce sum %r into %r mesh = [1, 0] : memref<6x4xf32>, memref<6x4xf32>
// CHECK:         %1 = hir.reduce_scatter sum %partial into %s axis 0 mesh = [1, 0] : memref<6x4xf32, strided<[4, 1], offset: ?>>, memref<3x4xf32>
func.func @sum_onto_reordered_mesh(%x: tensor<2x6x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> (tensor<6x4xf32, #fusion.parallel<[serial, serial], mesh = [1, 0]>>, tensor<6x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>>) {
  %r = fusion.sum %x dims = [0] : tensor<2x6x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<6x4xf32, #fusion.parallel<[serial, serial], mesh = [1, 0]>>
  %s = fusion.sum %x dims = [0] : tensor<2x6x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<6x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>>
  func.return %r, %s : tensor<6x4xf32, #fusion.parallel<[serial, serial], mesh = [1, 0]>>, tensor<6x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 0]>>
}
