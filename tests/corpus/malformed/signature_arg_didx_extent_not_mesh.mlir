// expected-error@+1 {{'func.func' op argument #0 of @main: didx axis 0 has extent 4 but the mesh has 2 devices}}
func.func @main(%x: tensor<4xf32, #fusion.parallel<[didx], mesh = [0, 1]>>) {
  func.return
}
