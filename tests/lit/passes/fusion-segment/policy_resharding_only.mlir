// RUN: hir-opt %s -p 'fusion-segment{policy=resharding-only}' | filecheck %s

// Policy resharding-only (nvFuser's former `only_segment_resharding_exprs`): binary ops,
// reductions, matmul, linear and non-resharding sets fuse like any other op.

// CHECK-LABEL: func.func @mlp(
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %s = fusion.segment ins(%x_1 = %x, %w1_1 = %w1, %w2_1 = %w2, %b_1 = %b : tensor<4x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT:   %h = fusion.matmul %x_1, %w1_1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  // CHECK-NEXT:   %r = fusion.relu %h : tensor<4x16xf32> -> tensor<4x16xf32>
  // CHECK-NEXT:   %y = fusion.linear %r, %w2_1, %b_1 : tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %m = fusion.mul %y, %x_1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %c = fusion.set %m : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %s_1 = fusion.sum %c dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT:   fusion.yield %s_1 : tensor<4xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %s : tensor<4xf32>
  %h = fusion.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %r = fusion.relu %h : tensor<4x16xf32> -> tensor<4x16xf32>
  %y = fusion.linear %r, %w2, %b : tensor<4x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %m = fusion.mul %y, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %c = fusion.set %m : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = fusion.sum %c dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// Binary ops join two chains into one segment.
// CHECK-LABEL: func.func @binary_joins(
func.func @binary_joins(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %m = fusion.segment ins(%x_1 = %x, %y_1 = %y : tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %n = fusion.neg %y_1
  // CHECK-NEXT:   %a = fusion.add %e, %n
  // CHECK-NEXT:   %d = fusion.div %a, %x_1
  // CHECK-NEXT:   %m_1 = fusion.maximum %d, %e
  // CHECK-NEXT:   fusion.yield %m_1
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %m
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusion.neg %y : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = fusion.add %e, %n : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d = fusion.div %a, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %m = fusion.maximum %d, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %m : tensor<4x8xf32>
}
