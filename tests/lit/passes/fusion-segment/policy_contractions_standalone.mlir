// RUN: hir-opt %s -p 'fusion-segment{policy=contractions-standalone}' | filecheck %s

// Matmuls and linears stay single launches (the GEMMs a communication pipeline splits); the
// elementwise ops between and after them, binary ones included, fuse into one segment each.

// CHECK-LABEL: func.func @mlp(
// CHECK-NEXT:    %y = fusion.matmul %x, %w1
// CHECK-NEXT:    %g = fusion.segment ins(%y_1 = %y, %c_1 = %c : tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> {
// CHECK-NEXT:      %t = fusion.tanh %y_1
// CHECK-NEXT:      %g_1 = fusion.mul %t, %c_1
// CHECK-NEXT:      fusion.yield %g_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %z = fusion.linear %g, %w2
// CHECK-NEXT:    %r = fusion.segment ins(%z_1 = %z, %x_1 = %x : tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT:      %s = fusion.add %z_1, %x_1
// CHECK-NEXT:      %r_1 = fusion.relu %s
// CHECK-NEXT:      fusion.yield %r_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %c: tensor<8x32xf32>, %w2: tensor<16x32xf32>) -> tensor<8x16xf32> {
  %y = fusion.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %t = fusion.tanh %y : tensor<8x32xf32> -> tensor<8x32xf32>
  %g = fusion.mul %t, %c : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  %z = fusion.linear %g, %w2 : tensor<8x32xf32>, tensor<16x32xf32> -> tensor<8x16xf32>
  %s = fusion.add %z, %x : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %r = fusion.relu %s : tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %r : tensor<8x16xf32>
}

// Resharding ops stay single, as under every policy.
// CHECK-LABEL: func.func @gather_then_scale(
// CHECK-NEXT:    %g = fusion.set %x
// CHECK-NEXT:    %e = fusion.segment ins(%g_1 = %g : tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT:      %n = fusion.neg %g_1
// CHECK-NEXT:      %e_1 = fusion.exp %n
// CHECK-NEXT:      fusion.yield %e_1
// CHECK-NEXT:    }
func.func @gather_then_scale(%x: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) -> tensor<2x8xf32> {
  %g = fusion.set %x : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  %n = fusion.neg %g : tensor<2x8xf32> -> tensor<2x8xf32>
  %e = fusion.exp %n : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %e : tensor<2x8xf32>
}
