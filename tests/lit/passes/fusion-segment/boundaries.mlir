// RUN: hir-opt %s -p fusion-segment | filecheck %s

// The pass segments maximal runs of consecutive top-level fusion ops: any other op (here an
// opaque `test.op`, a constant, an existing fusion.segment) ends a run and stays in place, so no
// fusion op moves across it. Ops inside an existing segment are left alone.

// CHECK-LABEL: func.func @opaque_op_splits(
func.func @opaque_op_splits(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: %e, %n = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT:   %e_1 = fusion.exp %x_1
  // CHECK-NEXT:   %n_1 = fusion.neg %e_1
  // CHECK-NEXT:   fusion.yield %e_1, %n_1
  // CHECK-NEXT: }
  // CHECK-NEXT: %o = "test.op"(%n) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %a = fusion.segment ins(%o_1 = %o : tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %r = fusion.relu %o_1
  // CHECK-NEXT:   %a_1 = fusion.abs %r
  // CHECK-NEXT:   fusion.yield %a_1
  // CHECK-NEXT: }
  // CHECK-NEXT: %t = fusion.tanh %e
  // CHECK-NEXT: func.return %a, %t
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  %o = "test.op"(%n) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = fusion.relu %o : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = fusion.abs %r : tensor<4x8xf32> -> tensor<4x8xf32>
  %t = fusion.tanh %e : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %a, %t : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @constant_splits(
func.func @constant_splits(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %e = fusion.exp %x
  // CHECK-NEXT: %c = arith.constant dense<1.000000e+00> : tensor<4xf32>
  // CHECK-NEXT: %n = fusion.neg %e
  // CHECK-NEXT: func.return %n
  %e = fusion.exp %x : tensor<4xf32> -> tensor<4xf32>
  %c = arith.constant dense<1.0> : tensor<4xf32>
  %n = fusion.neg %e : tensor<4xf32> -> tensor<4xf32>
  func.return %n : tensor<4xf32>
}

// An existing segment is kept as it is (even though this policy would split it) and is a boundary.
// CHECK-LABEL: func.func @existing_segment(
func.func @existing_segment(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %n = fusion.segment ins(%x_1 = %x : tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %n_1 = fusion.neg %e
  // CHECK-NEXT:   fusion.yield %n_1
  // CHECK-NEXT: }
  // CHECK-NEXT: %s = fusion.segment ins(%y = %n : tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT:   %a = fusion.add %y, %y
  // CHECK-NEXT:   %r = fusion.relu %a
  // CHECK-NEXT:   fusion.yield %r
  // CHECK-NEXT: }
  // CHECK-NEXT: %t = fusion.segment ins(%s_1 = %s : tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT:   %ta = fusion.tanh %s_1
  // CHECK-NEXT:   %t_1 = fusion.abs %ta
  // CHECK-NEXT:   fusion.yield %t_1
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %t
  %e = fusion.exp %x : tensor<4xf32> -> tensor<4xf32>
  %n = fusion.neg %e : tensor<4xf32> -> tensor<4xf32>
  %s = fusion.segment ins(%y = %n : tensor<4xf32>) -> tensor<4xf32> {
    %a = fusion.add %y, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r = fusion.relu %a : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %r : tensor<4xf32>
  }
  %ta = fusion.tanh %s : tensor<4xf32> -> tensor<4xf32>
  %t = fusion.abs %ta : tensor<4xf32> -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}

// Functions without fusion ops, and declarations, are untouched.
// CHECK-LABEL: func.func @no_fusion_ops(
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @no_fusion_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// CHECK: func.func private @declaration(tensor<4xf32>) -> tensor<4xf32>
func.func private @declaration(tensor<4xf32>) -> tensor<4xf32>
