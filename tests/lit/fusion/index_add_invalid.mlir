// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.index_add: `dim` is an axis of x and not the result's didx axis; the index is a 1-D
// integer tensor; source has x's shape but along `dim`, the index's length; x, source and the
// result share one element type; the result has x's shape.

func.func @dim_range(%x: tensor<4x8xf32>, %i: tensor<2xi64>, %s: tensor<4x2xf32>) {
  // expected-error@+1 {{'fusion.index_add' op dim entry 2 is out of range for rank 2}}
  %0 = fusion.index_add %x, %i, %s dim = 2 : tensor<4x8xf32>, tensor<2xi64>, tensor<4x2xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @index_rank(%x: tensor<4x8xf32>, %i: tensor<2x3xi64>, %s: tensor<6x8xf32>) {
  // expected-error@+1 {{'fusion.index_add' op the index must be 1-D, got shape 2x3}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2x3xi64>, tensor<6x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @index_float(%x: tensor<4x8xf32>, %i: tensor<2xf32>, %s: tensor<2x8xf32>) {
  // expected-error@+1 {{'fusion.index_add' op the index must have an integer element type (not i1), got f32}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @index_bool(%x: tensor<4x8xf32>, %i: tensor<4xi1>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.index_add' op the index must have an integer element type (not i1), got i1}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<4xi1>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @source_rank(%x: tensor<4x8xf32>, %i: tensor<2xi64>, %s: tensor<2xf32>) {
  // expected-error@+1 {{'fusion.index_add' op source has shape 2, expected 2x8 (x's extents off dim 0, the index's length along it)}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xi64>, tensor<2xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @source_off_dim(%x: tensor<4x8xf32>, %i: tensor<2xi64>, %s: tensor<2x7xf32>) {
  // expected-error@+1 {{'fusion.index_add' op source has shape 2x7, expected 2x8 (x's extents off dim 0, the index's length along it)}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xi64>, tensor<2x7xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @source_along_dim(%x: tensor<4x8xf32>, %i: tensor<3xi64>, %s: tensor<4x2xf32>) {
  // expected-error@+1 {{'fusion.index_add' op source has shape 4x2, expected 4x3 (x's extents off dim 1, the index's length along it)}}
  %0 = fusion.index_add %x, %i, %s dim = 1 : tensor<4x8xf32>, tensor<3xi64>, tensor<4x2xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @source_element(%x: tensor<4x8xf32>, %i: tensor<2xi64>, %s: tensor<2x8xbf16>) {
  // expected-error@+1 {{'fusion.index_add' op x has element type f32, source bf16}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xi64>, tensor<2x8xbf16> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @result_element(%x: tensor<4x8xf32>, %i: tensor<2xi64>, %s: tensor<2x8xf32>) {
  // expected-error@+1 {{'fusion.index_add' op x has element type f32, the result f16}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xi64>, tensor<2x8xf32> -> tensor<4x8xf16>
  func.return
}

// -----

func.func @result_shape(%x: tensor<4x8xf32>, %i: tensor<2xi64>, %s: tensor<2x8xf32>) {
  // expected-error@+1 {{'fusion.index_add' op result shape 2x8 does not match the expected shape 4x8}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xi64>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

// Each device would add the source slices of every device's positions to its own shard.
func.func @didx_on_dim(%x: tensor<4x8xf32>, %i: tensor<2xi64>, %s: tensor<2x8xf32>) {
  // expected-error@+1 {{'fusion.index_add' op the indexed axis 0 cannot be the result's didx axis (each device would add the slices of every device's positions): shard another axis, or reshard the result}}
  %0 = fusion.index_add %x, %i, %s dim = 0 : tensor<4x8xf32>, tensor<2xi64>, tensor<2x8xf32> -> tensor<4x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return
}
