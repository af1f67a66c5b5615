// RUN: hir-opt %s --stream-lowering | filecheck %s

// Uneven shards (5 rows over 2 devices: 3 and 2) moving along their axis to a mesh of the same
// size: position k holds the same rows on both meshes, so device M[k] sends its shard to M'[k],
// equal buffers of dynamic extent (passes/resharding/set_lowering.py, move_shards). Device 1 both
// receives its new shard (3 rows, from device 0) and sends its old one (2 rows, to device 2).
// CHECK-LABEL: func.func @move_5_over_2
// CHECK-SAME:    (%x: memref<?x4xf32> {{.*}}) -> (memref<?x4xf32> {{.*}})
// CHECK:         %me = hir.device_index mesh = [1, 2] outside 0
// CHECK:         %y = hir.allocate(%shard_extent) : memref<?x4xf32>
// CHECK:         %me_1 = hir.device_index mesh = [0, 1, 2] outside 3
// CHECK:         hir.send %x to %{{.*}} mesh = [0, 1] : memref<?x4xf32>
// CHECK:         hir.recv %y from %{{.*}} mesh = [0, 1] : memref<?x4xf32>
// CHECK:         hir.send %x to %{{.*}} mesh = [1, 2] : memref<?x4xf32>
// CHECK:         hir.recv %y from %{{.*}} mesh = [1, 2] : memref<?x4xf32>
// CHECK:         func.return %y : memref<?x4xf32>
func.func @move_5_over_2(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 2]>> {
  %y = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 2]>>
  func.return %y : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 2]>>
}
