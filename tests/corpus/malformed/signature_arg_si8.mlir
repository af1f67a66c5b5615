// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xsi8>: element type si8 is not supported (the runtime run}}
func.func @main(%x: tensor<4xsi8>) {
  func.return
}
