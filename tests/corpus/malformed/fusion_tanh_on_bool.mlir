func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %i = fusion.cast %x : tensor<4x8xf32> -> tensor<4x8xi1>
  // expected-error@+1 {{'fusion.tanh' op fusion.tanh needs a floating-point element type, got i1}}
  %r = fusion.tanh %i : tensor<4x8xi1> -> tensor<4x8xi1>
  func.return %x : tensor<4x8xf32>
}
