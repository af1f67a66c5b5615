// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.sub: elementwise a - b; plain, stream-parallel result and dynamic extents.

// CHECK-LABEL: func.func @sub(
func.func @sub(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.sub %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.sub %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @sub_stream(
func.func @sub_stream(%a: tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, %b: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.sub %a, %b : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.sub %a, %b : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>, tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @sub_dynamic(
func.func @sub_dynamic(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK-NEXT: %r = fusion.sub %a, %b : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %r = fusion.sub %a, %b : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK-NEXT: func.return %r : tensor<?x8xf32>
  func.return %r : tensor<?x8xf32>
}
