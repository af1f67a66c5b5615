// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.maximum: elementwise torch.maximum(a, b); plain, stream-parallel result and dynamic extents.

// CHECK-LABEL: func.func @maximum(
func.func @maximum(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.maximum %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.maximum %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @maximum_stream(
func.func @maximum_stream(%a: tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, %b: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.maximum %a, %b : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.maximum %a, %b : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @maximum_dynamic(
func.func @maximum_dynamic(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK-NEXT: %r = fusion.maximum %a, %b : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %r = fusion.maximum %a, %b : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK-NEXT: func.return %r : tensor<?x8xf32>
  func.return %r : tensor<?x8xf32>
}
