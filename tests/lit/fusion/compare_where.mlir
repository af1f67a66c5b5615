// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.compare (as arith.cmpf/cmpi: the predicate first; the result is i1) and fusion.where.

// CHECK-LABEL: func.func @compare(
func.func @compare(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xi1> {
  // CHECK-NEXT: %eq = fusion.compare eq, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %eq = fusion.compare eq, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK-NEXT: %ne = fusion.compare ne, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %ne = fusion.compare ne, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK-NEXT: %lt = fusion.compare lt, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %lt = fusion.compare lt, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK-NEXT: %le = fusion.compare le, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %le = fusion.compare le, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK-NEXT: %gt = fusion.compare gt, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %gt = fusion.compare gt, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK-NEXT: %ge = fusion.compare ge, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %ge = fusion.compare ge, %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK-NEXT: func.return %ge : tensor<4x8xi1>
  func.return %ge : tensor<4x8xi1>
}

// CHECK-LABEL: func.func @compare_int(
func.func @compare_int(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi1, #fusion.parallel<[stream]>> {
  // CHECK-NEXT: %r = fusion.compare ge, %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1, #fusion.parallel<[stream]>>
  %r = fusion.compare ge, %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1, #fusion.parallel<[stream]>>
  // CHECK-NEXT: func.return %r : tensor<4xi1, #fusion.parallel<[stream]>>
  func.return %r : tensor<4xi1, #fusion.parallel<[stream]>>
}

// CHECK-LABEL: func.func @where(
func.func @where(%m: tensor<4x8xi1>, %a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  // CHECK-NEXT: %r = fusion.where %m, %a, %b : tensor<4x8xi1>, tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  %r = fusion.where %m, %a, %b : tensor<4x8xi1>, tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  // CHECK-NEXT: func.return %r : tensor<4x8xbf16>
  func.return %r : tensor<4x8xbf16>
}
