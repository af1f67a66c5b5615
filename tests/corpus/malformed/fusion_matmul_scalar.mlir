func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %s = fusion.sum %v dims = [0] : tensor<8xf32> -> tensor<f32>
  // expected-error@+1 {{'fusion.matmul' op matmul operands must have rank >= 1}}
  %r = fusion.matmul %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  func.return %x : tensor<4x8xf32>
}
