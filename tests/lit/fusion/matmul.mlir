// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.matmul: torch.matmul shapes (2-D, 1-D promotion, batched with broadcasting).

// CHECK-LABEL: func.func @matmul(
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // CHECK-NEXT: %r = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %r = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  // CHECK-NEXT: func.return %r : tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @matmul_vector(
func.func @matmul_vector(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %r = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  %r = fusion.matmul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  // CHECK-NEXT: func.return %r : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @matmul_dot(
func.func @matmul_dot(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<f32> {
  // CHECK-NEXT: %r = fusion.matmul %a, %b : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
  %r = fusion.matmul %a, %b : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
  // CHECK-NEXT: func.return %r : tensor<f32>
  func.return %r : tensor<f32>
}

// CHECK-LABEL: func.func @matmul_batched(
func.func @matmul_batched(%a: tensor<3x1x4x8xf32>, %b: tensor<5x8x16xf32>) -> tensor<3x5x4x16xf32> {
  // CHECK-NEXT: %r = fusion.matmul %a, %b : tensor<3x1x4x8xf32>, tensor<5x8x16xf32> -> tensor<3x5x4x16xf32>
  %r = fusion.matmul %a, %b : tensor<3x1x4x8xf32>, tensor<5x8x16xf32> -> tensor<3x5x4x16xf32>
  // CHECK-NEXT: func.return %r : tensor<3x5x4x16xf32>
  func.return %r : tensor<3x5x4x16xf32>
}

// CHECK-LABEL: func.func @matmul_stream(
func.func @matmul_stream(%a: tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, %b: tensor<256x128xf32>) -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>> {
  // CHECK-NEXT: %r = fusion.matmul %a, %b : tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<256x128xf32> -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  %r = fusion.matmul %a, %b : tensor<4x2x64x256xf32, #fusion.parallel<[serial, didx, serial, serial], mesh = [0, 1]>>, tensor<256x128xf32> -> tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
  func.return %r : tensor<4x2x64x128xf32, #fusion.parallel<[stream, serial, serial, serial]>>
}
