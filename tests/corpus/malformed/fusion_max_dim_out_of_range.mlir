func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.max' op dims entry 5 is out of range for rank 2}}
  %r = fusion.max %x dims = [5] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %x : tensor<4x8xf32>
}
