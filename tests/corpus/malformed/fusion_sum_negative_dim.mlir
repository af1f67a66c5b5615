func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.sum' op dims entry -1 is out of range for rank 2}}
  %r = fusion.sum %x dims = [-1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %x : tensor<4x8xf32>
}
