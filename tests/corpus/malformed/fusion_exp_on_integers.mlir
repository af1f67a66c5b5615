func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %i = fusion.cast %x : tensor<4x8xf32> -> tensor<4x8xi32>
  // expected-error@+1 {{'fusion.exp' op fusion.exp needs a floating-point element type, got i32}}
  %r = fusion.exp %i : tensor<4x8xi32> -> tensor<4x8xi32>
  func.return %x : tensor<4x8xf32>
}
