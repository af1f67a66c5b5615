// expected-error@+1 {{'func.func' op argument #0 of @main has type memref<4xf32, strided<[-1]>>: negative strides [-1] are not suppo}}
func.func @main(%x: memref<4xf32, strided<[-1]>>) {
  func.return
}
