// RUN: hir-opt %s --split-input-file --verify-diagnostics --stream-lowering | filecheck %s

// A stream axis that maps to a reduced axis (nvFuser's removed ReductionUnsupported, as a
// kernel): %e is declared stream-parallel on axis 0, but the segment's output is stream-parallel
// on the sum's only axis, which comes from axis 1 of %e; axis 0 is summed over. One loop cannot
// iterate %e on axis 0 and on axis 1.

func.func @stream_axis_reduced(%x: tensor<4x8xf32>) -> tensor<8xf32, #fusion.parallel<[stream]>> {
  %s = fusion.segment ins(%a = %x : tensor<4x8xf32>) -> tensor<8xf32, #fusion.parallel<[stream]>> {
    // expected-error@+1 {{'fusion.exp' op stream axis 0 of %e maps to an axis that its consumer (fusion.sum) reduces or does not iterate, so one loop cannot run both}}
    %e = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
    %r = fusion.sum %e dims = [0] : tensor<4x8xf32, #fusion.parallel<[stream, serial]>> -> tensor<8xf32, #fusion.parallel<[stream]>>
    fusion.yield %r : tensor<8xf32, #fusion.parallel<[stream]>>
  }
  func.return %s : tensor<8xf32, #fusion.parallel<[stream]>>
}

// -----

// The same with stream(2) chunks on both.

func.func @chunked_axis_reduced(%x: tensor<4x8xf32>) -> tensor<8xf32, #fusion.parallel<[stream(2)]>> {
  %s = fusion.segment ins(%a = %x : tensor<4x8xf32>) -> tensor<8xf32, #fusion.parallel<[stream(2)]>> {
    // expected-error@+1 {{'fusion.exp' op stream axis 0 of %e maps to an axis that its consumer (fusion.sum) reduces or does not iterate, so one loop cannot run both}}
    %e = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>>
    %r = fusion.sum %e dims = [0] : tensor<4x8xf32, #fusion.parallel<[stream(2), serial]>> -> tensor<8xf32, #fusion.parallel<[stream(2)]>>
    fusion.yield %r : tensor<8xf32, #fusion.parallel<[stream(2)]>>
  }
  func.return %s : tensor<8xf32, #fusion.parallel<[stream(2)]>>
}

// -----

// Without the segment, the sum is its own unit: its stream axis is a kept axis, and the
// lowering succeeds (the exp runs whole before the loop).

// CHECK: func.func @bare_ops_are_fine(
// CHECK: hir.for
func.func @bare_ops_are_fine(%x: tensor<4x8xf32>) -> tensor<8xf32, #fusion.parallel<[stream]>> {
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.sum %e dims = [0] : tensor<4x8xf32> -> tensor<8xf32, #fusion.parallel<[stream]>>
  func.return %r : tensor<8xf32, #fusion.parallel<[stream]>>
}
