// RUN: hir-opt %s -p 'fusion-segment{policy=gemm-epilogues}' | filecheck %s
// RUN: hir-opt %s -p fusion-segment | filecheck %s --check-prefix=DEFAULT

// policy=gemm-epilogues: a residual add of a GEMM's result joins the GEMM's launch (the runtime
// runs both as one addmm), with the views the GEMM reads. The default policy keeps the add (a
// standalone host op) single.

// DEFAULT-LABEL: func.func @output_projection(
// DEFAULT:         fusion.linear
// DEFAULT-NEXT:    fusion.yield
// DEFAULT:         %r = fusion.add %x, %y

// CHECK-LABEL: func.func @output_projection(
func.func @output_projection(%x: tensor<2x8x16xf32>, %a: tensor<2x8x4x4xf32>, %w: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // CHECK-NEXT: %r = fusion.segment ins(%a_1 = %a, %w_1 = %w, %x_1 = %x : tensor<2x8x4x4xf32>, tensor<16x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  // CHECK-NEXT:   %m = fusion.reshape %a_1
  // CHECK-NEXT:   %y = fusion.linear %m, %w_1
  // CHECK-NEXT:   %r_1 = fusion.add %x_1, %y
  // CHECK-NEXT:   fusion.yield %r_1
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %r
  %m = fusion.reshape %a : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  %y = fusion.linear %m, %w : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %r = fusion.add %x, %y : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  func.return %r : tensor<2x8x16xf32>
}

// CHECK-LABEL: func.func @matmul_then_add(
func.func @matmul_then_add(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %r0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK-NEXT: %r = fusion.segment
  // CHECK-NEXT:   %y = fusion.matmul
  // CHECK-NEXT:   %r_1 = fusion.add %y, %r0_1
  %y = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %r = fusion.add %y, %r0 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %r : tensor<8x16xf32>
}

// Not joined: a GEMM whose result something else reads too, a linear with a bias, an add of the
// GEMM's result to itself.

// CHECK-LABEL: func.func @kept_apart(
func.func @kept_apart(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  // CHECK-NOT: fusion.segment
  // CHECK:     func.return
  %z = fusion.linear %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %s2 = fusion.add %z, %x : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %v = fusion.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %s3 = fusion.add %v, %x : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %u = fusion.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %s4 = fusion.add %u, %u : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %z, %s2, %s3, %s4 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
