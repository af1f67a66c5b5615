func.func @main(%x: tensor<4xf32>) -> tensor<4xcomplex<f32>> {
  // expected-error@+1 {{'fusion.cast' op result has type tensor<4xcomplex<f32>>: element type complex<f32> is not supported (the runti}}
  %r = fusion.cast %x : tensor<4xf32> -> tensor<4xcomplex<f32>>
  func.return %r : tensor<4xcomplex<f32>>
}
