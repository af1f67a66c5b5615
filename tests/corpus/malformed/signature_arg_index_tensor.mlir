// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xindex>: element type index is not supported (the runtime}}
func.func @main(%x: tensor<4xindex>) {
  func.return
}
