func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %h = fusion.cast %m : tensor<8x16xf32> -> tensor<8x16xf16>
  // expected-error@+1 {{'fusion.matmul' op operand #1 has element type f16, the result f32}}
  %r = fusion.matmul %x, %h : tensor<4x8xf32>, tensor<8x16xf16> -> tensor<4x16xf32>
  func.return %x : tensor<4x8xf32>
}
