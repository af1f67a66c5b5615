// expected-error@+1 {{'func.func' op argument #0 of @main has type memref<4xf32, 3 : i64>: memory space 3 : i64 is not supported (bu}}
func.func @main(%x: memref<4xf32, 3>) {
  func.return
}
