!t = tensor<4xi3>
// expected-error@+1 {{'func.func' op argument #0 of @main has type tensor<4xi3>: element type i3 is not supported (the runtime runs }}
func.func @main(%x: !t) {
  func.return
}
