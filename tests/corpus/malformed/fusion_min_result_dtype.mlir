func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.min' op operand #0 has element type f32, the result f64}}
  %r = fusion.min %x dims = [1] : tensor<4x8xf32> -> tensor<4xf64>
  func.return %x : tensor<4x8xf32>
}
