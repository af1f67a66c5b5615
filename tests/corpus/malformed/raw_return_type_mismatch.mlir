func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'func.return' op Expected arguments to have the same types as the function output types: expected [tensor<4x8x}}
  func.return %x, %x : tensor<4x8xf32>, tensor<4x8xf32>
}
