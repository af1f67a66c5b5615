// RUN: hir-opt %s -p fusion-segment | filecheck %s
// RUN: hir-opt %s --fusion-segment | hir-opt | filecheck %s

// Default policy: a chain of unary elementwise ops becomes one segment (one kernel); its input is
// the function argument, its only result the last op's.

// CHECK-LABEL: func.func @exp_neg_relu(
func.func @exp_neg_relu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT:   %e = fusion.exp %x_1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   %r_1 = fusion.relu %n : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT:   fusion.yield %r_1 : tensor<4x8xf32>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = fusion.neg %e : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.relu %n : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// Shape ops and casts fuse too.

// CHECK-LABEL: func.func @shape_ops(
func.func @shape_ops(%x: tensor<4x8xf32>) -> tensor<8x4x2xf16> {
  // CHECK-NEXT: %b = fusion.segment ins(%x_1 = %x : tensor<4x8xf32>) -> tensor<8x4x2xf16> {
  // CHECK-NEXT:   %p = fusion.permute %x_1 perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK-NEXT:   %c = fusion.cast %p : tensor<8x4xf32> -> tensor<8x4xf16>
  // CHECK-NEXT:   %b_1 = fusion.broadcast %c dims = [2] : tensor<8x4xf16> -> tensor<8x4x2xf16>
  // CHECK-NEXT:   fusion.yield %b_1 : tensor<8x4x2xf16>
  // CHECK-NEXT: }
  // CHECK-NEXT: func.return %b : tensor<8x4x2xf16>
  %p = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %c = fusion.cast %p : tensor<8x4xf32> -> tensor<8x4xf16>
  %b = fusion.broadcast %c dims = [2] : tensor<8x4xf16> -> tensor<8x4x2xf16>
  func.return %b : tensor<8x4x2xf16>
}

// A single op stays a bare op.

// CHECK-LABEL: func.func @single(
func.func @single(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %e : tensor<4x8xf32>
  %e = fusion.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %e : tensor<4x8xf32>
}
