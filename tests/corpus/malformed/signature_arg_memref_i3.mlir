// expected-error@+1 {{'func.func' op argument #0 of @main has type memref<4xi3>: element type i3 is not supported (the runtime runs }}
func.func @main(%x: memref<4xi3>) {
  func.return
}
