// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.concat: variadic operands, one after the other along `dim`.

// CHECK-LABEL: func.func @two(
func.func @two(%a: tensor<4x2xf32>, %b: tensor<4x6xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.concat %a, %b dim = 1 : tensor<4x2xf32>, tensor<4x6xf32> -> tensor<4x8xf32>
  %r = fusion.concat %a, %b dim = 1 : tensor<4x2xf32>, tensor<4x6xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @one(
func.func @one(%a: tensor<4xi1>) -> tensor<4xi1> {
  // CHECK-NEXT: %r = fusion.concat %a dim = 0 : tensor<4xi1> -> tensor<4xi1>
  %r = fusion.concat %a dim = 0 : tensor<4xi1> -> tensor<4xi1>
  // CHECK-NEXT: func.return %r : tensor<4xi1>
  func.return %r : tensor<4xi1>
}

// CHECK-LABEL: func.func @three_streamed(
func.func @three_streamed(%a: tensor<4x1xbf16>, %b: tensor<4x2xbf16>, %c: tensor<4x3xbf16>) -> tensor<4x6xbf16, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.concat %a, %b, %c dim = 1 : tensor<4x1xbf16>, tensor<4x2xbf16>, tensor<4x3xbf16> -> tensor<4x6xbf16, #fusion.parallel<[stream, serial]>>
  %r = fusion.concat %a, %b, %c dim = 1 : tensor<4x1xbf16>, tensor<4x2xbf16>, tensor<4x3xbf16> -> tensor<4x6xbf16, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x6xbf16, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x6xbf16, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @dynamic(
func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<2x8xf32>) -> tensor<?x8xf32> {
  // CHECK-NEXT: %r = fusion.concat %a, %b dim = 0 : tensor<?x8xf32>, tensor<2x8xf32> -> tensor<?x8xf32>
  %r = fusion.concat %a, %b dim = 0 : tensor<?x8xf32>, tensor<2x8xf32> -> tensor<?x8xf32>
  // CHECK-NEXT: func.return %r : tensor<?x8xf32>
  func.return %r : tensor<?x8xf32>
}
