// RUN: hir-opt %s --split-input-file --stream-lowering --verify-diagnostics

// What stays refused for didx axes whose extent is not the mesh size (uneven shards), at the op
// the user wrote, with the reason (passes/resharding/set_lowering.py, passes/convert_fusion_to_hir.py).
// (A mesh change of such an axis is a chain of sets: uneven_mesh_change.mlir.)

// A loop over the devices' shards (didx -> stream) takes one index per device.
func.func @shard_loop(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<5x4xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'fusion.set' op a loop over the shards of didx axis 0 needs one index per device, but it has extent 5 over 2 devices: gather it first (a set to a replicated value), then loop over the gathered axis}}
  %y = fusion.set %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
  func.return %y : tensor<5x4xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
}

// -----

// The same through fusion-decompose-resharding: the error names the op the user wrote.
func.func @relu_over_shard_loop(%x: tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<5x4xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'fusion.relu' op operand #0 needs a resharding that is not supported: a loop over the shards of didx axis 0 needs one index per device, but it has extent 5 over 2 devices: gather it first (a set to a replicated value), then loop over the gathered axis}}
  %y = fusion.relu %x : tensor<5x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<5x4xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
  func.return %y : tensor<5x4xf32, #fusion.parallel<[stream, serial], mesh = [0, 1]>>
}

// -----

// A scatter onto a didx axis of dynamic extent: this device's extent is not known.
func.func @dynamic_extent(%x: tensor<?x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) -> tensor<?x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'fusion.set' op a resharding of a didx axis of dynamic extent is not supported (didx axis 0 of the result has extent ? over 2 devices): give it a static extent}}
  %y = fusion.set %x : tensor<?x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<?x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<?x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// -----

// An all-gather of a didx axis of dynamic extent.
func.func @dynamic_gather(%x: tensor<?x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<?x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op a resharding of a didx axis of dynamic extent is not supported (didx axis 0 of the source has extent ? over 2 devices): give it a static extent}}
  %y = fusion.set %x : tensor<?x4xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<?x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
  func.return %y : tensor<?x4xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>
}

// -----

// The padding of a per-chunk all-gather whose other axis is an uneven stream(N) chunk (dynamic).
func.func @padding_dynamic_axis(%x: tensor<5x7x4xf32, #fusion.parallel<[didx, stream(2), serial], mesh = [0, 1]>>) -> tensor<5x7x4xf32, #fusion.parallel<[serial, stream(2), serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'hir.launch' op the all-gather of didx axis 0 (extent 5 over 2 devices, not a multiple) pads each shard to 3 with zeros, which needs static extents on the other axes, but the shard is memref<?x?x4xf32, strided<[28, 4, 1], offset: ?>>}}
  %y = fusion.set %x : tensor<5x7x4xf32, #fusion.parallel<[didx, stream(2), serial], mesh = [0, 1]>> -> tensor<5x7x4xf32, #fusion.parallel<[serial, stream(2), serial], mesh = [0, 1]>>
  func.return %y : tensor<5x7x4xf32, #fusion.parallel<[serial, stream(2), serial], mesh = [0, 1]>>
}
