// RUN: hir-opt %s --split-input-file | filecheck %s
// RUN: hir-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// The generic syntax of fusion ops parses (array props also from the attribute dictionary) and
// prints in the custom syntax; --print-op-generic gives properties back as `<{..}>`.

// CHECK-LABEL: func.func @linear_generic(
// GENERIC-LABEL: sym_name = "linear_generic"
func.func @linear_generic(%x: tensor<4x8x2xf32>, %w: tensor<16x2xf32>) -> tensor<4x8x16xf32> {
  // CHECK-NEXT: %0 = fusion.linear %x, %w : tensor<4x8x2xf32>, tensor<16x2xf32> -> tensor<4x8x16xf32>
  // GENERIC: %0 = "fusion.linear"(%x, %w) : (tensor<4x8x2xf32>, tensor<16x2xf32>) -> tensor<4x8x16xf32>
  %0 = "fusion.linear"(%x, %w) : (tensor<4x8x2xf32>, tensor<16x2xf32>) -> tensor<4x8x16xf32>
  func.return %0 : tensor<4x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @linear_bias_generic(
func.func @linear_bias_generic(%x: tensor<4x2xf32>, %w: tensor<16x2xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK-NEXT: %0 = fusion.linear %x, %w, %b : tensor<4x2xf32>, tensor<16x2xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %0 = "fusion.linear"(%x, %w, %b) : (tensor<4x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %0 : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @sum_generic(
// GENERIC-LABEL: sym_name = "sum_generic"
func.func @sum_generic(%x: tensor<4x8x2xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %0 = fusion.sum %x dims = [2] : tensor<4x8x2xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // GENERIC: %0 = "fusion.sum"(%x) <{dims = array<i64: 2>}> : (tensor<4x8x2xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %0 = "fusion.sum"(%x) {dims = array<i64: 2>} : (tensor<4x8x2xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %0 : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// -----

// CHECK-LABEL: func.func @permute_generic(
func.func @permute_generic(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // CHECK-NEXT: %0 = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %0 = "fusion.permute"(%x) <{perm = array<i64: 1, 0>}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

// CHECK-LABEL: func.func @add_generic(
func.func @add_generic(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %0 = fusion.add %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %0 = "fusion.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
