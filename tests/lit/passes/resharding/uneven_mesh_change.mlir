// RUN: hir-opt %s --split-input-file -p fusion-decompose-resharding | filecheck %s
// RUN: hir-opt %s --split-input-file --stream-lowering | filecheck %s --check-prefix=LOWERED

// A set that changes the mesh of a didx axis whose extent is not the mesh size (nvFuser's
// pipelines between meshes of different sizes) becomes the chain the lowering takes:
// the (padded) all-gather on the source mesh, the replicated value moved to the result's mesh (a
// broadcast), the local scatter there (refused before: "split it in two sets" and "go through a
// replicated value"; passes/decompose_resharding.py).

// CHECK-LABEL: func.func @move_shards
// CHECK-NEXT:    %x_gathered = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %x_moved = fusion.set %x_gathered : tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [1, 2, 3]>>
// CHECK-NEXT:    %y = fusion.set %x_moved : tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [1, 2, 3]>> -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 2, 3]>>
// LOWERED-LABEL: func.func @move_shards
// LOWERED:         hir.allgather %padded into %gathered axis 0 mesh = [0, 1]
// LOWERED:         hir.broadcast %x_gathered into %x_moved root %{{.*}} mesh = [0, 1, 2, 3]
// LOWERED:         hir.alias_chunk %x_moved[%{{.*}}] axis 0 chunks 3
func.func @move_shards(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 2, 3]>> {
  %y = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 2, 3]>>
  func.return %y : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [1, 2, 3]>>
}

// -----

// A gather whose result lives on another mesh: the all-gather, then the broadcast.
// CHECK-LABEL: func.func @gather_to_other_mesh
// CHECK-NEXT:    %x_gathered = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %y = fusion.set %x_gathered : tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>
// CHECK-NEXT:    func.return %y
func.func @gather_to_other_mesh(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>> {
  %y = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>
  func.return %y : tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [2, 3]>>
}

// -----

// Left as they are: uneven shards moving to a mesh of the same size (send / receive pairs), a
// gather onto a sub-mesh, and an even move.
// CHECK-LABEL: func.func @lowered_in_one_set
// CHECK-NEXT:    %a = fusion.set %x : {{.*}} -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
// CHECK-NEXT:    %b = fusion.set %x : {{.*}} -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
// CHECK-NEXT:    %c = fusion.set %e : {{.*}} -> tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [3, 2]>>
// CHECK-NEXT:    func.return
func.func @lowered_in_one_set(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %e: tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> (tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>, tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [1]>>, tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [3, 2]>>) {
  %a = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
  %b = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [1]>>
  %c = fusion.set %e : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [3, 2]>>
  func.return %a, %b, %c : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>, tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [1]>>, tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [3, 2]>>
}
