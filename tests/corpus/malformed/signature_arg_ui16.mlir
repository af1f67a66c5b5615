// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xui16>: element type ui16 is not supported (the runtime r}}
func.func @main(%x: tensor<4xui16>) {
  func.return
}
