// expected-error@+1 {{'func.func' op argument #0 of @main has type memref<*xf32>: unranked types are not supported (the runtime need}}
func.func @main(%x: memref<*xf32>) {
  func.return
}
