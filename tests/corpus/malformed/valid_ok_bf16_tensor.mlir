// Accepted: valid at the boundary (no diagnostic expected).
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %r = fusion.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  func.return %x : tensor<4x8xf32>
}
