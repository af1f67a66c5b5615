// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// A fusion op keeps a discardable attribute dictionary after its operands/properties.

// CHECK-LABEL: func.func @attr_unary(
func.func @attr_unary(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.relu %x {tag = "x"} : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.relu %x {tag = "x"} : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @attr_reduce(
func.func @attr_reduce(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.sum %x dims = [1] {tag = 1 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  %r = fusion.sum %x dims = [1] {tag = 1 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
