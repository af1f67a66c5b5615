// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xvector<2xf32>>: element type vector<2xf32> is not suppor}}
func.func @main(%x: tensor<4xvector<2xf32>>) {
  func.return
}
