// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.index_copy verifies as fusion.index_add: a 1-D integer index, source with x's shape but
// the index's length along `dim`, and `dim` not the result's didx axis.

func.func @index_rank(%x: tensor<4x8xf32>, %i: tensor<2x3xi64>, %s: tensor<6x8xf32>) {
  // expected-error@+1 {{'fusion.index_copy' op the index must be 1-D, got shape 2x3}}
  %0 = fusion.index_copy %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2x3xi64>, tensor<6x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @source_shape(%x: tensor<4x8xf32>, %i: tensor<2xi64>, %s: tensor<3x8xf32>) {
  // expected-error@+1 {{'fusion.index_copy' op source has shape 3x8, expected 2x8 (x's extents off dim 0, the index's length along it)}}
  %0 = fusion.index_copy %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xi64>, tensor<3x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @float_index(%x: tensor<4x8xf32>, %i: tensor<2xf32>, %s: tensor<2x8xf32>) {
  // expected-error@+1 {{'fusion.index_copy' op the index must}}
  %0 = fusion.index_copy %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @sharded_dim(%x: tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, %i: tensor<2xi64, #fusion.parallel<[serial], mesh = [0, 1]>>, %s: tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>>) {
  // expected-error@+1 {{'fusion.index_copy' op the indexed axis 0 cannot be the result's didx axis (each device would write the slices of every device's positions): shard another axis, or reshard the result}}
  %0 = fusion.index_copy %x, %i, %s dim = 0 : tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>, tensor<2xi64, #fusion.parallel<[serial], mesh = [0, 1]>>, tensor<2x8xf32, #fusion.parallel<[serial, serial], mesh = [0, 1]>> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return
}
