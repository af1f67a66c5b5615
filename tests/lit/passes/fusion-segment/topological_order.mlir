// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only}' | filecheck %s

// The body is rebuilt in a topological order of the groups (Kahn's algorithm): among the groups
// whose inputs are ready, the one whose first op comes first in the input goes first.

// Two interleaved independent chains: each becomes a segment, in the order of their first ops.
// CHECK-LABEL: func.func @interleaved(
func.func @interleaved(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: %a2 = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %a1 = fusion.exp %x_1
  // CHECK-NEXT:   %a2_1 = fusion.neg %a1
  // CHECK-NEXT:   fusion.yield %a2_1
  // CHECK-NEXT: }
  // CHECK-NEXT: %b2 = fusion.segment ins(%y_1 = %y : tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %b1 = fusion.tanh %y_1
  // CHECK-NEXT:   %b2_1 = fusion.relu %b1
  // CHECK-NEXT:   fusion.yield %b2_1
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %b2, %a2
  %a1 = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %b1 = fusion.tanh %y : tensor<4x8xf32> -> tensor<4x8xf32>
  %a2 = fusion.neg %a1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %b2 = fusion.relu %b1 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %b2, %a2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// exp and add fuse (no path between them through another group), but add needs %g: the segment
// comes after the two resharding sets although exp came first.
// CHECK-LABEL: func.func @segment_waits_for_its_inputs(
func.func @segment_waits_for_its_inputs(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK-NEXT: %s = fusion.set %x
  // CHECK-NEXT: %g = fusion.set %s
  // CHECK-NEXT: %a = fusion.segment ins(%x_1 = %x, %g_1 = %g : tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %a_1 = fusion.add %e, %g_1
  // CHECK-NEXT:   fusion.yield %a_1
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %a
  %e = fusion.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %s = fusion.set %x : tensor<2x8xf32> -> tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  %g = fusion.set %s : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  %a = fusion.add %e, %g : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %a : tensor<2x8xf32>
}
