// expected-error@+1 {{'func.func' op argument #0 of @main has type memref<4xcomplex<f32>>: element type complex<f32> is not supporte}}
func.func @main(%x: memref<4xcomplex<f32>>) {
  func.return
}
