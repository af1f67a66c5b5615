func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %w = fusion.permute %m perm = [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  // expected-error@+1 {{'fusion.linear' op linear bias must be a scalar or have shape 16, got 8}}
  %r = fusion.linear %x, %w, %v : tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32> -> tensor<4x16xf32>
  func.return %x : tensor<4x8xf32>
}
