// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics

// One resharding changes one thing (nvFuser: "Expected at most one sharding change"): a set that
// moves to another mesh and also changes its sharded axis is reported; split it into two ops. (A
// sum over the didx axis onto another mesh is an all-reduce and a set: sum_onto_sub_mesh.mlir; a
// gather to another mesh is lowered: tests/lit/passes/resharding/gather_scatter.mlir.)

func.func @move_and_reshard(%x: tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>>) -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 3]>> {
  // expected-error@+1 {{'hir.launch' op more than one sharding change in one op (mesh and sharded axis): split it in two sets}}
  %y = fusion.set %x : tensor<2x2x16xf32, #fusion.parallel<[didx, serial, serial], mesh = [0, 1]>> -> tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x2x16xf32, #fusion.parallel<[serial, didx, serial], mesh = [2, 3]>>
}

