func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %v: tensor<8xf32>, %m: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'fusion.cast' op result has type tensor<4x8xcomplex<f32>>: element type complex<f32> is not supported (the run}}
  %r = fusion.cast %x : tensor<4x8xf32> -> tensor<4x8xcomplex<f32>>
  func.return %x : tensor<4x8xf32>
}
