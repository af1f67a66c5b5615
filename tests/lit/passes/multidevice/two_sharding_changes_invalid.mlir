// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics
// RUN: hir-opt %s --split-input-file -p fusion-decompose-resharding 2>&1 | filecheck %s

// One resharding changes one thing (nvFuser: "Expected at most one sharding change"). A set that
// moves to another mesh and also changes its sharded axis is split by fusion-decompose-resharding
// into the all-gather on the source mesh, the move of the replicated value and the scatter on the
// result's mesh (refused before: "split it in two sets"); a loop over the shards that also moves to
// another mesh is reported. (A sum over the didx axis onto another mesh is an all-reduce and a
// set: sum_onto_sub_mesh.mlir; a gather to another mesh is lowered:
// tests/lit/passes/resharding/gather_scatter.mlir.)

// CHECK-LABEL: func.func @move_and_reshard
// CHECK-NEXT:    %x_gathered = fusion.set %x : {{.*}} -> tensor<2x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [0, 1]>>
// CHECK-NEXT:    %x_moved = fusion.set %x_gathered : {{.*}} -> tensor<2x2x16xf32, #fusion.parallel<[serial, serial, serial], mesh = [2, 3]>>
// CHECK-NEXT:    %y = fusion.set %x_moved : {{.*}} -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 3]>>
func.func @move_and_reshard(%x: tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 3]>> {
  %y = fusion.set %x : tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 3]>>
}

// -----

func.func @loop_and_move(%x: tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>> {
  // expected-error@+1 {{'fusion.set' op more than one sharding change in one op (a loop over the shards of didx axis 0 and a move from mesh [0, 1] to [2, 3]): split it in two sets}}
  %y = fusion.set %x : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>>
}
