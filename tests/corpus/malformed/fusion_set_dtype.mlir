func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.set' op operand #0 has element type f32, the result f16}}
  %r = fusion.set %x : tensor<4x8xf32> -> tensor<4x8xf16>
  func.return %x : tensor<4x8xf32>
}
