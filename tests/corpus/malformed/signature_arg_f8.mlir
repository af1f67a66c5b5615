// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xf8E5M2>: element type f8E5M2 is not supported (the runti}}
func.func @main(%x: tensor<4xf8E5M2>) {
  func.return
}
