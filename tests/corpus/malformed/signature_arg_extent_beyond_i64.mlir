// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<18446744073709551615xf32>: extent 18446744073709551615 is }}
func.func @main(%x: tensor<18446744073709551615xf32>) {
  func.return
}
