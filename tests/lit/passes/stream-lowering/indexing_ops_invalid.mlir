// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering

// The indexing and scan ops read an axis by index or all of it: that axis maps to nothing in
// their axis maps, so a stream loop over it is refused (single indices or stream(N) chunks), and
// so is a didx layout on an iota's counted axis (each device would count from 0). A gather sliced
// on its gathered axis would read x whole with a slice of the index: refused as well.

func.func @gather_dim(%x: tensor<4x8xf32>, %i: tensor<4x3xi64>) -> tensor<4x3xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.gather' op cannot run slice by slice on result axis 1: on its operands without axis 1 of operand #1 it computes something else (stream another axis)}}
  %y = fusion.gather %x, %i dim = 1 : tensor<4x8xf32>, tensor<4x3xi64> -> tensor<4x3xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x3xf32, #fusion.parallel<[serial, stream]>>
}

// -----

func.func @iota_dim(%x: tensor<4x8xi64>) -> tensor<4x8xi64, #fusion.parallel<[serial, stream(2)]>> {
  // expected-error@+1 {{'fusion.iota' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.iota dim = 1 : tensor<4x8xi64, #fusion.parallel<[serial, stream(2)]>>
  func.return %y : tensor<4x8xi64, #fusion.parallel<[serial, stream(2)]>>
}

// -----

func.func @iota_dim_single(%x: tensor<4x8xi64>) -> tensor<4x8xi64, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.iota' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.iota dim = 1 : tensor<4x8xi64, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x8xi64, #fusion.parallel<[serial, stream]>>
}

// -----

func.func @cumsum_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.cumsum' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.cumsum %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}

// -----

func.func @flip_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>> {
  // expected-error@+1 {{'fusion.flip' op cannot run slice by slice on result axis 0: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.flip %x dims = [0] : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
}

// -----

func.func @topk_dim(%x: tensor<4x8xf32>) -> tensor<4x3xi64, #fusion.parallel<[serial, stream]>> {
  // expected-error@+1 {{'fusion.topk' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.topk largest, %x k = 3 dim = 1 : tensor<4x8xf32> -> tensor<4x3xi64, #fusion.parallel<[serial, stream]>>
  func.return %y : tensor<4x3xi64, #fusion.parallel<[serial, stream]>>
}

// -----

func.func @iota_didx() -> tensor<8x4xi64, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // expected-error@+1 {{'fusion.iota' op the counted axis 0 cannot be a didx axis (each device would count from 0)}}
  %y = fusion.iota dim = 0 : tensor<8x4xi64, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %y : tensor<8x4xi64, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// -----

func.func @cumprod_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[serial, stream(4)]>> {
  // expected-error@+1 {{'fusion.cumprod' op cannot run slice by slice on result axis 1: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.cumprod %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream(4)]>>
  func.return %y : tensor<4x8xf32, #fusion.parallel<[serial, stream(4)]>>
}

// -----

// An index_add's indexed axis takes whichever source slices the index names: a loop over it,
// single indices or chunks, is refused.
func.func @index_add_dim(%x: tensor<8x4xf32>, %i: tensor<3xi64>, %s: tensor<3x4xf32>) -> tensor<8x4xf32, #fusion.parallel<[stream, serial]>> {
  // expected-error@+1 {{'fusion.index_add' op cannot run slice by slice on result axis 0: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<8x4xf32>, tensor<3xi64>, tensor<3x4xf32> -> tensor<8x4xf32, #fusion.parallel<[stream, serial]>>
  func.return %y : tensor<8x4xf32, #fusion.parallel<[stream, serial]>>
}

// -----

func.func @index_add_dim_chunks(%x: tensor<8x4xf32>, %i: tensor<3xi64>, %s: tensor<3x4xf32>) -> tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>> {
  // expected-error@+1 {{'fusion.index_add' op cannot run slice by slice on result axis 0: on its operands without that axis it computes something else (stream another axis)}}
  %y = fusion.index_add %x, %i, %s dim = 0 : tensor<8x4xf32>, tensor<3xi64>, tensor<3x4xf32> -> tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %y : tensor<8x4xf32, #fusion.parallel<[stream(2), serial]>>
}
