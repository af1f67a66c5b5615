// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering

// A segment with one stream-parallel and one non-stream-parallel result: the unit runs in a stream
// loop, which writes its outputs one slice per iteration; a result without a stream axis has no
// slice to write.

func.func @mixed(%x: tensor<4x8xf32>) -> (tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32>) {
  // expected-error@+1 {{'fusion.segment' op result #1 is not stream-parallel but the unit runs in a stream loop: it cannot be written slice by slice}}
  %e, %n = fusion.segment ins(%a = %x : tensor<4x8xf32>) -> (tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32>) {
    %e = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    %n = fusion.neg %a : tensor<4x8xf32> -> tensor<4x8xf32>
    fusion.yield %e, %n : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32>
  }
  func.return %e, %n : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32>
}

// -----

// The first result is the plain one: it is still named.

func.func @mixed_first(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) {
  // expected-error@+1 {{'fusion.segment' op result #0 is not stream-parallel but the unit runs in a stream loop: it cannot be written slice by slice}}
  %n, %e = fusion.segment ins(%a = %x : tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) {
    %n = fusion.neg %a : tensor<4x8xf32> -> tensor<4x8xf32>
    %e = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    fusion.yield %n, %e : tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  }
  func.return %n, %e : tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
