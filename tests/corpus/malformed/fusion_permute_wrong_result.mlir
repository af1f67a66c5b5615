func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.permute' op result shape 4x8 does not match the expected shape 8x4}}
  %r = fusion.permute %x perm = [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %x : tensor<4x8xf32>
}
