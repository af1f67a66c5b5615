// RUN: hir-opt %s -p fusion-segment | filecheck %s
// RUN: hir-opt %s -p stream-lowering | filecheck %s --check-prefix=LOWERED

// A weight gradient as AOT autograd returns it, t(t(g^T @ x)): the two permutes fold away, and
// the GEMM's launch writes the output (no copy of the gradient).

// CHECK-LABEL: func.func @weight_gradient(
func.func @weight_gradient(%g: tensor<32x16xf32>, %x: tensor<32x64xf32>) -> tensor<16x64xf32> {
  // CHECK-NEXT: %dw = fusion.segment ins(%g_1 = %g, %x_1 = %x : tensor<32x16xf32>, tensor<32x64xf32>) -> tensor<16x64xf32> {
  // CHECK-NEXT:   %gt = fusion.permute %g_1 perm = [1, 0] : tensor<32x16xf32> -> tensor<16x32xf32>
  // CHECK-NEXT:   %dw_1 = fusion.matmul %gt, %x_1 : tensor<16x32xf32>, tensor<32x64xf32> -> tensor<16x64xf32>
  // CHECK-NEXT:   fusion.yield %dw_1 : tensor<16x64xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %dw : tensor<16x64xf32>
  // LOWERED-LABEL: func.func @weight_gradient(
  // LOWERED-COUNT-1: hir.launch
  // LOWERED-NOT: hir.launch
  %gt = fusion.permute %g perm = [1, 0] : tensor<32x16xf32> -> tensor<16x32xf32>
  %dw = fusion.matmul %gt, %x : tensor<16x32xf32>, tensor<32x64xf32> -> tensor<16x64xf32>
  %t = fusion.permute %dw perm = [1, 0] : tensor<16x64xf32> -> tensor<64x16xf32>
  %u = fusion.permute %t perm = [1, 0] : tensor<64x16xf32> -> tensor<16x64xf32>
  func.return %u : tensor<16x64xf32>
}

// Two permutes that are not inverse compose into one.

// CHECK-LABEL: func.func @composed(
// LOWERED-LABEL: func.func @composed(
func.func @composed(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  // CHECK-NEXT: %b = fusion.permute %x perm = [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  // CHECK-NEXT: func.return %b : tensor<3x4x2xf32>
  %a = fusion.permute %x perm = [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %b = fusion.permute %a perm = [0, 2, 1] : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  func.return %b : tensor<3x4x2xf32>
}

// Not folded: the identity of an argument (the output would alias the input), and the identity
// of a value that is returned too (two outputs in one buffer). The inner permute stays where
// other ops read it.

// CHECK-LABEL: func.func @kept(
func.func @kept(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK:     fusion.permute %{{.*}} perm = [1, 0]
  // CHECK:     fusion.permute %{{.*}} perm = [1, 0]
  // CHECK:     fusion.permute %{{.*}} perm = [1, 0]
  // CHECK:     fusion.permute %{{.*}} perm = [1, 0]
  // CHECK:     func.return
  %t = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %u = fusion.permute %t perm = [1, 0] : tensor<8x4xf32> -> tensor<4x8xf32>
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %et = fusion.permute %e perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %eu = fusion.permute %et perm = [1, 0] : tensor<8x4xf32> -> tensor<4x8xf32>
  func.return %u, %t, %e, %eu : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
