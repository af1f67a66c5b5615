// expected-error@+1 {{'func.func' op argument #0 of @main has type memref<4xf32, #fusion.parallel<[serial]>>: a #fusion.parallel enc}}
func.func @main(%x: memref<4xf32, #fusion.parallel<[serial]>>) {
  func.return
}
