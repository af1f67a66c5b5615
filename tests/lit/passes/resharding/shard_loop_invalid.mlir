// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics

// Loops over the devices' shards that stay refused, at the op the user wrote.

// The loop over the shards cannot also move the data to another mesh. The set was inserted by
// fusion-decompose-resharding: the error names the op the user wrote and its operand.
func.func @shard_loop_and_mesh_change(%x: tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>> {
  // expected-error@+1 {{'fusion.relu' op operand #0 needs a resharding that is not supported: more than one sharding change in one op (a loop over the shards of didx axis 0 and a move from mesh [0, 1] to [2, 3]): split it in two sets}}
  %y = fusion.relu %x : tensor<2x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>>
  func.return %y : tensor<2x4xf32, #fusion.parallel<[stream, serial], mesh = [2, 3]>>
}

// -----

// A user's own set is named as such.
func.func @stream_n_over_shards(%x: tensor<4x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>>) -> tensor<4x4xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1, 2, 3]>> {
  // expected-error@+1 {{'fusion.set' op a stream(N) loop over a sharded axis is not supported; use stream}}
  %y = fusion.set %x : tensor<4x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1, 2, 3]>> -> tensor<4x4xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1, 2, 3]>>
  func.return %y : tensor<4x4xf32, #fusion.parallel<[stream(2), serial], mesh = [0, 1, 2, 3]>>
}
