func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.linear' op linear contraction extents differ: input 4x8, weight 8x16}}
  %r = fusion.linear %x, %m : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  func.return %x : tensor<4x8xf32>
}
