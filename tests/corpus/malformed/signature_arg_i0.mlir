// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xi0>: element type i0 is not supported (the runtime runs }}
func.func @main(%x: tensor<4xi0>) {
  func.return
}
