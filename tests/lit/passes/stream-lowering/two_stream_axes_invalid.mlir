// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering

// A unit runs in one loop, so all its outputs must be stream-parallel over the same iteration
// space: the same extent and chunk count.

func.func @different_extents(%x: tensor<4x8xf32>) -> (tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32, #fusion.parallel<[serial, stream]>>) {
  // expected-error@+1 {{'fusion.segment' op results are stream-parallel over different iteration spaces (two stream axes)}}
  %e, %n = fusion.segment ins(%a = %x : tensor<4x8xf32>) -> (tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32, #fusion.parallel<[serial, stream]>>) {
    %e = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    %n = fusion.neg %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
    fusion.yield %e, %n : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
  }
  func.return %e, %n : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32, #fusion.parallel<[serial, stream]>>
}

// -----

func.func @different_chunks(%x: tensor<4x8xf32>) -> (tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>, tensor<4x8xf32, #fusion.parallel<[stream(4), serial]>>) {
  // expected-error@+1 {{'fusion.segment' op results are stream-parallel over different iteration spaces (two stream axes)}}
  %e, %n = fusion.segment ins(%a = %x : tensor<4x8xf32>) -> (tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>, tensor<4x8xf32, #fusion.parallel<[stream(4), serial]>>) {
    %e = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
    %n = fusion.neg %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(4), serial]>>
    fusion.yield %e, %n : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>, tensor<4x8xf32, #fusion.parallel<[stream(4), serial]>>
  }
  func.return %e, %n : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>, tensor<4x8xf32, #fusion.parallel<[stream(4), serial]>>
}

// -----

// Equal extents on different axes pass the first check, but then the loop would have to iterate
// the segment's input over both of its axes.

func.func @same_extent_other_axis(%x: tensor<4x4xf32>) -> (tensor<4x4xf32, #fusion.parallel<[stream, serial]>>, tensor<4x4xf32, #fusion.parallel<[serial, stream]>>) {
  %e, %n = fusion.segment ins(%a = %x : tensor<4x4xf32>) -> (tensor<4x4xf32, #fusion.parallel<[stream, serial]>>, tensor<4x4xf32, #fusion.parallel<[serial, stream]>>) {
    %e = fusion.exp %a : tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[stream, serial]>>
    // expected-error@-1 {{'fusion.exp' op the stream loop would iterate %a over both axis 1 and axis 0}}
    %n = fusion.neg %a : tensor<4x4xf32> -> tensor<4x4xf32, #fusion.parallel<[serial, stream]>>
    fusion.yield %e, %n : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>, tensor<4x4xf32, #fusion.parallel<[serial, stream]>>
  }
  func.return %e, %n : tensor<4x4xf32, #fusion.parallel<[stream, serial]>>, tensor<4x4xf32, #fusion.parallel<[serial, stream]>>
}
