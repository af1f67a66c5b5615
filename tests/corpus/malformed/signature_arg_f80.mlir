// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xf80>: element type f80 is not supported (the runtime run}}
func.func @main(%x: tensor<4xf80>) {
  func.return
}
