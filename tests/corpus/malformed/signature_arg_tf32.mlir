// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xtf32>: element type tf32 is not supported (the runtime r}}
func.func @main(%x: tensor<4xtf32>) {
  func.return
}
