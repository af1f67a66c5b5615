// RUN: hir-opt %s --split-input-file --verify-diagnostics

// fusion.slice: one offset and stride per axis, in bounds; a dynamic axis is kept whole.

func.func @too_few(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.slice' op slice of a rank-2 operand needs 2 offsets, strides and result extents, got 1, 1 and 2}}
  %0 = fusion.slice %x offsets = [0] strides = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @negative_offset(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.slice' op slice axis 1: offset -1 must be >= 0 and stride 1 >= 1}}
  %0 = fusion.slice %x offsets = [0, -1] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x2xf32>
  func.return
}

// -----

func.func @zero_stride(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.slice' op slice axis 1: offset 0 must be >= 0 and stride 0 >= 1}}
  %0 = fusion.slice %x offsets = [0, 0] strides = [1, 0] : tensor<4x8xf32> -> tensor<4x2xf32>
  func.return
}

// -----

func.func @overrun(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.slice' op slice axis 1: 4 elements from offset 2 with stride 2 overrun extent 8}}
  %0 = fusion.slice %x offsets = [0, 2] strides = [1, 2] : tensor<4x8xf32> -> tensor<4x4xf32>
  func.return
}

// -----

func.func @dynamic_sliced(%x: tensor<?x8xf32>) {
  // expected-error@+1 {{'fusion.slice' op slice axis 0: an axis of dynamic extent can only be kept whole (offset 0, stride 1, ? to ?), got ? to 2 from 1 by 1}}
  %0 = fusion.slice %x offsets = [1, 0] strides = [1, 1] : tensor<?x8xf32> -> tensor<2x8xf32>
  func.return
}
