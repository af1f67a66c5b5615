func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.relu' op result shape 8x4 does not match the expected shape 4x8}}
  %r = fusion.relu %x : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return %x : tensor<4x8xf32>
}
