// RUN: HIR_ROUNDTRIP
// RUN: HIR_GENERIC_ROUNDTRIP

// fusion.softmax (dim), fusion.layer_norm (trailing dims, optional weight and bias, eps) and
// fusion.rms_norm (trailing dims, optional weight, eps); fusion.mean is a reduction like fusion.sum.

// CHECK-LABEL: func.func @softmax(
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>> {
  // CHECK-NEXT: %r = fusion.softmax %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  %r = fusion.softmax %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
  func.return %r : tensor<4x8xf32, #fusion.parallel<[stream, serial]>>
}

// CHECK-LABEL: func.func @layer_norm(
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // CHECK-NEXT: %r = fusion.layer_norm %x, %w, %b dims = [2] eps = 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %r = fusion.layer_norm %x, %w, %b dims = [2] eps = 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<2x4x8xf32>
  func.return %r : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @layer_norm_weight(
func.func @layer_norm_weight(%x: tensor<2x4x8xbf16>, %w: tensor<4x8xbf16>) -> tensor<2x4x8xbf16> {
  // CHECK-NEXT: %r = fusion.layer_norm %x, %w dims = [1, 2] eps = 1.000000e-06 : tensor<2x4x8xbf16>, tensor<4x8xbf16> -> tensor<2x4x8xbf16>
  %r = fusion.layer_norm %x, %w dims = [1, 2] eps = 1.000000e-06 : tensor<2x4x8xbf16>, tensor<4x8xbf16> -> tensor<2x4x8xbf16>
  // CHECK-NEXT: func.return %r : tensor<2x4x8xbf16>
  func.return %r : tensor<2x4x8xbf16>
}

// CHECK-LABEL: func.func @layer_norm_plain(
func.func @layer_norm_plain(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK-NEXT: %r = fusion.layer_norm %x dims = [1] eps = 0.000000e+00 : tensor<?x8xf32> -> tensor<?x8xf32>
  %r = fusion.layer_norm %x dims = [1] eps = 0.000000e+00 : tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK-NEXT: func.return %r : tensor<?x8xf32>
  func.return %r : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @rms_norm(
func.func @rms_norm(%x: tensor<4x8xf16>, %w: tensor<8xf16>) -> tensor<4x8xf16> {
  // CHECK-NEXT: %r = fusion.rms_norm %x, %w dims = [1] eps = 1.000000e-06 : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  %r = fusion.rms_norm %x, %w dims = [1] eps = 1.000000e-06 : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  // CHECK-NEXT: func.return %r : tensor<4x8xf16>
  func.return %r : tensor<4x8xf16>
}

// CHECK-LABEL: func.func @rms_norm_plain(
func.func @rms_norm_plain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %r = fusion.rms_norm %x dims = [1] eps = 1.000000e-06 : tensor<4x8xf32> -> tensor<4x8xf32>
  %r = fusion.rms_norm %x dims = [1] eps = 1.000000e-06 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: func.return %r : tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @mean(
func.func @mean(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  // CHECK-NEXT: %r = fusion.mean %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
  %r = fusion.mean %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
  // CHECK-NEXT: func.return %r : tensor<8xf32>
  func.return %r : tensor<8xf32>
}
