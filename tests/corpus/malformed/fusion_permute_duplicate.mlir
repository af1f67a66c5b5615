func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.permute' op perm [0, 0] is not a permutation of the 2 operand axes}}
  %r = fusion.permute %x perm = [0, 0] : tensor<4x8xf32> -> tensor<4x4xf32>
  func.return %x : tensor<4x8xf32>
}
