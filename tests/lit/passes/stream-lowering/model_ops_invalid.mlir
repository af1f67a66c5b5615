// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering

// Axes the ops of models cannot be sliced on map to nothing in their axis maps: each element of
// the result reads the whole axis (softmax, norms), or an index no loop over the operand selects
// (an inner factor of a reshape's split axis, a sliced axis, the concat dim). A stream loop over one of them
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

// A reshape splitting or merging the stream axis is sliced where each iteration's slice is one
// slice of the operand (reshape_stream.mlir); the other cases are refused with the reason.
// Result index i of axis 1 (the inner factor of 32 = 4x8) is operand rows i, i + 8, i + 16, i + 24.

func.func @reshape_inner_factor(%x: tensor<32x16xf32>) -> tensor<4x8x16xf32, #fusion.parallel<[serial, stream, serial]>> {
  // expected-error@+1 {{'fusion.reshape' op cannot run slice by slice: the reshape splits operand axes [0] (32) into result axes [0, 1] (4x8), and its stream axis 1 is an inner factor: each iteration's slice is strided in the operand; stream result axis 0 (the outer factor) instead}}
  %y = fusion.reshape %x : tensor<32x16xf32> -> tensor<4x8x16xf32, #fusion.parallel<[serial, stream, serial]>>
  func.return %y : tensor<4x8x16xf32, #fusion.parallel<[serial, stream, serial]>>
}

// -----

// 8 chunks of the merged 32 = 4x8 are half rows of the operand's axis 0.

func.func @reshape_merged_chunks_cut_rows(%x: tensor<4x8x16xf32>) -> tensor<32x16xf32, #fusion.parallel<[stream(8), serial]>> {
  // expected-error@+1 {{'fusion.reshape' op cannot run slice by slice: the reshape merges operand axes [0, 1] (4x8) into result axes [0] (32), and the 8 slices of its stream(8) axis 0 cut operand axis 0 (extent 4) into pieces that are not whole rows: use a stream(N) whose N divides 4}}
  %y = fusion.reshape %x : tensor<4x8x16xf32> -> tensor<32x16xf32, #fusion.parallel<[stream(8), serial]>>
  func.return %y : tensor<32x16xf32, #fusion.parallel<[stream(8), serial]>>
}

// -----

// 2 chunks of the outer factor 3 of 12 = 3x4 are not chunks of 12.

func.func @reshape_split_chunks_not_dividing(%x: tensor<12x4xf32>) -> tensor<3x4x4xf32, #fusion.parallel<[stream(2), serial, serial]>> {
  // expected-error@+1 {{'fusion.reshape' op cannot run slice by slice: the reshape splits operand axes [0] (12) into result axes [0, 1] (3x4), and its stream(2) axis 0 needs 2 chunks to divide 3}}
  %y = fusion.reshape %x : tensor<12x4xf32> -> tensor<3x4x4xf32, #fusion.parallel<[stream(2), serial, serial]>>
  func.return %y : tensor<3x4x4xf32, #fusion.parallel<[stream(2), serial, serial]>>
}

// -----

// In a segment, the merged axes reach an op whose properties name axes (a sum's dims).

func.func @reshape_merged_through_sum(%x: tensor<2x3x4xf32>) -> tensor<6xf32, #fusion.parallel<[stream]>> {
  %r = fusion.segment ins(%a = %x : tensor<2x3x4xf32>) -> tensor<6xf32, #fusion.parallel<[stream]>> {
    // expected-error@+1 {{'fusion.sum' op cannot run slice by slice: its properties name axes, and its result's axes 0..1 as one index (merged by a reshape that consumes it) cannot be renumbered; stream an axis the reshape keeps}}
    %s = fusion.sum %a dims = [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>
    %m = fusion.reshape %s : tensor<2x3xf32> -> tensor<6xf32, #fusion.parallel<[stream]>>
    fusion.yield %m : tensor<6xf32, #fusion.parallel<[stream]>>
  }
  func.return %r : tensor<6xf32, #fusion.parallel<[stream]>>
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
