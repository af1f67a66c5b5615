// expected-error@+1 {{at most one didx axis per tensor, found 2}}
func.func @main(%x: tensor<2x2xf32, #fusion.parallel<[didx, didx], mesh = [0, 1]>>) {
  func.return
}
