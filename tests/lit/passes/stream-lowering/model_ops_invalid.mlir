// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering

// Axes the ops of models cannot be sliced on map to nothing in their axis maps: each element of
// the result reads the whole axis (softmax, norms), or an index no loop over the operand selects
// (a merged or split reshape axis, a sliced axis, the concat dim). A stream loop over one of them
// is refused, whether it iterates single indices or stream(N) chunks.

func.func @softmax_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.softmax' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.softmax %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}

// -----

func.func @softmax_dim_chunks(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream(2)]>> {
  // expected-error@+1 {{'fusion.softmax' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.softmax %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream(2)]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream(2)]>>
}

// -----

func.func @layer_norm_normalized_axis(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.layer_norm' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.layer_norm %x, %w dims = [1] eps = 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}

// -----

func.func @rms_norm_normalized_axis_chunks(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream(4)]>> {
  // expected-error@+1 {{'fusion.rms_norm' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.rms_norm %x dims = [1] eps = 1.000000e-06 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream(4)]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream(4)]>>
}

// -----

// Result index i of the merged axis 48 = 6x8 is operand element (i / 8, i % 8).

func.func @reshape_merged_axis(%x: tensor<4x6x8xf32>) -> tensor<4x48xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.reshape' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.reshape %x : tensor<4x6x8xf32> -> tensor<4x48xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x48xf32, #fusion.parallel<[serial, stream]>>
}

// -----

// Result index i of the split axis 2 (of 6 = 2x3) is operand rows 3i..3i+2.

func.func @reshape_split_axis(%x: tensor<6x4xf32>) -> tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial]>> {
  // expected-error@+1 {{'fusion.reshape' op cannot run slice by slice on result axis 0: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.reshape %x : tensor<6x4xf32> -> tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial]>>
  func.return %y : tensor<2x3x4xf32, #fusion.parallel<[stream, serial, serial]>>
}

// -----

func.func @slice_sliced_axis(%x: tensor<4x8xf32>) -> tensor<4x3xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.slice' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.slice %x offsets = [0, 5] strides = [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x3xf32, #fusion.parallel<[serial, stream]>>
}

// -----

// Chunk k of a strided axis reads operand elements 8k, 8k+2, ...: not chunk k of the operand.

func.func @slice_sliced_axis_chunks(%x: tensor<4x8xf32>) -> tensor<4x4xf32, #fusion.parallel<[serial, stream(2)]>> {
  // expected-error@+1 {{'fusion.slice' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.slice %x offsets = [0, 0] strides = [1, 2] : tensor<4x8xf32> -> tensor<4x4xf32, #fusion.parallel<[serial, stream(2)]>>
  func.return %y : tensor<4x4xf32, #fusion.parallel<[serial, stream(2)]>>
}

// -----

func.func @concat_dim(%a: tensor<4x2xf32>, %b: tensor<4x6xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.concat' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.concat %a, %b dim = 1 : tensor<4x2xf32>, tensor<4x6xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}

// -----

// Inside a segment: the silu would be iterated on axis 1 for the softmax, which reads axis 1 whole.

func.func @softmax_dim_in_segment(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  %a = fusion.silu %x : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  // expected-error@+1 {{'fusion.softmax' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.softmax %a dim = 1 : tensor<4x8xf32, #fusion.parallel<[serial, stream]>> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}
