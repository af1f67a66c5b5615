func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.sub' op operands must have the same shape, got 4x8 and 8x16}}
  %r = fusion.sub %x, %m : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  func.return %x : tensor<4x8xf32>
}
