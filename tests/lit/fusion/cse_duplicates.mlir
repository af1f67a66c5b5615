// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s

// Identical fusion ops (same operands, properties and result type) merge; ops that differ in a
// property or in the result encoding do not.

// CHECK-LABEL: func.func @same(
func.func @same(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-COUNT-1: fusion.add
  // CHECK-NOT:     fusion.add
  // CHECK:         func.return %0, %0 : tensor<4x8xf32>, tensor<4x8xf32>
  %0 = fusion.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = fusion.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @chains(
func.func @chains(%a: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK-NEXT: %0 = fusion.exp %a
  // CHECK-NEXT: %1 = fusion.sum %0 dims = [1]
  // CHECK-NEXT: func.return %1, %1
  %0 = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = fusion.sum %0 dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %2 = fusion.exp %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = fusion.sum %2 dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %1, %3 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @different(
func.func @different(%a: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>>) {
  // CHECK-COUNT-2: fusion.sum
  // CHECK-COUNT-2: fusion.set
  %0 = fusion.sum %a dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %1 = fusion.sum %a dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
  %2 = fusion.set %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = fusion.set %a : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0, %1, %2, %3 : tensor<4xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}
