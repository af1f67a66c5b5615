func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{Expected ':'}}
  %r = fusion.relu %x tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %x : tensor<4x8xf32>
}
