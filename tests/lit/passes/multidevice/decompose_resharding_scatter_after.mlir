// RUN: hir-opt %s -p fusion-decompose-resharding | filecheck %s
// RUN: hir-opt %s -p fusion-decompose-resharding,fusion-decompose-resharding | filecheck %s
// RUN: hir-opt %s --stream-lowering | filecheck %s --check-prefix=LOWERED

// A result sharded along an axis that no operand axis maps to (a softmax, scan or flip along it,
// a reshape that merges it, a slice or concat of it): a device's shard of the result reads the
// whole axis. The op computes the replicated result from gathered operands, and a fusion.set
// after it keeps each device's shard (a scatter, no communication). A second run changes nothing.

// CHECK-LABEL: func.func @softmax_along_didx(
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = fusion.set %x : {{.*}} -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = fusion.softmax %[[G]] dim = 0 : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = fusion.set %[[W]] : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
// CHECK-NEXT:    func.return %[[Y]]
// LOWERED-LABEL: func.func @softmax_along_didx(
// LOWERED:         hir.allgather
// LOWERED:         fusion.softmax {{.*}} : tensor<4x8xf32> -> tensor<4x8xf32>
// LOWERED:         hir.alias_chunk
func.func @softmax_along_didx(%x: tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.softmax %x dim = 0 : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// CHECK-LABEL: func.func @cumsum_along_didx(
// CHECK-NEXT:    fusion.set %x
// CHECK-NEXT:    fusion.cumsum {{.*}} -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.set {{.*}} -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
func.func @cumsum_along_didx(%x: tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.cumsum %x dim = 0 : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// A reshape that merges the sharded axis into a sharded one: the two cut the elements differently.
// CHECK-LABEL: func.func @reshape_merging_didx(
// CHECK-NEXT:    fusion.set %x
// CHECK-NEXT:    fusion.reshape {{.*}} -> tensor<24xf32, #fusion.parallel<[serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.set {{.*}} -> tensor<24xf32, #fusion.parallel<[didx], mesh = [0, 1]>>
func.func @reshape_merging_didx(%x: tensor<4x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<24xf32, #fusion.parallel<[didx], mesh = [0, 1]>> {
  %y = fusion.reshape %x : tensor<4x6xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<24xf32, #fusion.parallel<[didx], mesh = [0, 1]>>
  func.return %y : tensor<24xf32, #fusion.parallel<[didx], mesh = [0, 1]>>
}

// A replicated operand: nothing to gather, only the scatter after the op.
// CHECK-LABEL: func.func @flip_of_replicated(
// CHECK-NEXT:    %[[W:[a-z0-9_]+]] = fusion.flip %x dims = [0] : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    fusion.set %[[W]] : {{.*}} -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
func.func @flip_of_replicated(%x: tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.flip %x dims = [0] : tensor<4x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// A broadcast's new axis holds the same values at every index: each device computes its shard.
// CHECK-LABEL: func.func @broadcast_into_didx(
// CHECK-NEXT:    %[[Y:[a-z0-9_]+]] = fusion.broadcast %x dims = [0] : {{.*}} -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
// CHECK-NEXT:    func.return %[[Y]]
func.func @broadcast_into_didx(%x: tensor<8xf32>) -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  %y = fusion.broadcast %x dims = [0] : tensor<8xf32> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
