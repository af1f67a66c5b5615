// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics | filecheck %s

// A sum over the didx axis whose replicated result lives on a subset of the source's devices
// (nvFuser's LowerCollectiveTest.Reduce: the sum onto one device) is the all-reduce over the
// source mesh, which every device of the result's mesh then holds (refused before as "a
// reduction and a mesh change"; passes/lower_communication.py).
// CHECK-LABEL: func.func @sum_onto_one_device
// CHECK:         hir.launch ins(%x_1 = %x : memref<1x4x6xf32>) outs(%y : memref<4x6xf32>)
// CHECK:           fusion.sum %x_1 dims = [0] : tensor<1x4x6xf32> -> tensor<4x6xf32>
// CHECK:         %0 = hir.allreduce sum %y into %y mesh = [2, 0, 1] : memref<4x6xf32>, memref<4x6xf32>
// CHECK-NEXT:    hir.wait %0
func.func @sum_onto_one_device(%x: tensor<3x4x6xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>>) -> tensor<4x6xf32, #fusion.parallel<[serial, serial], mesh = [1]>> {
  %y = fusion.sum %x dims = [0] : tensor<3x4x6xf32, #fusion.parallel<[didx, serial, serial], mesh = [2, 0, 1]>> -> tensor<4x6xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
  func.return %y : tensor<4x6xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
}

// -----

// Per chunk of a stream loop, onto two of the three devices.
// CHECK-LABEL: func.func @sum_onto_two_devices_per_chunk
// CHECK:         hir.for
// CHECK:           hir.allreduce sum %{{.*}} into %{{.*}} mesh = [0, 1, 2] : memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>
func.func @sum_onto_two_devices_per_chunk(%x: tensor<3x3x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2]>>) -> tensor<3x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 0]>> {
  %y = fusion.sum %x dims = [1] : tensor<3x3x4xf32, #fusion.parallel<[serial, didx, serial], mesh = [0, 1, 2]>> -> tensor<3x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 0]>>
  func.return %y : tensor<3x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 0]>>
}

// -----

// A sharded result on another set of devices: fusion-decompose-resharding makes it the sum
// into a value replicated on the source mesh (the all-reduce), then the set that gives each device
// of the result's mesh its shard (here a local slice on a sub-mesh).
// CHECK-LABEL: func.func @reduce_scatter_onto_sub_mesh
// CHECK:         hir.allreduce sum %y_reduced into %y_reduced mesh = [0, 1, 2]
// CHECK:         hir.alias_chunk %y_reduced[%{{.*}}] axis 0 chunks 2
func.func @reduce_scatter_onto_sub_mesh(%x: tensor<3x2x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2]>>) -> tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.sum %x dims = [0] : tensor<3x2x4xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1, 2]>> -> tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// -----

// Onto devices the source lacks: the all-reduce over the source mesh, then the broadcast of the
// sum from its first device over both meshes.
// CHECK-LABEL: func.func @sum_onto_super_mesh
// CHECK:         %0 = hir.allreduce sum %y into %y mesh = [0, 1] : memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    hir.wait %0
// CHECK-NEXT:    %root = arith.constant 0 : index
// CHECK-NEXT:    %1 = hir.broadcast %y into %y root %root mesh = [0, 1, 2] : memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    hir.wait %1
func.func @sum_onto_super_mesh(%x: tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1, 2]>> {
  %y = fusion.sum %x dims = [0] : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1, 2]>>
  func.return %y : tensor<4xf32, #fusion.parallel<[serial], mesh = [0, 1, 2]>>
}
