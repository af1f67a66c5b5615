// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s

// Fusion ops are pure: ones whose result is unused disappear, the live chain stays.

// CHECK-LABEL: func.func @dead(
func.func @dead(%a: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NOT: fusion.exp
  // CHECK-NOT: fusion.linear
  // CHECK-NOT: fusion.sum
  // CHECK:      %live = fusion.relu %a : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %live : tensor<4x8xf32>
  %dead0 = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %dead1 = fusion.linear %dead0, %w : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %dead2 = fusion.sum %dead1 dims = [1] : tensor<4x16xf32> -> tensor<4xf32>
  %live = fusion.relu %a : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %live : tensor<4x8xf32>
}

// A resharding fusion.set is pure too (its communication is made explicit only by lowering).
// CHECK-LABEL: func.func @dead_set(
func.func @dead_set(%a: tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>>) {
  // CHECK-NEXT: func.return
  %0 = fusion.set %a : tensor<2x8xf32, #fusion.parallel<[didx, serial], mesh = [0, 1]>> -> tensor<2x8xf32>
  func.return
}
