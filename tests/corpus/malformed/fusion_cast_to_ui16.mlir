func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.cast' op result has type tensor<4x8xui16>: element type ui16 is not supported (the runtime runs f16, bf1}}
  %r = fusion.cast %x : tensor<4x8xf32> -> tensor<4x8xui16>
  func.return %x : tensor<4x8xf32>
}
