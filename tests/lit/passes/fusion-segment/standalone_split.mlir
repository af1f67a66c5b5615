// RUN: hir-opt %s -p fusion-segment | filecheck %s

// Default policy (standalone-host-ops): set, the binary elementwise ops, reductions, matmul and
// linear stay single (ATen calls on the host) and split the unary ops around them into kernels.

// CHECK-LABEL: func.func @add_between_unary(
func.func @add_between_unary(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %n = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %n_1 = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   fusion.yield %n_1 : tensor<4x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: %a = fusion.add %n, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %t = fusion.segment ins(%a_1 = %a : tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %r = fusion.relu %a_1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %t_1 = fusion.tanh %r : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   fusion.yield %t_1 : tensor<4x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %t : tensor<4x8xf32>
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = fusion.add %n, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.relu %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %t = fusion.tanh %r : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %t : tensor<4x8xf32>
}

// Every standalone kind: none of them joins a neighbour, even another standalone op.

// CHECK-LABEL: func.func @all_standalone(
func.func @all_standalone(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<6x8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x6xf32>) {
  // CHECK-NEXT: %s = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %sub = fusion.sub %s, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %mul = fusion.mul %sub, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %div = fusion.div %mul, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %mx = fusion.maximum %div, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %mm = fusion.matmul %mx, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %sum = fusion.sum %mm dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: %max = fusion.max %mm dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: %min = fusion.min %mm dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: %lin = fusion.linear %mm, %v : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  // CHECK-NEXT: func.return %sum, %max, %min, %lin
  %s = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %sub = fusion.sub %s, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %mul = fusion.mul %sub, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %div = fusion.div %mul, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %mx = fusion.maximum %div, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %mm = fusion.matmul %mx, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %sum = fusion.sum %mm dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %max = fusion.max %mm dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %min = fusion.min %mm dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %lin = fusion.linear %mm, %v : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  func.return %sum, %max, %min, %lin : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x6xf32>
}

// A reduction's producer and consumer chains fuse separately.

// CHECK-LABEL: func.func @around_sum(
func.func @around_sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %a = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %a_1 = fusion.abs %e : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   fusion.yield %a_1 : tensor<4x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: %s = fusion.sum %a dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: %r = fusion.segment ins(%s_1 = %s : tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT:   %n = fusion.neg %s_1 : tensor<4xf32> -> tensor<4xf32>
  // CHECK-NEXT:   %r_1 = fusion.relu %n : tensor<4xf32> -> tensor<4xf32>
  // CHECK-NEXT:   fusion.yield %r_1 : tensor<4xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = fusion.abs %e : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = fusion.sum %a dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %n = fusion.neg %s : tensor<4xf32> -> tensor<4xf32>
  %r = fusion.relu %n : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
