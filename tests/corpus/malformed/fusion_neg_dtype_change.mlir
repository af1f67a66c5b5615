func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.neg' op operand #0 has element type f32, the result i32}}
  %r = fusion.neg %x : tensor<4x8xf32> -> tensor<4x8xi32>
  func.return %x : tensor<4x8xf32>
}
