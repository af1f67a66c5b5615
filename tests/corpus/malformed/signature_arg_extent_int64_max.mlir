// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<9223372036854775808xf32>: extent 9223372036854775808 is ou}}
func.func @main(%x: tensor<9223372036854775808xf32>) {
  func.return
}
