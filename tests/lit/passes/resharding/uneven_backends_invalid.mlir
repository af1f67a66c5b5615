// RUN: hir-opt %s --split-input-file -p 'stream-lowering{backend=copy-engine}' --verify-diagnostics
// RUN: hir-opt %s --split-input-file -p 'stream-lowering{backend=ring}' --verify-diagnostics

// The copy-engine and ring backends move blocks of one index per device: a resharding of a didx
// axis whose extent is not the mesh size is reported at the op (the nccl backend pads it).

func.func @allgather_5_over_2(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  // expected-error-re@+1 {{'hir.launch' op backend={{copy-engine|ring}} does not lower a resharding of an uneven didx axis (axis 0 has extent 5 over 2 devices, not one index per device): use backend=nccl, which pads the shards to equal pieces}}
  %y = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<5x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}

// -----

// Even but not one index per device (8 over 4), a partial sum onto it.
func.func @reduce_scatter_onto_8_over_4(%x: tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>) -> tensor<8xf32, #fusion.parallel<[didx], mesh = [0, 1, 2, 3]>> {
  // expected-error-re@+1 {{'hir.launch' op backend={{copy-engine|ring}} does not lower a resharding of an uneven didx axis (axis 0 has extent 8 over 4 devices, not one index per device): use backend=nccl, which pads the shards to equal pieces}}
  %y = fusion.sum %x dims = [0] : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<8xf32, #fusion.parallel<[didx], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<8xf32, #fusion.parallel<[didx], mesh = [0, 1, 2, 3]>>
}
