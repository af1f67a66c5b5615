// RUN: hir-opt %s --split-input-file --verify-diagnostics -p 'fusion-segment{policy=resharding-only},convert-fusion-to-hir'

// Inside a segment with other ops, an op that makes its stream(N) axis in uneven chunks cannot
// run whole on its own: the lowering says so at the op (made_axis_uneven.mlir runs a bare one whole).

func.func @in_segment(%x: tensor<3xf32>, %y: tensor<5x3xf32>) -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>> {
  // expected-error@+1 {{'fusion.broadcast' op cannot run in chunks on result axis 0: the op makes that axis (no operand has it) and needs its extent, but stream(2) of 5 has chunks of different sizes; use a chunk count that divides the extent, or plain stream}}
  %b = fusion.broadcast %x dims = [0] : tensor<3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  %c = fusion.mul %b, %y : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>, tensor<5x3xf32> -> tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %c : tensor<5x3xf32, #fusion.parallel<[stream(2), serial]>>
}

// -----

// A broadcast to a new axis of a dynamic extent in chunks: no extent either.
func.func @dynamic(%x: tensor<3xf32>, %y: tensor<?x3xf32>) -> tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>> {
  // expected-error@+1 {{stream(2) of a dynamic extent has chunks of different sizes}}
  %b = fusion.broadcast %x dims = [0] : tensor<3xf32> -> tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>
  %c = fusion.mul %b, %y : tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>, tensor<?x3xf32> -> tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>
  func.return %c : tensor<?x3xf32, #fusion.parallel<[stream(2), serial]>>
}
