// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics

// What passes/resharding still refuses, with the reason, at the op the user wrote.

func.func @shards_to_other_mesh(%x: tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>> {
  // expected-error@+1 {{'hir.launch' op cannot lower a copy of shards from mesh [0, 1] to [2, 3]: moving shards between meshes (send/recv pairs) is not supported}}
  %y = fusion.set %x : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x16xf32, #fusion.parallel<[didx, serial], mesh = [2, 3]>>
}
