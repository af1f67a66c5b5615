// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering

// fusion-segment keeps an op that makes its stream(N) axis in uneven chunks out of segments, so
// that it runs whole (made_axis_uneven.mlir). In a segment written by hand, it cannot run whole on
// its own: the lowering says so at the op.

func.func @in_segment(%x: tensor<3xf32>, %y: tensor<5x3xf32>) -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>> {
  %r = fusion.segment ins(%a = %x, %b = %y : tensor<3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>> {
    // expected-error@+1 {{'fusion.broadcast' op cannot run in chunks on result axis 0: the op makes that axis (no operand has it) and needs its extent, but stream(2) of 5 has chunks of different sizes; use a chunk count that divides the extent, or plain stream}}
    %e = fusion.broadcast %a dims = [0] : tensor<3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
    %c = fusion.mul %e, %b : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>, tensor<5x3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
    fusion.yield %c : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  }
  func.return %r : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
}

// -----

// The same for a dynamic extent in chunks.
func.func @dynamic(%x: tensor<3xf32>, %y: tensor<?x3xf32>) -> tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>> {
  %r = fusion.segment ins(%a = %x, %b = %y : tensor<3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>> {
    // expected-error@+1 {{stream(2) of a dynamic extent has chunks of different sizes}}
    %e = fusion.broadcast %a dims = [0] : tensor<3xf32> -> tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>
    %c = fusion.mul %e, %b : tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>, tensor<?x3xf32> -> tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>
    fusion.yield %c : tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>
  }
  func.return %r : tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>
}
