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

// Reshapes and permutes that only a GEMM reads join its launch (the GEMM reads them as strided
// views: a transposed operand is free for cuBLAS); as a segment of their own they would be copied.

// CHECK-LABEL: func.func @views_into_matmul(
func.func @views_into_matmul(%g: tensor<2x4x8xf32>, %a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK-NEXT: %mm = fusion.segment ins(%g_1 = %g, %a_1 = %a : tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK-NEXT:   %r = fusion.reshape %g_1 : tensor<2x4x8xf32> -> tensor<8x8xf32>
  // CHECK-NEXT:   %t = fusion.permute %r perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  // CHECK-NEXT:   %mm_1 = fusion.matmul %t, %a_1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT:   fusion.yield %mm_1 : tensor<8x16xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %mm : tensor<8x16xf32>
  %r = fusion.reshape %g : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %t = fusion.permute %r perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %mm = fusion.matmul %t, %a : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %mm : tensor<8x16xf32>
}

// A view that something else reads too: the GEMM reads a clone of its own, which joins its launch,
// and the other reader keeps the original (a view costs torch nothing, a launch of its own a copy).
// A view of a GEMM's result (only views feeding a GEMM join it) and a view feeding a standalone op
// that is no GEMM keep a launch of their own.

// CHECK-LABEL: func.func @views_read_elsewhere(
func.func @views_read_elsewhere(%g: tensor<8x8xf32>, %a: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x8xf32>, tensor<16x8xf32>, tensor<8xf32>) {
  // CHECK-NEXT: %e = fusion.segment ins(%g_1 = %g : tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK-NEXT:   %t = fusion.permute %g_1 perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  // CHECK-NEXT:   %e_1 = fusion.exp %t : tensor<8x8xf32> -> tensor<8x8xf32>
  // CHECK-NEXT:   fusion.yield %e_1 : tensor<8x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: %mm = fusion.segment ins(%g_1 = %g, %a_1 = %a : tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK-NEXT:   %t = fusion.permute %g_1 perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  // CHECK-NEXT:   %mm_1 = fusion.matmul %t, %a_1 : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT:   fusion.yield %mm_1 : tensor<8x16xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: %mt = fusion.permute %mm perm = [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  // CHECK-NEXT: %u = fusion.permute %g perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  // CHECK-NEXT: %s = fusion.sum %u dims = [1] : tensor<8x8xf32> -> tensor<8xf32>
  %t = fusion.permute %g perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %mm = fusion.matmul %t, %a : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %e = fusion.exp %t : tensor<8x8xf32> -> tensor<8x8xf32>
  %mt = fusion.permute %mm perm = [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  %u = fusion.permute %g perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %s = fusion.sum %u dims = [1] : tensor<8x8xf32> -> tensor<8xf32>
  func.return %mm, %e, %mt, %s : tensor<8x16xf32>, tensor<8x8xf32>, tensor<16x8xf32>, tensor<8xf32>
}

// Views that only a GEMM reads join it, unless the GEMM's result is communicated: the pipelines
// split such a GEMM by chunk or destination, which needs a launch of the GEMM alone.
// CHECK-LABEL: func.func @views_of_a_communicated_gemm(
func.func @views_of_a_communicated_gemm(%g: tensor<2x4x8xf32>, %a: tensor<8x16xf32>) -> tensor<8x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %t = fusion.segment
  // CHECK-NEXT:   %r = fusion.reshape
  // CHECK-NEXT:   %t_1 = fusion.permute
  // CHECK-NEXT:   fusion.yield %t_1
  // CHECK-NEXT: }
  // CHECK-NEXT: %mm = fusion.matmul %t, %a
  // CHECK-NEXT: %s = fusion.set %mm
  %r = fusion.reshape %g : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %t = fusion.permute %r perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %mm = fusion.matmul %t, %a : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %s = fusion.set %mm : tensor<8x16xf32> -> tensor<8x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %s : tensor<8x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}

// A transpose that only a GEMM reads waits for the GEMM instead of joining the elementwise chain
// that produces it: that chain's launch yields its result as it is, and the GEMM reads it
// transposed (joined to its producer, the launch would copy the transposed tensor out).
// CHECK-LABEL: func.func @transpose_of_an_activation(
func.func @transpose_of_an_activation(%x: tensor<8x8xf32>, %a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK-NEXT: %n = fusion.segment ins(%x_1 = %x : tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %n_1 = fusion.neg %e
  // CHECK-NEXT:   fusion.yield %n_1 : tensor<8x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: %mm = fusion.segment ins(%n_1 = %n, %a_1 = %a : tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK-NEXT:   %t = fusion.permute %n_1 perm = [1, 0]
  // CHECK-NEXT:   %mm_1 = fusion.matmul %t, %a_1
  // CHECK-NEXT:   fusion.yield %mm_1 : tensor<8x16xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %mm : tensor<8x16xf32>
  %e = fusion.exp %x : tensor<8x8xf32> -> tensor<8x8xf32>
  %n = fusion.neg %e : tensor<8x8xf32> -> tensor<8x8xf32>
  %t = fusion.permute %n perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %mm = fusion.matmul %t, %a : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %mm : tensor<8x16xf32>
}

// The same transpose before a GEMM whose result is communicated stays with its producer: it cannot
// join that GEMM (above), and a launch of its own would add a copy.
// CHECK-LABEL: func.func @transpose_of_a_communicated_gemm(
func.func @transpose_of_a_communicated_gemm(%x: tensor<8x8xf32>, %a: tensor<8x16xf32>) -> tensor<8x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> {
  // CHECK-NEXT: %t = fusion.segment ins(%x_1 = %x : tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1
  // CHECK-NEXT:   %t_1 = fusion.permute %e perm = [1, 0]
  // CHECK-NEXT:   fusion.yield %t_1 : tensor<8x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: %mm = fusion.matmul %t, %a
  // CHECK-NEXT: %s = fusion.set %mm
  %e = fusion.exp %x : tensor<8x8xf32> -> tensor<8x8xf32>
  %t = fusion.permute %e perm = [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %mm = fusion.matmul %t, %a : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %s = fusion.set %mm : tensor<8x16xf32> -> tensor<8x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
  func.return %s : tensor<8x16xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>
}
