// expected-error@+1 {{'func.func' op argument #0 of @main has type memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>: layout affine_}}
func.func @main(%x: memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>) {
  func.return
}
