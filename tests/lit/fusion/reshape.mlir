// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.reshape: the result type gives the shape (row-major); dynamic extents stay axes of their own.

// CHECK-LABEL: func.func @merge(
func.func @merge(%x: tensor<4x6x8xf32>) -> tensor<4x48xf32> {
  // CHECK-NEXT: %r = fusion.reshape %x : tensor<4x6x8xf32> -> tensor<4x48xf32>
  %r = fusion.reshape %x : tensor<4x6x8xf32> -> tensor<4x48xf32>
  // CHECK-NEXT: func.return %r : tensor<4x48xf32>
  func.return %r : tensor<4x48xf32>
}

// CHECK-LABEL: func.func @split_unsqueeze(
func.func @split_unsqueeze(%x: tensor<4x48xbf16>) -> tensor<4x1x6x8xbf16> {
  // CHECK-NEXT: %r = fusion.reshape %x : tensor<4x48xbf16> -> tensor<4x1x6x8xbf16>
  %r = fusion.reshape %x : tensor<4x48xbf16> -> tensor<4x1x6x8xbf16>
  // CHECK-NEXT: func.return %r : tensor<4x1x6x8xbf16>
  func.return %r : tensor<4x1x6x8xbf16>
}

// CHECK-LABEL: func.func @to_scalar(
func.func @to_scalar(%x: tensor<1x1xi64>) -> tensor<i64> {
  // CHECK-NEXT: %r = fusion.reshape %x : tensor<1x1xi64> -> tensor<i64>
  %r = fusion.reshape %x : tensor<1x1xi64> -> tensor<i64>
  // CHECK-NEXT: func.return %r : tensor<i64>
  func.return %r : tensor<i64>
}

// CHECK-LABEL: func.func @dynamic_kept(
func.func @dynamic_kept(%x: tensor<?x6x8xf32>) -> tensor<?x48xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.reshape %x : tensor<?x6x8xf32> -> tensor<?x48xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.reshape %x : tensor<?x6x8xf32> -> tensor<?x48xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<?x48xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<?x48xf32, #fusion.parallel<[stream, serial]>>
}
